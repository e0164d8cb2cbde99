// Semantic checks of a task config, beyond what the schema can express.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/config_loader.h"
#include "core/device.h"
#include "core/dtype.h"

namespace tfm {
namespace {

// Collects every problem so a user fixes them all in one go.
class Problems {
 public:
  explicit Problems(const ConfigSources& sources) : sources_(sources) {}

  void Add(const std::string& field, const std::string& message) {
    problems_.push_back(absl::StrCat(sources_.Describe(field), ": ", field, ": ", message));
  }
  void RequirePositive(const std::string& field, double value) {
    if (!(value > 0)) Add(field, absl::StrCat("must be positive, got ", value));
  }
  void RequireNonNegative(const std::string& field, double value) {
    if (!(value >= 0)) Add(field, absl::StrCat("must be >= 0, got ", value));
  }
  void RequireProbability(const std::string& field, double value) {
    if (!(value >= 0 && value < 1)) Add(field, absl::StrCat("must be in [0, 1), got ", value));
  }

  absl::Status ToStatus() const {
    if (problems_.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrJoin(problems_, "\n"));
  }

 private:
  const ConfigSources& sources_;
  std::vector<std::string> problems_;
};

void CheckData(const config::DataConfig& data, Problems& problems) {
  const config::TokenizerConfig& tok = data.tokenizer();
  problems.RequirePositive("data.tokenizer.vocab_size", tok.vocab_size());
  if (!(tok.character_coverage() > 0 && tok.character_coverage() <= 1)) {
    problems.Add("data.tokenizer.character_coverage", "must be in (0, 1]");
  }
  const std::vector<std::pair<std::string, int>> ids = {
      {"pad_id", tok.pad_id()}, {"unk_id", tok.unk_id()},
      {"bos_id", tok.bos_id()}, {"eos_id", tok.eos_id()}};
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string field = "data.tokenizer." + ids[i].first;
    if (ids[i].second < 0 || ids[i].second >= tok.vocab_size()) {
      problems.Add(field, absl::StrCat("id ", ids[i].second, " is outside the vocabulary"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (ids[i].second == ids[j].second) {
        problems.Add(field, absl::StrCat("same id as ", ids[j].first));
      }
    }
  }
  const config::BatchingConfig& batching = data.batching();
  problems.RequirePositive("data.batching.max_source_tokens", batching.max_source_tokens());
  problems.RequirePositive("data.batching.max_target_tokens", batching.max_target_tokens());
  problems.RequirePositive("data.batching.min_length", batching.min_length());
  if (batching.max_length() < batching.min_length()) {
    problems.Add("data.batching.max_length", "must be >= min_length");
  }
  for (int i = 0; i < data.train_size(); ++i) {
    const config::CorpusConfig& corpus = data.train(i);
    if (corpus.format() == config::CorpusConfig::FORMAT_UNSPECIFIED) {
      problems.Add(absl::StrCat("data.train[", i, "].format"), "must be set");
    }
  }
}

void CheckModel(const config::ModelConfig& model, Problems& problems) {
  problems.RequirePositive("model.num_encoder_layers", model.num_encoder_layers());
  problems.RequirePositive("model.num_decoder_layers", model.num_decoder_layers());
  problems.RequirePositive("model.d_model", model.d_model());
  problems.RequirePositive("model.d_ff", model.d_ff());
  problems.RequirePositive("model.num_heads", model.num_heads());
  problems.RequirePositive("model.d_k", model.d_k());
  problems.RequirePositive("model.d_v", model.d_v());
  if (model.num_heads() > 0 && model.d_model() % model.num_heads() != 0) {
    problems.Add("model.num_heads", absl::StrCat("d_model ", model.d_model(),
                                                 " is not divisible by ", model.num_heads(),
                                                 " heads"));
  }
  problems.RequireProbability("model.dropout", model.dropout());
  problems.RequireProbability("model.attention_dropout", model.attention_dropout());
  problems.RequireProbability("model.relu_dropout", model.relu_dropout());
  problems.RequireProbability("model.label_smoothing", model.label_smoothing());
  problems.RequirePositive("model.layer_norm_epsilon", model.layer_norm_epsilon());
}

void CheckTrain(const config::TrainConfig& train, Problems& problems) {
  problems.RequireProbability("train.adam.beta1", train.adam().beta1());
  problems.RequireProbability("train.adam.beta2", train.adam().beta2());
  problems.RequirePositive("train.adam.epsilon", train.adam().epsilon());
  problems.RequirePositive("train.warmup_steps", train.warmup_steps());
  problems.RequirePositive("train.lr_scale", train.lr_scale());
  problems.RequirePositive("train.max_steps", train.max_steps());
  problems.RequireNonNegative("train.clip_norm", train.clip_norm());
  problems.RequirePositive("train.average_last_checkpoints", train.average_last_checkpoints());
  if (absl::StatusOr<Device> device = Device::Parse(train.device()); !device.ok()) {
    problems.Add("train.device", std::string(device.status().message()));
  }
  if (absl::StatusOr<DType> dtype = ParseDType(train.dtype()); !dtype.ok()) {
    problems.Add("train.dtype", std::string(dtype.status().message()));
  }
}

void CheckDecode(const config::DecodeConfig& decode, Problems& problems) {
  problems.RequirePositive("decode.beam_size", decode.beam_size());
  problems.RequireNonNegative("decode.length_penalty_alpha", decode.length_penalty_alpha());
  problems.RequireNonNegative("decode.max_length_offset", decode.max_length_offset());
  problems.RequirePositive("decode.batch_size", decode.batch_size());
  if (decode.strategy() == config::DecodeConfig::GREEDY && decode.beam_size() != 1 &&
      decode.has_beam_size()) {
    problems.Add("decode.beam_size", "greedy decoding uses no beam; leave beam_size unset");
  }
}

}  // namespace

absl::Status ValidateTaskConfig(const LoadedConfig& loaded) {
  const config::TaskConfig& config = loaded.config;
  Problems problems(loaded.sources);
  if (config.task().empty()) problems.Add("task", "must name a registered task");
  CheckData(config.data(), problems);
  CheckModel(config.model(), problems);
  CheckTrain(config.train(), problems);
  CheckDecode(config.decode(), problems);
  return problems.ToStatus();
}

}  // namespace tfm

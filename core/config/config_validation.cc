// Semantic checks of a task config, beyond what the schema can express:
// ValidateTaskConfig on any machine, CheckConfigRunsHere where it will run.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/config_loader.h"
#include "core/config/device_setting.h"
#include "core/config/training_dtype.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/paths.h"

namespace tfm {
namespace {

// Collects every problem so a user fixes them all in one go.
class Problems {
 public:
  explicit Problems(const ConfigSources& sources) : sources_(sources) {}

  void Add(const std::string& field, const std::string& message) {
    problems_.push_back(absl::StrCat(sources_.Describe(field), ": ", field, ": ", message));
  }
  // Where `field` was set: "file.pbtxt:7", or the --set.
  std::string Where(const std::string& field) const { return sources_.Describe(field); }
  void RequirePositive(const std::string& field, double value) {
    if (!(value > 0)) Add(field, absl::StrCat("must be positive, got ", value));
  }
  void RequireNonNegative(const std::string& field, double value) {
    if (!(value >= 0)) Add(field, absl::StrCat("must be >= 0, got ", value));
  }
  void RequireProbability(const std::string& field, double value) {
    if (!(value >= 0 && value < 1)) Add(field, absl::StrCat("must be in [0, 1), got ", value));
  }
  void RequireNonEmpty(const std::string& field, const std::string& value) {
    if (value.empty()) Add(field, "must not be empty");
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
  problems.RequireProbability("data.tokenizer.bpe_dropout", tok.bpe_dropout());
  if (tok.bpe_dropout() > 0 && tok.model_type() != config::TokenizerConfig::BPE) {
    problems.Add("data.tokenizer.bpe_dropout",
                 absl::StrCat("needs data.tokenizer.model_type BPE (",
                              problems.Where("data.tokenizer.model_type"),
                              " sets another); a unigram vocabulary has no merges to skip"));
  }
  const std::vector<std::pair<std::string, int>> ids = {
      {"pad_id", tok.pad_id()}, {"unk_id", tok.unk_id()},
      {"bos_id", tok.bos_id()}, {"eos_id", tok.eos_id()}};
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string field = "data.tokenizer." + ids[i].first;
    if (ids[i].second < 0 || ids[i].second >= tok.vocab_size()) {
      // Often the size was what changed: say where it was set.
      problems.Add(field, absl::StrCat("id ", ids[i].second, " is outside the vocabulary of ",
                                       tok.vocab_size(), " pieces (data.tokenizer.vocab_size, ",
                                       problems.Where("data.tokenizer.vocab_size"), ")"));
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
  problems.RequireNonNegative("data.batching.shuffle_buffer", batching.shuffle_buffer());
  problems.RequireNonNegative("data.batching.prefetch_batches", batching.prefetch_batches());
  if (batching.max_length() < batching.min_length()) {
    problems.Add("data.batching.max_length", "must be >= min_length");
  }
  for (int i = 0; i < data.train_size(); ++i) {
    const config::CorpusConfig& corpus = data.train(i);
    if (corpus.format() == config::CorpusConfig::FORMAT_UNSPECIFIED) {
      problems.Add(absl::StrCat("data.train[", i, "].format"), "must be set");
    }
  }
  // The trainer writes the tokenizer, checkpoints and outputs under it.
  problems.RequireNonEmpty("data.work_dir", data.work_dir());
  problems.RequireNonEmpty("data.tokenizer.model_path", tok.model_path());
}

void CheckModel(const config::ModelConfig& model, Problems& problems) {
  problems.RequirePositive("model.num_encoder_layers", model.num_encoder_layers());
  problems.RequirePositive("model.num_decoder_layers", model.num_decoder_layers());
  problems.RequirePositive("model.d_model", model.d_model());
  problems.RequirePositive("model.d_ff", model.d_ff());
  problems.RequirePositive("model.num_heads", model.num_heads());
  problems.RequirePositive("model.d_k", model.d_k());
  problems.RequirePositive("model.d_v", model.d_v());
  // Multi-head attention splits d_model across the heads (paper, 3.2.2:
  // d_k = d_v = d_model / h): the layers project d_model to num_heads * d_k
  // and concatenate num_heads * d_v back to d_model, with no other width.
  if (model.num_heads() > 0 && model.d_model() % model.num_heads() != 0) {
    problems.Add("model.num_heads", absl::StrCat("d_model ", model.d_model(),
                                                 " is not divisible by ", model.num_heads(),
                                                 " heads"));
  } else if (model.num_heads() > 0) {
    const int per_head = model.d_model() / model.num_heads();
    for (const auto& [field, value] :
         {std::pair<std::string, int>{"model.d_k", model.d_k()}, {"model.d_v", model.d_v()}}) {
      if (value != per_head) {
        problems.Add(field, absl::StrCat(value, " must be d_model / num_heads = ", model.d_model(),
                                         " / ", model.num_heads(), " = ", per_head));
      }
    }
  }
  problems.RequireProbability("model.dropout", model.dropout());
  problems.RequireProbability("model.attention_dropout", model.attention_dropout());
  problems.RequireProbability("model.relu_dropout", model.relu_dropout());
  problems.RequireProbability("model.label_smoothing", model.label_smoothing());
  problems.RequirePositive("model.layer_norm_epsilon", model.layer_norm_epsilon());
}

// A learned position table has a row per position: every training pair
// (up to data.batching.max_length tokens a side, eos included) must fit it,
// or training stops at the first long batch.
void CheckPositions(const config::TaskConfig& config, Problems& problems) {
  const config::ModelConfig& model = config.model();
  if (model.positional_encoding() != config::ModelConfig::LEARNED) return;
  const int max_length = config.data().batching().max_length();
  if (model.max_positions() < max_length) {
    problems.Add("model.max_positions",
                 absl::StrCat(model.max_positions(), " rows of the LEARNED position tables "
                              "cannot hold the training pairs data.batching.max_length = ",
                              max_length, " allows (at least ", max_length, ")"));
  }
}

// Whether `scale` is 2^k within f32's normal range (so is 1 / scale):
// multiplying f32 gradients by it, and by its inverse, is then exact.
bool IsPowerOfTwoScale(double scale) {
  if (!(scale > 0) || !std::isfinite(scale)) return false;
  int exponent = 0;
  const double mantissa = std::frexp(scale, &exponent);  // 0.5 * 2^exponent.
  return mantissa == 0.5 && exponent - 1 >= -126 && exponent - 1 <= 127;
}

void CheckLossScaling(const config::TrainConfig& train, Problems& problems) {
  const std::string& mode = train.loss_scaling();
  if (mode != "auto" && mode != "dynamic" && mode != "off") {
    problems.Add("train.loss_scaling",
                 absl::StrCat("\"", mode, "\" is not \"auto\", \"dynamic\" or \"off\""));
  }
  if (!IsPowerOfTwoScale(train.initial_loss_scale())) {
    problems.Add("train.initial_loss_scale",
                 absl::StrCat("must be a power of two (such as 128, fairseq's default), so that "
                              "scaling the loss and unscaling the gradients are exact; got ",
                              train.initial_loss_scale()));
  }
  problems.RequirePositive("train.loss_scale_window", train.loss_scale_window());
  problems.RequirePositive("train.min_loss_scale", train.min_loss_scale());
  if (train.min_loss_scale() > train.initial_loss_scale()) {
    problems.Add("train.min_loss_scale",
                 absl::StrCat(train.min_loss_scale(), " exceeds train.initial_loss_scale ",
                              train.initial_loss_scale()));
  }
}

void CheckTrain(const config::TrainConfig& train, Problems& problems) {
  problems.RequireProbability("train.adam.beta1", train.adam().beta1());
  problems.RequireProbability("train.adam.beta2", train.adam().beta2());
  problems.RequirePositive("train.adam.epsilon", train.adam().epsilon());
  problems.RequireNonNegative("train.adam.weight_decay", train.adam().weight_decay());
  problems.RequirePositive("train.warmup_steps", train.warmup_steps());
  problems.RequirePositive("train.lr_scale", train.lr_scale());
  problems.RequirePositive("train.max_steps", train.max_steps());
  problems.RequireNonNegative("train.clip_norm", train.clip_norm());
  problems.RequirePositive("train.average_last_checkpoints", train.average_last_checkpoints());
  problems.RequireNonNegative("train.checkpoint_every_minutes", train.checkpoint_every_minutes());
  problems.RequireNonNegative("train.checkpoint_every_steps", train.checkpoint_every_steps());
  problems.RequirePositive("train.log_every_steps", train.log_every_steps());
  problems.RequirePositive("train.update_freq", train.update_freq());
  problems.RequireNonNegative("train.validate_every_minutes", train.validate_every_minutes());
  problems.RequireNonNegative("train.patience", train.patience());
  problems.RequireNonNegative("train.keep_last_checkpoints", train.keep_last_checkpoints());
  problems.RequireNonNegative("train.keep_best_checkpoints", train.keep_best_checkpoints());
  problems.RequireNonNegative("train.validate_every_steps", train.validate_every_steps());
  problems.RequireNonNegative("train.validate_bleu_sentences", train.validate_bleu_sentences());
  problems.RequireNonEmpty("train.best_checkpoint_metric", train.best_checkpoint_metric());
  problems.RequireProbability("train.cooldown_fraction", train.cooldown_fraction());
  CheckLossScaling(train, problems);
  if (train.average_last_checkpoints() > 1 && train.checkpoint_every_minutes() == 0 &&
      train.checkpoint_every_steps() == 0) {
    problems.Add("train.average_last_checkpoints",
                 absl::StrCat("averages the last ", train.average_last_checkpoints(),
                              " checkpoints, but checkpoint_every_minutes and "
                              "checkpoint_every_steps are both 0, so none are written"));
  }
  if (train.keep_best_checkpoints() > 0 && train.validate_every_steps() == 0 &&
      train.validate_every_minutes() == 0) {
    problems.Add("train.keep_best_checkpoints",
                 absl::StrCat("keeps the ", train.keep_best_checkpoints(),
                              " best validated checkpoints, but validate_every_steps and "
                              "validate_every_minutes are both 0, so none is validated"));
  }
  const absl::Status device_syntax = CheckDeviceSyntax(train.device());
  if (!device_syntax.ok()) problems.Add("train.device", std::string(device_syntax.message()));
  // "auto" may become either device type: the dtype must suit both.
  std::vector<DeviceType> device_types = {DeviceType::kCPU, DeviceType::kCUDA};
  if (absl::StatusOr<Device> device = Device::Parse(train.device()); device.ok()) {
    device_types = {device->type};
  }
  absl::StatusOr<DType> dtype = ParseDType(train.dtype());
  if (!dtype.ok()) {
    problems.Add("train.dtype", std::string(dtype.status().message()));
  } else if (device_syntax.ok()) {
    for (const DeviceType type : device_types) {
      if (CanTrainIn(type, *dtype)) continue;
      problems.Add("train.dtype", absl::StrCat(train.dtype(), " is not supported for training on ",
                                               train.device(), ": ", TrainingDTypesOn(type)));
      break;
    }
  }
}

void CheckDecode(const config::DecodeConfig& decode, Problems& problems) {
  problems.RequirePositive("decode.beam_size", decode.beam_size());
  problems.RequireNonNegative("decode.length_penalty_alpha", decode.length_penalty_alpha());
  problems.RequireNonNegative("decode.max_length_offset", decode.max_length_offset());
  problems.RequirePositive("decode.batch_size", decode.batch_size());
  problems.RequirePositive("decode.nbest", decode.nbest());
  const int beam = decode.strategy() == config::DecodeConfig::GREEDY ? 1 : decode.beam_size();
  if (decode.nbest() > beam) {
    problems.Add("decode.nbest", absl::StrCat(decode.nbest(), " exceeds the ", beam,
                                              " hypotheses the search keeps"));
  }
  problems.RequireNonNegative("decode.max_tokens", decode.max_tokens());
  problems.RequirePositive("decode.read_lines", decode.read_lines());
  if (decode.inter_threads() < 1) {
    problems.Add("decode.inter_threads",
                 absl::StrCat(decode.inter_threads(), ": at least 1 batch at a time"));
  }
  problems.RequireNonNegative("decode.shortlist_frequent", decode.shortlist_frequent());
  problems.RequireNonNegative("decode.shortlist_best", decode.shortlist_best());
  if (!decode.shortlist().empty() && decode.shortlist_frequent() == 0 &&
      decode.shortlist_best() == 0) {
    problems.Add("decode.shortlist_best",
                 "and decode.shortlist_frequent are both 0: the shortlist would leave every "
                 "step only eos, so every translation would be empty");
  }
  if (absl::Status syntax = CheckDeviceSyntax(decode.device()); !syntax.ok()) {
    problems.Add("decode.device", std::string(syntax.message()));
  }
  // Which dtypes have kernels is the decoding command's check (it asks the
  // kernel registry on the device it resolved); here only the name.
  // Decoding computes in a float type; the integer dtypes ParseDType knows
  // are not choices here.
  if (absl::StatusOr<DType> dtype = ParseDType(decode.dtype());
      !dtype.ok() || (*dtype != DType::kF32 && *dtype != DType::kBF16 && *dtype != DType::kF16)) {
    problems.Add("decode.dtype", absl::StrCat("'", decode.dtype(), "': expected f32, bf16 or f16"));
  }
  if (decode.kv_cache_dtype() != "auto" && decode.kv_cache_dtype() != "f32" &&
      decode.kv_cache_dtype() != "f16") {
    problems.Add("decode.kv_cache_dtype",
                 absl::StrCat("'", decode.kv_cache_dtype(), "': expected auto, f32 or f16"));
  }
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
  CheckPositions(config, problems);
  CheckTrain(config.train(), problems);
  CheckDecode(config.decode(), problems);
  return problems.ToStatus();
}

namespace {

// The GPU named by train.device or decode.device (the main job decodes on
// it) must exist in this process ("auto" falls back to the CPU).
void CheckDeviceIsHere(const std::string& field, const std::string& setting, Problems& problems) {
  // Syntax errors are ValidateTaskConfig's.
  if (!CheckDeviceSyntax(setting).ok()) return;
  absl::StatusOr<Device> device = ResolveDevice(setting);
  if (!device.ok()) problems.Add(field, std::string(device.status().message()));
}

// The work directory must exist or be creatable: its nearest existing
// ancestor must be a directory this process can write into.
void CheckWorkDirIsWritable(const config::DataConfig& data, Problems& problems) {
  if (data.work_dir().empty()) return;  // ValidateTaskConfig's.
  std::error_code error;
  std::filesystem::path path =
      std::filesystem::absolute(ResolveDataPath(data.work_dir()), error);
  while (!std::filesystem::exists(path, error) && path.has_parent_path() &&
         path.parent_path() != path) {
    path = path.parent_path();
  }
  if (!std::filesystem::is_directory(path, error)) {
    problems.Add("data.work_dir", absl::StrCat(path.string(), " is not a directory"));
  } else if (access(path.c_str(), W_OK | X_OK) != 0) {
    problems.Add("data.work_dir", absl::StrCat("cannot create or write ", data.work_dir(),
                                               ": ", path.string(), ": ", std::strerror(errno)));
  }
}

}  // namespace

absl::Status CheckConfigRunsHere(const LoadedConfig& loaded, bool check_devices) {
  Problems problems(loaded.sources);
  const config::TaskConfig& config = loaded.config;
  if (check_devices) {
    CheckDeviceIsHere("train.device", config.train().device(), problems);
    // --device sets both: one message for one missing GPU.
    if (config.decode().device() != config.train().device()) {
      CheckDeviceIsHere("decode.device", config.decode().device(), problems);
    }
  }
  CheckWorkDirIsWritable(loaded.config.data(), problems);
  // Read only when the main job decodes its test set, after training: a
  // wrong path would otherwise fail hours in.
  if (const std::string& shortlist = config.decode().shortlist(); !shortlist.empty()) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(shortlist, error)) {
      problems.Add("decode.shortlist", absl::StrCat(shortlist, ": no such file (the `shortlist` "
                                                    "command writes one; a relative path is "
                                                    "from the working directory)"));
    }
  }
  return problems.ToStatus();
}

}  // namespace tfm

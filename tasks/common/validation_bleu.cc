#include "tasks/common/validation_bleu.h"

#include <string>
#include <vector>

#include "core/incremental_model.h"
#include "core/status_macros.h"
#include "runtime/train/training_data.h"
#include "tasks/common/seq2seq_decoding.h"

namespace tfm {

namespace {

absl::StatusOr<ValidationScorer> MakeScorer(const CorpusMetric& metric,
                                            const DecodingHooks& hooks,
                                            const config::TaskConfig& config,
                                            TrainableModel& model, const Tokenizer& tokenizer) {
  ValidationScorer scorer;
  scorer.name = metric.name;
  const int sentences = config.train().validate_bleu_sentences();
  if (sentences <= 0 || config.data().valid().empty()) return scorer;
  auto* decoder = dynamic_cast<IncrementalModel*>(&model);
  if (decoder == nullptr) {
    return absl::InvalidArgumentError(
        "train.validate_bleu_sentences: the model cannot decode (it is no IncrementalModel); "
        "set it to 0");
  }
  // Read once: the same sentences at every validation, so scores compare.
  std::vector<std::string> sources, references;
  TFM_RETURN_IF_ERROR(
      ReadCorpusPairs(config.data().valid(), "data.valid", sentences, &sources, &references));
  if (sources.empty()) return scorer;
  config::DecodeConfig decode = config.decode();
  decode.set_strategy(config::DecodeConfig::GREEDY);
  decode.clear_beam_size();
  decode.set_nbest(1);
  scorer.score = [decoder, &tokenizer, config, decode, metric, hooks, sources = std::move(sources),
                  references =
                      std::move(references)](const TrainProgress&) -> absl::StatusOr<double> {
    // Lines the model cannot take (over max_length) come back empty and
    // count as such, silently: the same ones at every validation.
    TFM_ASSIGN_OR_RETURN(
        const std::vector<std::string> hypotheses,
        DecodeLines(*decoder, tokenizer, config, decode, sources, "data.valid", nullptr, hooks));
    TFM_ASSIGN_OR_RETURN(const CorpusScore score, metric.score(hypotheses, references));
    return score.value;
  };
  return scorer;
}

}  // namespace

ValidationScorerFactory MakeValidationScorer(CorpusMetric metric, DecodingHooks hooks) {
  return [metric = std::move(metric), hooks = std::move(hooks)](
             const config::TaskConfig& config, TrainableModel& model,
             const Tokenizer& tokenizer) { return MakeScorer(metric, hooks, config, model, tokenizer); };
}

absl::StatusOr<ValidationScorer> MakeValidationBleu(const config::TaskConfig& config,
                                                    TrainableModel& model,
                                                    const Tokenizer& tokenizer) {
  return MakeScorer(BleuMetric(), DecodingHooks{}, config, model, tokenizer);
}

}  // namespace tfm

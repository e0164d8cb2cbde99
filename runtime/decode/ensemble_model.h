// Several models decoding as one (an ensemble of independently trained
// runs, as fairseq's --path a:b and Marian's --models give): every member
// encodes the batch and steps its own caches, and each step's distribution
// is the members' combined (ops/ensemble_combine). Searches see one
// IncrementalModel, so beam and greedy search, constraints and n-best lists
// work unchanged. When every member keeps its step's log-probabilities where
// it computed them (StepLogProbs: a Transformer without a shortlist), the
// ensemble combines and ranks them there too (StepTopK): a GPU ensemble then
// brings back each row's best tokens, not every member's distribution.
//
// The members must share one vocabulary (the same ids mean the same pieces);
// the caller checks that (tasks/common/trained_model.cc compares the
// SentencePiece models byte for byte).
#ifndef TFM_RUNTIME_DECODE_ENSEMBLE_MODEL_H_
#define TFM_RUNTIME_DECODE_ENSEMBLE_MODEL_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/incremental_model.h"

namespace tfm {

enum class EnsembleCombination {
  // log((1/K) sum_k p_k): the mean of the members' probabilities (fairseq).
  // A proper distribution; a token one member rules out keeps the others'.
  kProbabilityMean,
  // (1/K) sum_k log p_k: the mean of the log-probabilities (Marian, with
  // equal weights), the log of an unnormalised geometric mean: a token any
  // member finds unlikely is penalised hard.
  kLogProbabilityMean,
};

class EnsembleModel : public IncrementalModel {
 public:
  // `members` (at least one, not owned, outliving this) must report the same
  // vocabulary size and special ids; Create says which member differs.
  static absl::StatusOr<std::unique_ptr<EnsembleModel>> Create(
      std::vector<IncrementalModel*> members, EnsembleCombination combination);

  int size() const { return static_cast<int>(members_.size()); }

  DecodingVocabulary vocabulary() const override { return members_.front()->vocabulary(); }
  void BeginSearch() override;
  void EndSearch() override;
  // When every member may.
  bool SearchesBatchesSideBySide() const override;
  absl::StatusOr<std::unique_ptr<DecoderState>> Start(const SourceBatch& sources,
                                                      int rows_per_sentence,
                                                      int max_steps) override;
  absl::StatusOr<Tensor> Step(DecoderState& state, absl::Span<const int> last_tokens) override;
  // When every member keeps its step where it computed it (StepLogProbs)
  // and there are at most kMaxEnsembleMembersCuda of them.
  bool HasStepTopK() const override;
  absl::StatusOr<StepTopTokens> StepTopK(DecoderState& state, absl::Span<const int> last_tokens,
                                         int count, int forbidden_token,
                                         absl::Span<const uint32_t> allowed) override;
  absl::Status Reorder(DecoderState& state, absl::Span<const int> rows,
                       int rows_per_sentence) override;

 private:
  EnsembleModel(std::vector<IncrementalModel*> members, EnsembleCombination combination)
      : members_(std::move(members)), combination_(combination) {}

  // The members' step outputs (each member's Step, or with `on_device` its
  // StepLogProbs) combined.
  absl::StatusOr<Tensor> CombinedStep(DecoderState& state, absl::Span<const int> last_tokens,
                                      bool on_device);

  std::vector<IncrementalModel*> members_;
  EnsembleCombination combination_;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_DECODE_ENSEMBLE_MODEL_H_

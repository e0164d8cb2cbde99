#include "runtime/decode/ensemble_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "ops/ensemble_combine/ensemble_combine.h"
#include "ops/row_top_k/row_top_k.h"

namespace tfm {
namespace {

// One state per member, each made by that member.
class EnsembleState : public DecoderState {
 public:
  int rows() const override { return members.front()->rows(); }
  std::vector<std::unique_ptr<DecoderState>> members;
  std::vector<Tensor> outputs;  // The members' last step, reused to avoid reallocating the vector.
};

}  // namespace

absl::StatusOr<std::unique_ptr<EnsembleModel>> EnsembleModel::Create(
    std::vector<IncrementalModel*> members, EnsembleCombination combination) {
  if (members.empty()) return absl::InvalidArgumentError("an ensemble needs at least one model");
  const DecodingVocabulary first = members.front()->vocabulary();
  for (size_t k = 1; k < members.size(); ++k) {
    const DecodingVocabulary other = members[k]->vocabulary();
    if (other.size != first.size || other.pad_id != first.pad_id || other.bos_id != first.bos_id ||
        other.eos_id != first.eos_id) {
      return absl::InvalidArgumentError(
          absl::StrCat("ensemble member ", k + 1, " has another vocabulary (", other.size,
                       " ids, pad ", other.pad_id, " bos ", other.bos_id, " eos ", other.eos_id,
                       ") than member 1 (", first.size, " ids, pad ", first.pad_id, " bos ",
                       first.bos_id, " eos ", first.eos_id, ")"));
    }
  }
  return std::unique_ptr<EnsembleModel>(new EnsembleModel(std::move(members), combination));
}

bool EnsembleModel::SearchesBatchesSideBySide() const {
  for (const IncrementalModel* member : members_) {
    if (!member->SearchesBatchesSideBySide()) return false;
  }
  return true;
}

void EnsembleModel::BeginSearch() {
  for (IncrementalModel* member : members_) member->BeginSearch();
}

void EnsembleModel::EndSearch() {
  for (IncrementalModel* member : members_) member->EndSearch();
}

absl::StatusOr<std::unique_ptr<DecoderState>> EnsembleModel::Start(const SourceBatch& sources,
                                                                   int rows_per_sentence,
                                                                   int max_steps) {
  auto state = std::make_unique<EnsembleState>();
  for (IncrementalModel* member : members_) {
    TFM_ASSIGN_OR_RETURN(std::unique_ptr<DecoderState> member_state,
                         member->Start(sources, rows_per_sentence, max_steps));
    state->members.push_back(std::move(member_state));
  }
  state->outputs.resize(members_.size());
  return std::unique_ptr<DecoderState>(std::move(state));
}

absl::StatusOr<Tensor> EnsembleModel::CombinedStep(DecoderState& base,
                                                   absl::Span<const int> last_tokens,
                                                   bool on_device) {
  EnsembleState& state = static_cast<EnsembleState&>(base);
  for (size_t k = 0; k < members_.size(); ++k) {
    TFM_ASSIGN_OR_RETURN(state.outputs[k],
                         on_device ? members_[k]->StepLogProbs(*state.members[k], last_tokens)
                                   : members_[k]->Step(*state.members[k], last_tokens));
    if (state.outputs[k].shape() != state.outputs[0].shape() ||
        state.outputs[k].device() != state.outputs[0].device()) {
      return absl::InternalError(absl::StrCat("ensemble member ", k + 1, " stepped ",
                                              state.outputs[k].DebugString(), ", member 1 ",
                                              state.outputs[0].DebugString()));
    }
  }
  if (members_.size() == 1) return std::move(state.outputs[0]);
  absl::StatusOr<Tensor> combined =
      EnsembleCombine(state.outputs, combination_ == EnsembleCombination::kProbabilityMean);
  for (Tensor& output : state.outputs) output = Tensor();  // Back to the members' allocators.
  return combined;
}

absl::StatusOr<Tensor> EnsembleModel::Step(DecoderState& base, absl::Span<const int> last_tokens) {
  return CombinedStep(base, last_tokens, /*on_device=*/false);
}

bool EnsembleModel::HasStepTopK() const {
  // More members than a device's combination takes: the host combines them
  // (Step), which has no such limit.
  if (static_cast<int>(members_.size()) > kMaxEnsembleMembersCuda) return false;
  for (const IncrementalModel* member : members_) {
    if (!member->HasStepLogProbs()) return false;
  }
  return true;
}

absl::StatusOr<StepTopTokens> EnsembleModel::StepTopK(DecoderState& base,
                                                      absl::Span<const int> last_tokens, int count,
                                                      int forbidden_token,
                                                      absl::Span<const uint32_t> allowed) {
  TFM_ASSIGN_OR_RETURN(const Tensor combined, CombinedStep(base, last_tokens, /*on_device=*/true));
  const int64_t rows = combined.dim(0);
  TFM_RETURN_IF_ERROR(CheckAllowedTokens(allowed, rows, combined.dim(1)));
  // Ranked where the members computed the step; a count past the CUDA
  // kernel's limit (a wide beam) on the host, which takes any.
  const Device device =
      RowTopKRunsOn(combined.device(), count) ? combined.device() : Device::Cpu();
  Tensor ranked_from = combined;
  if (device != combined.device()) {
    TFM_ASSIGN_OR_RETURN(ranked_from, CopyToDevice(combined, device));
  }
  Tensor allowed_bits;
  if (!allowed.empty()) {
    TFM_ASSIGN_OR_RETURN(allowed_bits, BitRowsOnDevice(allowed, rows, device));
  }
  TFM_ASSIGN_OR_RETURN(const RowTopK ranked,
                       RowTopKOf(ranked_from, count, forbidden_token, allowed_bits));
  TFM_ASSIGN_OR_RETURN(StepTopTokens top, StepTopTokensOf(ranked.values, ranked.columns));
  top.all_log_probs = [combined]() { return CopyToDevice(combined, Device::Cpu()); };
  return top;
}

absl::Status EnsembleModel::Reorder(DecoderState& base, absl::Span<const int> rows,
                                    int rows_per_sentence) {
  EnsembleState& state = static_cast<EnsembleState&>(base);
  for (size_t k = 0; k < members_.size(); ++k) {
    TFM_RETURN_IF_ERROR(members_[k]->Reorder(*state.members[k], rows, rows_per_sentence));
  }
  return absl::OkStatus();
}

}  // namespace tfm

#include "runtime/decode/ensemble_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

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

absl::StatusOr<Tensor> EnsembleModel::Step(DecoderState& base, absl::Span<const int> last_tokens) {
  EnsembleState& state = static_cast<EnsembleState&>(base);
  for (size_t k = 0; k < members_.size(); ++k) {
    TFM_ASSIGN_OR_RETURN(state.outputs[k], members_[k]->Step(*state.members[k], last_tokens));
    if (state.outputs[k].shape() != state.outputs[0].shape()) {
      return absl::InternalError(absl::StrCat("ensemble member ", k + 1, " stepped ",
                                              state.outputs[k].DebugString(), ", member 1 ",
                                              state.outputs[0].DebugString()));
    }
  }
  if (members_.size() == 1) return state.outputs[0];
  TFM_ASSIGN_OR_RETURN(Tensor combined, Tensor::Empty(state.outputs[0].shape(), DType::kF32));
  CombineLogProbabilities(state.outputs, combination_, &combined);
  for (Tensor& output : state.outputs) output = Tensor();  // Back to the members' allocators.
  return combined;
}

absl::Status EnsembleModel::Reorder(DecoderState& base, absl::Span<const int> rows,
                                    int rows_per_sentence) {
  EnsembleState& state = static_cast<EnsembleState&>(base);
  for (size_t k = 0; k < members_.size(); ++k) {
    TFM_RETURN_IF_ERROR(members_[k]->Reorder(*state.members[k], rows, rows_per_sentence));
  }
  return absl::OkStatus();
}

void CombineLogProbabilities(const std::vector<Tensor>& members, EnsembleCombination combination,
                             Tensor* combined) {
  const int64_t n = combined->num_elements();
  const size_t k_count = members.size();
  std::vector<const float*> inputs;
  for (const Tensor& member : members) inputs.push_back(member.data<float>());
  float* out = combined->data<float>();
  const float inverse_count = 1.0f / static_cast<float>(k_count);
  if (combination == EnsembleCombination::kLogProbabilityMean) {
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0;
      for (size_t k = 0; k < k_count; ++k) sum += inputs[k][i];
      out[i] = sum * inverse_count;
    }
    return;
  }
  // log((1/K) sum_k exp(l_k)) = m + log(sum_k exp(l_k - m)) - log K with m
  // the largest l_k, so that no exp overflows or every one underflows.
  const float log_count = std::log(static_cast<float>(k_count));
  constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    float largest = inputs[0][i];
    for (size_t k = 1; k < k_count; ++k) largest = std::max(largest, inputs[k][i]);
    if (largest == kMinusInfinity) {
      out[i] = kMinusInfinity;  // Every member rules the token out.
      continue;
    }
    float sum = 0;
    for (size_t k = 0; k < k_count; ++k) sum += std::exp(inputs[k][i] - largest);
    out[i] = largest + std::log(sum) - log_count;
  }
}

}  // namespace tfm

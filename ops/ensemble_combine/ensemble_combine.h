// ensemble_combine: an ensemble's step (runtime/decode/ensemble_model.h),
// its members' log-probabilities (f32 [rows, n] each, one shape, one
// device) combined elementwise into one [rows, n]:
//  - probability_mean: log((1/K) sum_k exp(l_k)), the log of the mean of
//    the members' probabilities (fairseq), computed as m + log(sum_k
//    exp(l_k - m)) - log K with m the largest l_k, so that no exp overflows
//    and a token every member rules out stays -infinity;
//  - otherwise (1/K) sum_k l_k, the mean of the log-probabilities (Marian).
// On the CPU and on CUDA, so that an ensemble on a GPU combines and ranks
// its step where the members computed it instead of copying each member's
// distribution to the host.
#ifndef TFM_OPS_ENSEMBLE_COMBINE_ENSEMBLE_COMBINE_H_
#define TFM_OPS_ENSEMBLE_COMBINE_ENSEMBLE_COMBINE_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace tfm {

// Members a CUDA launch combines (the kernel takes their pointers by value).
inline constexpr int kMaxEnsembleMembersCuda = 32;

absl::StatusOr<Tensor> EnsembleCombine(absl::Span<const Tensor> members, bool probability_mean);

}  // namespace tfm

#endif  // TFM_OPS_ENSEMBLE_COMBINE_ENSEMBLE_COMBINE_H_

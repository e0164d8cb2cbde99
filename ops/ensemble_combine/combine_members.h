// ensemble_combine's rule for one element (ensemble_combine.h), which the
// CPU kernel and the CUDA kernel share so that both combine alike: the
// members' values in order, member(k) for k < count. Plain C++ that nvcc
// compiles too (expf and logf: the host's libm, the device's within an ulp
// or two of it).
#ifndef TFM_OPS_ENSEMBLE_COMBINE_COMBINE_MEMBERS_H_
#define TFM_OPS_ENSEMBLE_COMBINE_COMBINE_MEMBERS_H_

#include <math.h>

#include "core/host_device.h"

namespace tfm {

// inverse_count = 1 / count and log_count = log(count), computed once by
// the caller.
template <typename Member>
TFM_HOST_DEVICE float CombineMembers(Member member, int count, bool probability_mean,
                                     float inverse_count, float log_count) {
  if (!probability_mean) {
    float sum = 0.0f;
    for (int k = 0; k < count; ++k) sum += member(k);
    return sum * inverse_count;
  }
  // log((1/K) sum_k exp(l_k)) = m + log(sum_k exp(l_k - m)) - log K with m
  // the largest l_k, so that no exp overflows or every one underflows. m
  // by std::max's rule (a NaN first member stays NaN; a later one is
  // passed over), on both devices.
  float largest = member(0);
  for (int k = 1; k < count; ++k) {
    const float l = member(k);
    if (largest < l) largest = l;
  }
  if (largest == -INFINITY) return largest;  // Every member rules the token out.
  float sum = 0.0f;
  for (int k = 0; k < count; ++k) sum += expf(member(k) - largest);
  return largest + logf(sum) - log_count;
}

}  // namespace tfm

#endif  // TFM_OPS_ENSEMBLE_COMBINE_COMBINE_MEMBERS_H_

// Launcher of ensemble_combine's CUDA kernel (plain C++: included by host
// code). Returns nullptr or the CUDA error text.
#ifndef TFM_OPS_ENSEMBLE_COMBINE_ENSEMBLE_COMBINE_CUDA_H_
#define TFM_OPS_ENSEMBLE_COMBINE_ENSEMBLE_COMBINE_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

// combined[i] from members[0..count)[i], i < n; count <= 32
// (kMaxEnsembleMembersCuda).
const char* LaunchEnsembleCombine(const float* const* members, int count, int64_t n,
                                  bool probability_mean, float* combined, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_ENSEMBLE_COMBINE_ENSEMBLE_COMBINE_CUDA_H_

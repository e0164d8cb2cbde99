// The status of a CUDA launch, for the host code that registers an op's
// CUDA kernels: the launchers of every op's .cu files return nullptr on
// success or a static message (they are plain C++ that nvcc compiles, so
// they do not build absl::Status themselves).
#ifndef TFM_OPS_CUDA_LAUNCH_STATUS_H_
#define TFM_OPS_CUDA_LAUNCH_STATUS_H_

#include "absl/status/status.h"
#include "core/op_registry.h"

namespace tfm {

// OK for nullptr, else InternalError naming the running op.
absl::Status CudaLaunchStatus(const KernelContext& context, const char* error);

}  // namespace tfm

#endif  // TFM_OPS_CUDA_LAUNCH_STATUS_H_

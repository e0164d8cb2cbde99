// cudnn_sdpa.h in builds without CUDA: cuDNN is never available.
#include "ops/attention/cudnn_sdpa.h"

namespace tfm {
namespace {

absl::Status Unavailable() {
  return absl::FailedPreconditionError("cuDNN SDPA: this binary was built without CUDA");
}

}  // namespace

absl::Status CudnnSdpaForward(const CudnnSdpaProblem&, const void*, const void*, const void*, void*,
                              float*, void*) {
  return Unavailable();
}

absl::Status CudnnSdpaBackward(const CudnnSdpaProblem&, const void*, const void*, const void*,
                               const void*, const float*, const void*, void*, void*, void*, void*) {
  return Unavailable();
}

bool CudnnSdpaAvailable() { return false; }

}  // namespace tfm

// Registers concat_rows' CUDA kernel (linked only in builds with CUDA): the
// copy engine's device-to-device copies, queued on the op's stream (no wait
// for the device; a CUDA graph captures them too).
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/add/add_cuda.h"
#include "ops/cuda_launch_status.h"

namespace tfm {
namespace {

absl::Status ConcatRowsCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, context.dtype()));
  char* to = static_cast<char*>(out->raw_data());
  for (int entry = 0; entry < context.list_size(); ++entry) {
    const Tensor& x = context.list_input(entry, 0);
    TFM_RETURN_IF_ERROR(CudaLaunchStatus(
        context, LaunchDeviceCopy(to, x.raw_data(), x.nbytes(), context.stream())));
    to += x.nbytes();
  }
  return absl::OkStatus();
}

TFM_REGISTER_KERNELS("concat_rows", DeviceType::kCUDA, ConcatRowsCuda, DType::kF32, DType::kF16,
                     DType::kBF16, DType::kI32, DType::kI64, DType::kI8);

}  // namespace
}  // namespace tfm

// Registers softmax's CUDA kernels (linked only in builds with CUDA): f32
// f16 and bf16 x (masks stay f32 or i32).
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/softmax/softmax_cuda.h"
#include "ops/softmax/softmax_kernel_args.h"

namespace tfm {
namespace {

// MaskRows' axes for the kernels, with extent-1 axes dropped and adjacent
// axes merged where the outer stride is the inner one's stride times its
// extent (both 0 included): a [b, 1, 1, t] or [t, t] mask against [b, h, t,
// t] scores needs two axes at most.
absl::StatusOr<SoftmaxCudaMask> CudaMask(const KernelContext& context) {
  SoftmaxCudaMask cuda_mask;
  if (context.num_inputs() < 2) return cuda_mask;
  const Tensor& mask = context.input(1);
  if (mask.dtype() == DType::kF32) {
    cuda_mask.additive = mask.data<float>();
  } else {
    cuda_mask.removing = mask.data<int32_t>();
  }
  const MaskRows rows(context.input(0).shape(), mask.shape());
  std::vector<int64_t> extents, strides;  // Innermost first.
  for (int axis = static_cast<int>(rows.extents().size()) - 1; axis >= 0; --axis) {
    const int64_t extent = rows.extents()[axis], stride = rows.strides()[axis];
    if (extent == 1) continue;
    if (!extents.empty() && stride == strides.back() * extents.back()) {
      extents.back() *= extent;
      continue;
    }
    extents.push_back(extent);
    strides.push_back(stride);
  }
  if (extents.size() > SoftmaxCudaMask::kMaxAxes) {
    return context.Error(absl::StrCat("the mask's broadcast needs ", extents.size(),
                                      " axes; the CUDA kernel takes at most ",
                                      SoftmaxCudaMask::kMaxAxes));
  }
  cuda_mask.num_axes = static_cast<int>(extents.size());
  for (int a = 0; a < cuda_mask.num_axes; ++a) {
    cuda_mask.extents[a] = extents[cuda_mask.num_axes - 1 - a];
    cuda_mask.strides[a] = strides[cuda_mask.num_axes - 1 - a];
  }
  return cuda_mask;
}

// Serves softmax (one input) and masked_softmax (x, mask).
template <typename T>
absl::Status SoftmaxCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), x.dtype()));
  if (x.num_elements() == 0) return absl::OkStatus();
  TFM_ASSIGN_OR_RETURN(const SoftmaxCudaMask mask, CudaMask(context));
  return CudaLaunchStatus(context, LaunchSoftmax<T>(x.data<T>(), mask, NumRows(x.shape()),
                                                    x.dim(-1), out->data<T>(), context.stream()));
}

template <typename T>
absl::Status LogSoftmaxCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), x.dtype()));
  return CudaLaunchStatus(context, LaunchLogSoftmax<T>(x.data<T>(), NumRows(x.shape()), x.dim(-1),
                                                       out->data<T>(), context.stream()));
}

template <typename T>
absl::Status SoftmaxBackwardCuda(KernelContext& context) {
  const Tensor& dout = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dout.shape(), dout.dtype()));
  return CudaLaunchStatus(
      context,
      LaunchSoftmaxBackward<T>(dout.data<T>(), context.input(1).data<T>(), NumRows(dout.shape()),
                               dout.dim(-1), dx->data<T>(), context.stream()));
}

TFM_REGISTER_TYPED_KERNELS("softmax", DeviceType::kCUDA, SoftmaxCuda, float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("masked_softmax", DeviceType::kCUDA, SoftmaxCuda, float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("log_softmax", DeviceType::kCUDA, LogSoftmaxCuda, float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("softmax_backward", DeviceType::kCUDA, SoftmaxBackwardCuda, float, Half,
                           BFloat16);

}  // namespace
}  // namespace tfm

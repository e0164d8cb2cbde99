// Registers multi_tensor_sum_of_squares' and scale_in_place's CUDA kernels (linked only
// in builds with CUDA): f32 and bf16 gradients.
#include <algorithm>
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/adam/grad_norm_cuda.h"
#include "ops/cuda_launch_status.h"

namespace tfm {
namespace {

template <typename T>
absl::Status MultiTensorSumOfSquaresCuda(KernelContext& context) {
  std::vector<SquaresCudaTensor> tensors;
  tensors.reserve(context.list_size());
  for (int entry = 0; entry < context.list_size(); ++entry) {
    const Tensor& x = context.list_input(entry, 0);
    tensors.push_back(SquaresCudaTensor{x.raw_data(), x.num_elements(), 0});
  }
  const int64_t chunks = SumOfSquaresChunks(tensors.data(), static_cast<int>(tensors.size()));
  // The list and the chunks' sums (doubles) in device memory, held as
  // 8-byte integers until the kernels on this stream have read them.
  static_assert(sizeof(SquaresCudaTensor) % 8 == 0, "the list is held in 8-byte words");
  constexpr int64_t kWordsPerTensor = sizeof(SquaresCudaTensor) / 8;
  const int64_t list_words = kWordsPerTensor * static_cast<int64_t>(tensors.size());
  TFM_ASSIGN_OR_RETURN(Tensor workspace,
                       Tensor::Empty({std::max<int64_t>(1, list_words + chunks)}, DType::kI64,
                                     context.device(), context.stream()));
  int64_t* words = workspace.data<int64_t>();
  TFM_ASSIGN_OR_RETURN(Tensor * sum, context.AllocateOutput(0, {}, DType::kF32));
  return CudaLaunchStatus(
      context, LaunchSumOfSquares<T>(tensors.data(), static_cast<int>(tensors.size()), chunks,
                                     reinterpret_cast<SquaresCudaTensor*>(words),
                                     reinterpret_cast<double*>(words + list_words),
                                     sum->data<float>(), context.stream()));
}

template <typename T>
absl::Status ScaleInPlaceCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(double factor, context.attrs().Get<double>("factor"));
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context,
      LaunchScaleInPlace<T>(context.in_place_input(0).data<T>(), context.input(0).num_elements(),
                            static_cast<float>(factor), context.stream())));
  context.SetOutput(0, context.input(0));
  return absl::OkStatus();
}

TFM_REGISTER_TYPED_KERNELS("multi_tensor_sum_of_squares", DeviceType::kCUDA,
                           MultiTensorSumOfSquaresCuda, float, BFloat16);
TFM_REGISTER_TYPED_KERNELS("scale_in_place", DeviceType::kCUDA, ScaleInPlaceCuda, float, BFloat16);

}  // namespace
}  // namespace tfm

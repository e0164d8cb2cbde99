// Registers add's CUDA kernels (linked only in builds with CUDA): f32, f16
// and bf16, computing in f32.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/add/add_cuda.h"
#include "ops/cuda_launch_status.h"

namespace tfm {
namespace {

template <typename T>
absl::Status AddCuda(KernelContext& context) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, a.shape(), a.dtype()));
  return CudaLaunchStatus(context,
                          LaunchAdd<T>(a.data<T>(), b.data<T>(), out->data<T>(), a.num_elements(),
                                       b.num_elements(), context.stream()));
}

// db: a copy of dout when the shapes match, else dout summed over b's
// broadcast axes (never dout itself: OpDef::in_place).
template <typename T>
absl::Status SumToShapeInto(KernelContext& context, const Tensor& dout, Tensor* db) {
  if (db->shape() == dout.shape()) {
    return CudaLaunchStatus(context, LaunchDeviceCopy(db->raw_data(), dout.raw_data(),
                                                      dout.nbytes(), context.stream()));
  }
  const int64_t cols = db->num_elements();
  const int64_t rows = cols == 0 ? 0 : dout.num_elements() / cols;
  Tensor scratch;
  const int64_t scratch_floats = SumRowsCudaScratch(rows, cols);
  if (scratch_floats > 0) {
    TFM_ASSIGN_OR_RETURN(
        scratch, Tensor::Empty({scratch_floats}, DType::kF32, context.device(), context.stream()));
  }
  return CudaLaunchStatus(
      context, LaunchSumRows<T>(dout.data<T>(), rows, cols,
                                scratch_floats > 0 ? scratch.data<float>() : nullptr, db->data<T>(),
                                context.stream()));
}

template <typename T>
absl::Status AddBackwardCuda(KernelContext& context) {
  const Tensor& dout = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * da, context.AllocateOutput(0, dout.shape(), dout.dtype()));
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context, LaunchDeviceCopy(da->raw_data(), dout.raw_data(), dout.nbytes(), context.stream())));
  TFM_ASSIGN_OR_RETURN(Tensor * db,
                       context.AllocateOutput(1, context.input(1).shape(), dout.dtype()));
  return SumToShapeInto<T>(context, dout, db);
}

template <typename T>
absl::Status SumToShapeCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(
      Tensor * db, context.AllocateOutput(0, context.input(1).shape(), context.input(0).dtype()));
  return SumToShapeInto<T>(context, context.input(0), db);
}

TFM_REGISTER_TYPED_KERNELS("add", DeviceType::kCUDA, AddCuda, float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("add_backward", DeviceType::kCUDA, AddBackwardCuda, float, Half,
                           BFloat16);
TFM_REGISTER_TYPED_KERNELS("sum_to_shape", DeviceType::kCUDA, SumToShapeCuda, float, Half,
                           BFloat16);

}  // namespace
}  // namespace tfm

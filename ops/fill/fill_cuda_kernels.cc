// Registers fill's CUDA kernels (linked only in builds with CUDA).
#include <cstring>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/fill/fill_cuda.h"

namespace tfm {
namespace {

// The bit pattern of `value` stored as `dtype` (in the low DTypeSize bytes).
uint64_t FillBitPattern(double value, DType dtype) {
  switch (dtype) {
    case DType::kF32: {
      const float f = static_cast<float>(value);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      return bits;
    }
    case DType::kF16:
      return Half(static_cast<float>(value)).bits;
    case DType::kBF16:
      return BFloat16(static_cast<float>(value)).bits;
    case DType::kI32:
      return static_cast<uint32_t>(static_cast<int32_t>(value));
    case DType::kI64:
      return static_cast<uint64_t>(static_cast<int64_t>(value));
    case DType::kI8:
      return static_cast<uint8_t>(static_cast<int8_t>(value));
  }
  return 0;
}

absl::Status FillCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                       context.attrs().Get<std::vector<int64_t>>("shape"));
  TFM_ASSIGN_OR_RETURN(double value, context.attrs().Get<double>("value"));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(
                                         0, Shape(shape.begin(), shape.end()), context.dtype()));
  return CudaLaunchStatus(
      context, LaunchFillPattern(out->raw_data(), out->num_elements(), DTypeSize(context.dtype()),
                                 FillBitPattern(value, context.dtype()), context.stream()));
}

TFM_REGISTER_KERNELS("fill", DeviceType::kCUDA, FillCuda, DType::kF32, DType::kF16, DType::kBF16,
                     DType::kI32, DType::kI64, DType::kI8);

}  // namespace
}  // namespace tfm

// The element types of the GEMM ops (matmul, linear, tied_projection),
// checked by each op's validation: f32 on every device, bf16 on CUDA, where
// cuBLASLt accumulates it in f32. All inputs of one call share the type.
#ifndef TFM_OPS_MATMUL_GEMM_DTYPES_H_
#define TFM_OPS_MATMUL_GEMM_DTYPES_H_

#include "absl/status/status.h"
#include "core/op_registry.h"

namespace tfm {

inline absl::Status ValidateGemmDTypes(const KernelContext& context) {
  const DType dtype = context.input(0).dtype();
  const bool supported =
      dtype == DType::kF32 || (dtype == DType::kBF16 && context.device().is_cuda());
  for (int i = 0; i < context.num_inputs(); ++i) {
    if (!supported || context.input(i).dtype() != dtype) {
      return context.Error("inputs must be all f32, or all bf16 on CUDA");
    }
  }
  return absl::OkStatus();
}

}  // namespace tfm

#endif  // TFM_OPS_MATMUL_GEMM_DTYPES_H_

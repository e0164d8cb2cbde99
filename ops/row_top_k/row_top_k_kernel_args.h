// What row_top_k's CPU and CUDA kernels both read from their context: the
// attributes (validated by the OpDef) and the outputs, allocated.
#ifndef TFM_OPS_ROW_TOP_K_ROW_TOP_K_KERNEL_ARGS_H_
#define TFM_OPS_ROW_TOP_K_ROW_TOP_K_KERNEL_ARGS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {

struct RowTopKArgs {
  int64_t count = 0;
  int64_t forbidden = -1;
  Tensor* values = nullptr;   // [rows, count] f32.
  Tensor* columns = nullptr;  // [rows, count] i32.
};

inline absl::StatusOr<RowTopKArgs> RowTopKArgsOf(KernelContext& context) {
  RowTopKArgs args;
  TFM_ASSIGN_OR_RETURN(args.count, context.attrs().Get<int64_t>("count"));
  TFM_ASSIGN_OR_RETURN(args.forbidden, context.attrs().Get<int64_t>("forbidden_column"));
  TFM_ASSIGN_OR_RETURN(args.values, context.AllocateOutput(0, DType::kF32));
  TFM_ASSIGN_OR_RETURN(args.columns, context.AllocateOutput(1, DType::kI32));
  return args;
}

}  // namespace tfm

#endif  // TFM_OPS_ROW_TOP_K_ROW_TOP_K_KERNEL_ARGS_H_

#include "ops/row_top_k/row_top_k.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/row_top_k/row_top_k_kernel_args.h"

namespace tfm {
namespace {

TFM_REGISTER_OP(OpDef{
    .name = "row_top_k",
    .inputs = {"x"},
    .outputs = {"values", "columns"},
    .attrs = {"count", "forbidden_column"},
    .doc = "each row's best count (value desc, column asc), skipping NaN, -inf and the "
           "forbidden column (< 0: none)",
    .validate = ValidateRowTopKArgs,
    .kernel_dtype_inputs = {0},
    .output_shapes = RowTopKOutputShapes,
});

TFM_REGISTER_OP(OpDef{
    .name = "row_top_k_allowed",
    .inputs = {"x", "allowed"},
    .outputs = {"values", "columns"},
    .attrs = {"count", "forbidden_column"},
    .doc = "row_top_k over the columns whose bit is set in the row's allowed bits "
           "(i32 [rows, ceil(n / 32)]: bit j % 32 of word j / 32)",
    .validate = ValidateRowTopKArgs,
    .kernel_dtype_inputs = {0},
    .output_shapes = RowTopKOutputShapes,
});

}  // namespace

absl::Status ValidateRowTopKArgs(const KernelContext& context) {
  const Tensor& x = context.input(0);
  if (x.rank() != 2) return context.Error("x must be a matrix [rows, n]");
  TFM_ASSIGN_OR_RETURN(int64_t count, context.attrs().Get<int64_t>("count"));
  if (count < 1 || !RowTopKRunsOn(context.device(), count)) {
    return context.Error(absl::StrCat("count ", count, " is outside [1, ", kMaxRowTopK,
                                      "] (any count >= 1 on the CPU)"));
  }
  TFM_ASSIGN_OR_RETURN(int64_t forbidden, context.attrs().Get<int64_t>("forbidden_column"));
  if (forbidden >= x.dim(1)) {
    return context.Error(absl::StrCat("forbidden column ", forbidden, " is past the ", x.dim(1),
                                      " columns"));
  }
  if (context.num_inputs() == 2) {
    const Tensor& allowed = context.input(1);
    const Shape expected{x.dim(0), BitRowWords(x.dim(1))};
    if (allowed.dtype() != DType::kI32 || allowed.shape() != expected) {
      return context.Error(absl::StrCat("allowed must be i32 [", x.dim(0), ", ", expected[1],
                                        "] (a bit per column of x), got ",
                                        allowed.DebugString()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Shape>> RowTopKOutputShapes(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(int64_t count, context.attrs().Get<int64_t>("count"));
  const Shape shape{context.input(0).dim(0), count};
  return std::vector<Shape>{shape, shape};
}

absl::StatusOr<RowTopK> RowTopKOf(const Tensor& x, int64_t count, int64_t forbidden_column,
                                  const Tensor& allowed) {
  Attrs attrs;
  attrs.Set("count", count);
  attrs.Set("forbidden_column", forbidden_column);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       allowed.defined() ? RunOp("row_top_k_allowed", {x, allowed}, attrs)
                                         : RunOp("row_top_k", {x}, attrs));
  return RowTopK{std::move(out[0]), std::move(out[1])};
}

}  // namespace tfm

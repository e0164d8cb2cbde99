#include "ops/log_softmax_top_k/log_softmax_top_k.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/softmax/softmax.h"

namespace tfm {
namespace {

absl::Status ValidateLogSoftmaxTopK(const KernelContext& context) {
  const Tensor& x = context.input(0);
  if (x.rank() != 2) return context.Error("logits must be a matrix [rows, n]");
  TFM_ASSIGN_OR_RETURN(int64_t count, context.attrs().Get<int64_t>("count"));
  if (count < 1 || count > kMaxRowTopK) {
    return context.Error(absl::StrCat("count ", count, " is outside [1, ", kMaxRowTopK, "]"));
  }
  TFM_ASSIGN_OR_RETURN(int64_t forbidden, context.attrs().Get<int64_t>("forbidden_column"));
  if (forbidden >= x.dim(1)) {
    return context.Error(absl::StrCat("forbidden column ", forbidden, " is past the ", x.dim(1),
                                      " columns"));
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "log_softmax_top_k",
    .inputs = {"logits"},
    .outputs = {"values", "columns"},
    .attrs = {"count", "forbidden_column"},
    .doc = "row_top_k of log_softmax(logits) without writing the log-probabilities",
    .validate = ValidateLogSoftmaxTopK,
    .kernel_dtype_inputs = {0},
    .output_shapes = [](const KernelContext& context) -> absl::StatusOr<std::vector<Shape>> {
      TFM_ASSIGN_OR_RETURN(int64_t count, context.attrs().Get<int64_t>("count"));
      const Shape shape{context.input(0).dim(0), count};
      return std::vector<Shape>{shape, shape};
    },
});

}  // namespace

absl::StatusOr<RowTopK> LogSoftmaxTopK(const Tensor& logits, int64_t count,
                                       int64_t forbidden_column) {
  if (!HasKernel("log_softmax_top_k", logits.device().type, logits.dtype())) {
    TFM_ASSIGN_OR_RETURN(const Tensor log_probs, LogSoftmax(logits));
    return RowTopKOf(log_probs, count, forbidden_column);
  }
  Attrs attrs;
  attrs.Set("count", count);
  attrs.Set("forbidden_column", forbidden_column);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("log_softmax_top_k", {logits}, attrs));
  return RowTopK{std::move(out[0]), std::move(out[1])};
}

}  // namespace tfm

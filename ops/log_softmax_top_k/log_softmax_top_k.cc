#include "ops/log_softmax_top_k/log_softmax_top_k.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/row_top_k/row_top_k_kernel_args.h"
#include "ops/softmax/softmax.h"

namespace tfm {
namespace {

TFM_REGISTER_OP(OpDef{
    .name = "log_softmax_top_k",
    .inputs = {"logits"},
    .outputs = {"values", "columns"},
    .attrs = {"count", "forbidden_column"},
    .doc = "row_top_k of log_softmax(logits) without writing the log-probabilities",
    // row_top_k's checks and shapes (its input is the logits).
    .validate = ValidateRowTopKArgs,
    .kernel_dtype_inputs = {0},
    .output_shapes = RowTopKOutputShapes,
});

TFM_REGISTER_OP(OpDef{
    .name = "log_softmax_top_k_allowed",
    .inputs = {"logits", "allowed"},
    .outputs = {"values", "columns"},
    .attrs = {"count", "forbidden_column"},
    .doc = "log_softmax_top_k over the columns whose bit is set in the row's allowed bits "
           "(row_top_k_allowed's)",
    .validate = ValidateRowTopKArgs,
    .kernel_dtype_inputs = {0},
    .output_shapes = RowTopKOutputShapes,
});

}  // namespace

absl::StatusOr<RowTopK> LogSoftmaxTopK(const Tensor& logits, int64_t count,
                                       int64_t forbidden_column, const Tensor& allowed) {
  if (!HasKernel("log_softmax_top_k", logits.device().type, logits.dtype())) {
    TFM_ASSIGN_OR_RETURN(const Tensor log_probs, LogSoftmax(logits));
    return RowTopKOf(log_probs, count, forbidden_column, allowed);
  }
  Attrs attrs;
  attrs.Set("count", count);
  attrs.Set("forbidden_column", forbidden_column);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       allowed.defined()
                           ? RunOp("log_softmax_top_k_allowed", {logits, allowed}, attrs)
                           : RunOp("log_softmax_top_k", {logits}, attrs));
  return RowTopK{std::move(out[0]), std::move(out[1])};
}

}  // namespace tfm

#include "ops/concat_rows/concat_rows.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// The stacked shape, or an error naming the first input that does not fit.
absl::StatusOr<Shape> StackedShape(const KernelContext& context) {
  if (context.list_size() == 0) return context.Error("needs at least one tensor");
  const Tensor& first = context.list_input(0, 0);
  if (first.rank() < 1) return context.Error("takes tensors of rank 1 or more, not scalars");
  Shape shape = first.shape();
  for (int entry = 1; entry < context.list_size(); ++entry) {
    const Tensor& x = context.list_input(entry, 0);
    bool fits = x.rank() == first.rank() && x.dtype() == first.dtype();
    for (int axis = 1; fits && axis < x.rank(); ++axis) fits = x.dim(axis) == first.dim(axis);
    if (!fits) {
      return context.Error(absl::StrCat("tensor ", entry, " (", x.DebugString(),
                                        ") does not stack under tensor 0 (",
                                        first.DebugString(), "): the dtype and every axis but "
                                        "the first must agree"));
    }
    shape[0] += x.dim(0);
  }
  return shape;
}

TFM_REGISTER_OP(OpDef{
    .name = "concat_rows",
    .inputs = {"x"},
    .outputs = {"out"},
    .doc = "out = the list's tensors stacked along their first axis (torch.cat(xs, 0))",
    .validate = [](const KernelContext& context) { return StackedShape(context).status(); },
    .kernel_dtype_inputs = {0},
    .output_shapes = [](const KernelContext& context) -> absl::StatusOr<std::vector<Shape>> {
      TFM_ASSIGN_OR_RETURN(Shape shape, StackedShape(context));
      return std::vector<Shape>{shape};
    },
    .list_inputs = 1,
});

}  // namespace

absl::StatusOr<Tensor> ConcatRows(absl::Span<const Tensor> xs) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("concat_rows", std::vector<Tensor>(xs.begin(), xs.end()), Attrs()));
  return out[0];
}

}  // namespace tfm

#include "ops/split_heads/split_heads.h"

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// Both ops are variadic: each entry of a list (q, k and v; or their
// gradients) moved in the same call, on CUDA in one launch.
absl::Status ValidateSplitHeads(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(int64_t heads, context.attrs().Get<int64_t>("heads"));
  for (int entry = 0; entry < context.list_size(); ++entry) {
    const Tensor& x = context.list_input(entry, 0);
    if (x.rank() != 3) return context.EntryError(entry, "x must be [batch, len, heads * d]");
    if (heads < 1 || x.dim(2) % heads != 0) {
      return context.EntryError(
          entry, absl::StrCat("heads = ", heads, " must be positive and divide ", x.dim(2)));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateMergeHeads(const KernelContext& context) {
  for (int entry = 0; entry < context.list_size(); ++entry) {
    if (context.list_input(entry, 0).rank() != 4) {
      return context.EntryError(entry, "x must be [batch, heads, len, d]");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Shape>> SplitHeadsShape(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(int64_t heads, context.attrs().Get<int64_t>("heads"));
  std::vector<Shape> shapes;
  for (int entry = 0; entry < context.list_size(); ++entry) {
    const Tensor& x = context.list_input(entry, 0);
    shapes.push_back({x.dim(0), heads, x.dim(1), x.dim(2) / heads});
  }
  return shapes;
}

absl::StatusOr<std::vector<Shape>> MergeHeadsShape(const KernelContext& context) {
  std::vector<Shape> shapes;
  for (int entry = 0; entry < context.list_size(); ++entry) {
    const Tensor& x = context.list_input(entry, 0);
    shapes.push_back({x.dim(0), x.dim(2), x.dim(1) * x.dim(3)});
  }
  return shapes;
}

TFM_REGISTER_OP(OpDef{
    .name = "split_heads",
    .inputs = {"x"},
    .outputs = {"out"},
    .attrs = {"heads"},
    .doc = "[batch, len, heads * d] -> [batch, heads, len, d] for each x of a list; backward is "
           "merge_heads",
    .validate = ValidateSplitHeads,
    .kernel_dtype_inputs = {0},
    .output_shapes = SplitHeadsShape,
    .list_inputs = 1,
    .list_outputs = 1,
});

TFM_REGISTER_OP(OpDef{
    .name = "merge_heads",
    .inputs = {"x"},
    .outputs = {"out"},
    .doc = "[batch, heads, len, d] -> [batch, len, heads * d] for each x of a list; backward is "
           "split_heads",
    .validate = ValidateMergeHeads,
    .kernel_dtype_inputs = {0},
    .output_shapes = MergeHeadsShape,
    .list_inputs = 1,
    .list_outputs = 1,
});

}  // namespace

absl::StatusOr<std::vector<Tensor>> SplitHeadsAll(absl::Span<const Tensor> xs, int64_t heads) {
  if (xs.empty()) return std::vector<Tensor>();
  return RunOp("split_heads", std::vector<Tensor>(xs.begin(), xs.end()), {{"heads", heads}});
}

absl::StatusOr<std::vector<Tensor>> MergeHeadsAll(absl::Span<const Tensor> xs) {
  if (xs.empty()) return std::vector<Tensor>();
  return RunOp("merge_heads", std::vector<Tensor>(xs.begin(), xs.end()));
}

absl::StatusOr<Tensor> SplitHeads(const Tensor& x, int64_t heads) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, SplitHeadsAll({x}, heads));
  return out[0];
}

absl::StatusOr<Tensor> MergeHeads(const Tensor& x) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, MergeHeadsAll({x}));
  return out[0];
}

absl::StatusOr<Tensor> SplitHeadsBackward(const Tensor& dout) { return MergeHeads(dout); }

absl::StatusOr<Tensor> MergeHeadsBackward(const Tensor& dout, int64_t heads) {
  return SplitHeads(dout, heads);
}

}  // namespace tfm

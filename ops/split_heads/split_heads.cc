#include "ops/split_heads/split_heads.h"

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidateSplitHeads(const KernelContext& context) {
  const Tensor& x = context.input(0);
  if (x.rank() != 3) return context.Error("x must be [batch, len, heads * d]");
  TFM_ASSIGN_OR_RETURN(int64_t heads, context.attrs().Get<int64_t>("heads"));
  if (heads < 1 || x.dim(2) % heads != 0) {
    return context.Error(
        absl::StrCat("heads = ", heads, " must be positive and divide ", x.dim(2)));
  }
  return absl::OkStatus();
}

absl::Status ValidateMergeHeads(const KernelContext& context) {
  if (context.input(0).rank() != 4) return context.Error("x must be [batch, heads, len, d]");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Shape>> SplitHeadsShape(const KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(int64_t heads, context.attrs().Get<int64_t>("heads"));
  return std::vector<Shape>{{x.dim(0), heads, x.dim(1), x.dim(2) / heads}};
}

absl::StatusOr<std::vector<Shape>> MergeHeadsShape(const KernelContext& context) {
  const Tensor& x = context.input(0);
  return std::vector<Shape>{{x.dim(0), x.dim(2), x.dim(1) * x.dim(3)}};
}

TFM_REGISTER_OP(OpDef{
    .name = "split_heads",
    .inputs = {"x"},
    .outputs = {"out"},
    .attrs = {"heads"},
    .doc = "[batch, len, heads * d] -> [batch, heads, len, d]; backward is merge_heads",
    .validate = ValidateSplitHeads,
    .output_shapes = SplitHeadsShape,
});

TFM_REGISTER_OP(OpDef{
    .name = "merge_heads",
    .inputs = {"x"},
    .outputs = {"out"},
    .doc = "[batch, heads, len, d] -> [batch, len, heads * d]; backward is split_heads",
    .validate = ValidateMergeHeads,
    .output_shapes = MergeHeadsShape,
});

}  // namespace

absl::StatusOr<Tensor> SplitHeads(const Tensor& x, int64_t heads) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("split_heads", {x}, {{"heads", heads}}));
  return out[0];
}

absl::StatusOr<Tensor> MergeHeads(const Tensor& x) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("merge_heads", {x}));
  return out[0];
}

absl::StatusOr<Tensor> SplitHeadsBackward(const Tensor& dout) { return MergeHeads(dout); }

absl::StatusOr<Tensor> MergeHeadsBackward(const Tensor& dout, int64_t heads) {
  return SplitHeads(dout, heads);
}

}  // namespace tfm

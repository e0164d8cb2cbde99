#include "ops/embedding/tied_projection.h"

#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidateHAndTable(const KernelContext& context) {
  const Tensor& h = context.input(0);
  const Tensor& table = context.input(1);
  if (table.rank() != 2 || h.rank() < 1 || h.dim(-1) != table.dim(1)) {
    return context.Error("h must be [..., d] and table [vocab, d]");
  }
  return absl::OkStatus();
}

// h's shape with the last extent the vocabulary: the logits, and d_logits.
Shape LogitsShape(const Tensor& h, const Tensor& table) {
  Shape shape = h.shape();
  shape.back() = table.dim(0);
  return shape;
}

TFM_REGISTER_OP(OpDef{
    .name = "tied_projection",
    .inputs = {"h", "table"},
    .outputs = {"logits"},
    .doc = "logits[..., v] = h[..., :] . table[v, :]",
    .validate = ValidateHAndTable,
    .kernel_dtype_inputs = {0, 1},
    .output_shapes = [](const KernelContext& context) -> absl::StatusOr<std::vector<Shape>> {
      return std::vector<Shape>{LogitsShape(context.input(0), context.input(1))};
    },
});

TFM_REGISTER_OP(OpDef{
    .name = "tied_projection_backward",
    .inputs = {"h", "table", "d_logits"},
    .outputs = {"dh", "dtable"},
    .doc = "dh = d_logits table, dtable = d_logits^T h",
    .validate =
        [](const KernelContext& context) {
          TFM_RETURN_IF_ERROR(ValidateHAndTable(context));
          if (context.input(2).shape() != LogitsShape(context.input(0), context.input(1))) {
            return context.Error("d_logits must be h.shape[:-1] + [vocab]");
          }
          return absl::OkStatus();
        },
    .kernel_dtype_inputs = {0, 1, 2},
    .output_shapes = [](const KernelContext& context) -> absl::StatusOr<std::vector<Shape>> {
      return std::vector<Shape>{context.input(0).shape(), context.input(1).shape()};
    },
});

}  // namespace

absl::StatusOr<Tensor> TiedProjection(const Tensor& h, const Tensor& table) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("tied_projection", {h, table}));
  return out[0];
}

absl::StatusOr<TiedProjectionGrads> TiedProjectionBackward(const Tensor& h, const Tensor& table,
                                                           const Tensor& d_logits) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("tied_projection_backward", {h, table, d_logits}));
  return TiedProjectionGrads{out[0], out[1]};
}

}  // namespace tfm

#include "ops/positional_encoding/positional_encoding.h"

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"

namespace tfm {
namespace {

absl::Status ValidateOffset(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(int64_t offset, context.attrs().GetOr<int64_t>("offset", 0));
  if (offset < 0) return context.Error("offset must be >= 0");
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "positional_encoding",
    .inputs = {},
    .outputs = {"pe"},
    .attrs = {"length", "d_model", "offset"},
    .doc = "pe[p, 2i] = sin((offset + p) / 10000^(2i/d)), pe[p, 2i+1] = cos(...)",
    .validate =
        [](const KernelContext& context) {
          TFM_ASSIGN_OR_RETURN(int64_t length, context.attrs().Get<int64_t>("length"));
          TFM_ASSIGN_OR_RETURN(int64_t d_model, context.attrs().Get<int64_t>("d_model"));
          if (length < 0 || d_model < 0) return context.Error("length and d_model must be >= 0");
          return ValidateOffset(context);
        },
    .output_shapes = [](const KernelContext& context) -> absl::StatusOr<std::vector<Shape>> {
      TFM_ASSIGN_OR_RETURN(int64_t length, context.attrs().Get<int64_t>("length"));
      TFM_ASSIGN_OR_RETURN(int64_t d_model, context.attrs().Get<int64_t>("d_model"));
      return std::vector<Shape>{{length, d_model}};
    },
});

TFM_REGISTER_OP(OpDef{
    .name = "add_positional_encoding",
    .inputs = {"x"},
    .outputs = {"out"},
    .attrs = {"offset"},
    .doc = "out = x + pe over x's last two axes [length, d_model], from position offset",
    .validate =
        [](const KernelContext& context) {
          if (context.input(0).rank() < 2) return context.Error("x must be [..., length, d_model]");
          return ValidateOffset(context);
        },
});

// The position is on the device, out of the host's sight: only its shape,
// dtype and device are checked here (its sign by the CPU kernel).
TFM_REGISTER_OP(OpDef{
    .name = "add_positional_encoding_at",
    .inputs = {"x", "position"},
    .outputs = {"out"},
    .attrs = {},
    .doc = "add_positional_encoding from the offset held by the [1] i32 tensor `position` (on "
           "x's device)",
    .validate =
        [](const KernelContext& context) {
          const Tensor& x = context.input(0);
          if (x.rank() < 2) return context.Error("x must be [..., length, d_model]");
          return context.RequireDevicePosition(context.input(1), "position", x.device(),
                                               "x's device");
        },
});

}  // namespace

absl::StatusOr<Tensor> PositionalEncoding(int64_t length, int64_t d_model, int64_t offset,
                                          const Device& device) {
  Attrs attrs;
  attrs.Set("length", length).Set("d_model", d_model).Set("offset", offset);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("positional_encoding", {}, attrs, OpTarget{device, DType::kF32}));
  return out[0];
}

absl::StatusOr<Tensor> AddPositionalEncoding(const Tensor& x, int64_t offset) {
  Attrs attrs;
  attrs.Set("offset", offset);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("add_positional_encoding", {x}, attrs));
  return out[0];
}

absl::StatusOr<Tensor> AddPositionalEncodingAt(const Tensor& x, const Tensor& position) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("add_positional_encoding_at", {x, position}));
  return out[0];
}

absl::StatusOr<Tensor> AddPositionalEncodingBackward(const Tensor& dout) {
  if (!dout.defined()) {
    return absl::InvalidArgumentError("add_positional_encoding_backward: dout is undefined");
  }
  return CopyToDevice(dout, dout.device());
}

}  // namespace tfm

#include "ops/dropout/dropout.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidateP(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(double p, context.attrs().Get<double>("p"));
  if (!(p >= 0.0 && p <= 1.0)) return context.Error(absl::StrCat("p = ", p, " is not in [0, 1]"));
  return absl::OkStatus();
}

absl::Status ValidateDropout(const KernelContext& context) {
  TFM_RETURN_IF_ERROR(ValidateP(context));
  return PhiloxStateFromAttrs(context.attrs()).status();
}

// Forward and backward are the same map (input times scaled mask), so one
// kernel serves both ops.
TFM_REGISTER_OP(OpDef{
    .name = "dropout",
    .inputs = {"x"},
    .outputs = {"out"},
    .attrs = {"p", "seed", "stream", "offset"},
    .doc = "out = x * (uniform(seed, stream, offset) >= p) / (1 - p)",
    .validate = ValidateDropout,
});

TFM_REGISTER_OP(OpDef{
    .name = "dropout_backward",
    .inputs = {"dout"},
    .outputs = {"dx"},
    .attrs = {"p", "seed", "stream", "offset"},
    .doc = "dx = dout * (uniform(seed, stream, offset) >= p) / (1 - p)",
    .validate = ValidateDropout,
});

TFM_REGISTER_OP(OpDef{
    .name = "dropout_with_mask",
    .inputs = {"x"},
    .outputs = {"out", "mask"},
    .attrs = {"p", "seed", "stream", "offset"},
    .doc = "dropout, plus its keep decisions packed 32 per i32 word",
    .validate = ValidateDropout,
});

absl::Status ValidateDropoutBackwardMasked(const KernelContext& context) {
  TFM_RETURN_IF_ERROR(ValidateP(context));
  const Tensor& mask = context.input(1);
  const int64_t words = DropoutMaskWords(context.input(0).num_elements());
  if (mask.dtype() != DType::kI32 || mask.shape() != Shape{words}) {
    return context.Error(absl::StrCat("mask must be i32[", words,
                                      "] (32 elements per word), as DropoutWithMask returns"));
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "dropout_backward_masked",
    .inputs = {"dout", "mask"},
    .outputs = {"dx"},
    .attrs = {"p"},
    .doc = "dx = dout * bit(mask, i) / (1 - p)",
    .validate = ValidateDropoutBackwardMasked,
});

absl::StatusOr<Tensor> RunDropout(const char* op, const Tensor& in, double p,
                                  const PhiloxState& state) {
  Attrs attrs;
  attrs.Set("p", p);
  SetPhiloxAttrs(state, &attrs);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp(op, {in}, attrs));
  return out[0];
}

}  // namespace

absl::StatusOr<Tensor> Dropout(const Tensor& x, double p, const PhiloxState& state) {
  return RunDropout("dropout", x, p, state);
}

absl::StatusOr<Tensor> DropoutBackward(const Tensor& dout, double p, const PhiloxState& state) {
  return RunDropout("dropout_backward", dout, p, state);
}

absl::StatusOr<DropoutOutput> DropoutWithMask(const Tensor& x, double p, const PhiloxState& state) {
  Attrs attrs;
  attrs.Set("p", p);
  SetPhiloxAttrs(state, &attrs);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("dropout_with_mask", {x}, attrs));
  return DropoutOutput{std::move(out[0]), std::move(out[1])};
}

absl::StatusOr<Tensor> DropoutBackwardMasked(const Tensor& dout, double p, const Tensor& mask) {
  Attrs attrs;
  attrs.Set("p", p);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("dropout_backward_masked", {dout, mask}, attrs));
  return out[0];
}

}  // namespace tfm

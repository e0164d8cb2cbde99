#include "ops/dropout/dropout.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidateDropout(const KernelContext& context) {
  if (context.input(0).dtype() != DType::kF32) return context.Error("input must be f32");
  TFM_ASSIGN_OR_RETURN(double p, context.attrs().Get<double>("p"));
  if (!(p >= 0.0 && p <= 1.0)) return context.Error(absl::StrCat("p = ", p, " is not in [0, 1]"));
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

}  // namespace tfm

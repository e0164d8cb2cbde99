#include "ops/random/random.h"

#include <cmath>

#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidateRandom(const KernelContext& context, const char* a, const char* b) {
  TFM_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                       context.attrs().Get<std::vector<int64_t>>("shape"));
  TFM_RETURN_IF_ERROR(ValidateShape(Shape(shape.begin(), shape.end())));
  TFM_RETURN_IF_ERROR(PhiloxStateFromAttrs(context.attrs()).status());
  TFM_ASSIGN_OR_RETURN(double first, context.attrs().Get<double>(a));
  TFM_ASSIGN_OR_RETURN(double second, context.attrs().Get<double>(b));
  if (!std::isfinite(first) || !std::isfinite(second)) {
    return context.Error("parameters must be finite");
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "random_uniform",
    .inputs = {},
    .outputs = {"out"},
    .attrs = {"shape", "seed", "stream", "offset", "low", "high"},
    .doc = "out ~ U[low, high) from Philox(seed, stream) starting at block offset",
    .validate =
        [](const KernelContext& context) {
          TFM_RETURN_IF_ERROR(ValidateRandom(context, "low", "high"));
          if (*context.attrs().Get<double>("high") < *context.attrs().Get<double>("low")) {
            return context.Error("high < low");
          }
          return absl::OkStatus();
        },
});

TFM_REGISTER_OP(OpDef{
    .name = "random_normal",
    .inputs = {},
    .outputs = {"out"},
    .attrs = {"shape", "seed", "stream", "offset", "mean", "stddev"},
    .doc = "out ~ N(mean, stddev^2) from Philox(seed, stream) starting at block offset",
    .validate =
        [](const KernelContext& context) {
          TFM_RETURN_IF_ERROR(ValidateRandom(context, "mean", "stddev"));
          if (*context.attrs().Get<double>("stddev") < 0) {
            return context.Error("stddev < 0");
          }
          return absl::OkStatus();
        },
});

absl::StatusOr<Tensor> RunRandom(const char* op, const Shape& shape, const PhiloxState& state,
                                 const char* a, float a_value, const char* b, float b_value,
                                 const Device& device) {
  Attrs attrs;
  attrs.Set("shape", std::vector<int64_t>(shape.begin(), shape.end()));
  SetPhiloxAttrs(state, &attrs);
  attrs.Set(a, static_cast<double>(a_value)).Set(b, static_cast<double>(b_value));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp(op, {}, attrs, OpTarget{device, DType::kF32}));
  return out[0];
}

}  // namespace

absl::StatusOr<Tensor> RandomUniform(const Shape& shape, const PhiloxState& state, float low,
                                     float high, const Device& device) {
  return RunRandom("random_uniform", shape, state, "low", low, "high", high, device);
}

absl::StatusOr<Tensor> RandomNormal(const Shape& shape, const PhiloxState& state, float mean,
                                    float stddev, const Device& device) {
  return RunRandom("random_normal", shape, state, "mean", mean, "stddev", stddev, device);
}

}  // namespace tfm

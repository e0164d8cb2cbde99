#include "ops/loss_scale/loss_scale.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

TFM_REGISTER_OP(OpDef{
    .name = "multi_tensor_scale_by",
    .inputs = {"x", "scale"},
    .outputs = {"x"},
    .attrs = {"reciprocal"},
    .doc = "every x of a list times the device scalar scale (or 1 / scale with reciprocal), in "
           "place, one launch",
    .validate =
        [](const KernelContext& context) {
          return context.RequireF32Scalar(context.input(context.layout().input(1)), "scale");
        },
    .kernel_dtype_inputs = {0},
    .in_place = {{0, 0}},
    .list_inputs = 1,
    .list_outputs = 1,
});

TFM_REGISTER_OP(OpDef{
    .name = "loss_scale_step",
    .inputs = {"scale", "clean_updates", "grad_sum_of_squares"},
    .outputs = {"scale", "clean_updates"},
    .attrs = {"window", "max_scale"},
    .doc = "dynamic loss scaling's next scale and count of clean updates (new tensors): halved "
           "after non-finite gradients, doubled after `window` finite ones in a row",
    .validate =
        [](const KernelContext& context) {
          TFM_RETURN_IF_ERROR(context.RequireF32Scalar(context.input(0), "scale"));
          TFM_RETURN_IF_ERROR(context.RequireF32Scalar(context.input(1), "clean_updates"));
          TFM_RETURN_IF_ERROR(
              context.RequireF32Scalar(context.input(2), "grad_sum_of_squares"));
          TFM_ASSIGN_OR_RETURN(int64_t window, context.attrs().Get<int64_t>("window"));
          TFM_ASSIGN_OR_RETURN(double max_scale, context.attrs().Get<double>("max_scale"));
          if (window < 1) return context.Error(absl::StrCat("window ", window, " must be >= 1"));
          if (!(max_scale > 0) || !std::isfinite(static_cast<float>(max_scale))) {
            return context.Error(absl::StrCat("max_scale ", max_scale, " must be a positive f32"));
          }
          return absl::OkStatus();
        },
    .kernel_dtype_inputs = {0},
});

}  // namespace

absl::Status MultiTensorScaleBy(absl::Span<const Tensor> tensors, const Tensor& scale,
                                bool reciprocal) {
  if (tensors.empty()) return absl::OkStatus();
  std::vector<Tensor> inputs(tensors.begin(), tensors.end());
  inputs.push_back(scale);
  Attrs attrs;
  attrs.Set("reciprocal", reciprocal);
  return RunOp("multi_tensor_scale_by", inputs, attrs).status();
}

absl::StatusOr<LossScaleTensors> LossScaleStep(const LossScaleTensors& state,
                                               const Tensor& grad_sum_of_squares, int64_t window,
                                               double max_scale) {
  Attrs attrs;
  attrs.Set("window", window).Set("max_scale", max_scale);
  TFM_ASSIGN_OR_RETURN(
      std::vector<Tensor> next,
      RunOp("loss_scale_step", {state.scale, state.clean_updates, grad_sum_of_squares}, attrs));
  return LossScaleTensors{next[0], next[1]};
}

}  // namespace tfm

#include "ops/adam/adam.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// The attributes of one Adam step, which both ops take.
absl::Status ValidateAdamAttrs(const KernelContext& context) {
  const Attrs& attrs = context.attrs();
  TFM_ASSIGN_OR_RETURN(double lr, attrs.Get<double>("lr"));
  TFM_ASSIGN_OR_RETURN(double beta1, attrs.Get<double>("beta1"));
  TFM_ASSIGN_OR_RETURN(double beta2, attrs.Get<double>("beta2"));
  TFM_ASSIGN_OR_RETURN(double eps, attrs.Get<double>("eps"));
  TFM_ASSIGN_OR_RETURN(int64_t step, attrs.Get<int64_t>("step"));
  if (!std::isfinite(lr) || lr < 0) return context.Error(absl::StrCat("bad lr ", lr));
  if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1)) {
    return context.Error("betas must be in [0, 1)");
  }
  if (!(eps >= 0)) return context.Error("eps must be >= 0");
  if (step < 1) return context.Error(absl::StrCat("step ", step, " must be >= 1"));
  TFM_ASSIGN_OR_RETURN(double weight_decay, attrs.GetOr<double>("weight_decay", 0.0));
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay)) {
    return context.Error(absl::StrCat("weight_decay ", weight_decay, " must be finite and >= 0"));
  }
  return absl::OkStatus();
}

absl::Status ValidateAdam(const KernelContext& context) {
  const Tensor& param = context.input(0);
  for (int i = 0; i < 4; ++i) {
    if (context.input(i).shape() != param.shape()) {
      return context.Error("param, grad, m and v must have one shape");
    }
  }
  return ValidateAdamAttrs(context);
}

absl::Status ValidateMultiTensorAdam(const KernelContext& context) {
  for (int entry = 0; entry < context.list_size(); ++entry) {
    const Shape& shape = context.list_input(entry, 0).shape();
    for (int i = 1; i < 4; ++i) {
      if (context.list_input(entry, i).shape() != shape) {
        return context.EntryError(entry, "param, grad, m and v must have one shape");
      }
    }
  }
  TFM_RETURN_IF_ERROR(
      context.RequireF32Scalar(context.input(context.layout().input(4)), "grad_sum_of_squares"));
  TFM_RETURN_IF_ERROR(
      context.RequireF32Scalar(context.input(context.layout().input(5)), "skip_guard"));
  TFM_ASSIGN_OR_RETURN(double max_norm, context.attrs().Get<double>("max_norm"));
  if (!(max_norm >= 0) || !std::isfinite(max_norm)) {
    return context.Error(absl::StrCat("max_norm ", max_norm, " must be finite and >= 0"));
  }
  return ValidateAdamAttrs(context);
}

TFM_REGISTER_OP(OpDef{
    .name = "adam",
    .inputs = {"param", "grad", "m", "v"},
    .outputs = {"param", "m", "v"},
    .attrs = {"lr", "beta1", "beta2", "eps", "step", "weight_decay"},
    .doc = "one bias-corrected Adam step, in place (torch.optim.Adam; with weight_decay, "
           "optional, torch.optim.AdamW's decoupled decay)",
    .validate = ValidateAdam,
    .kernel_dtype_inputs = {0, 1, 2, 3},
    .in_place = {{0, 0}, {1, 2}, {2, 3}},
});

// One launch over all of a model's parameters: per-tensor launches cost a
// model of a few hundred tensors that many kernel launches (and list
// uploads) per update.
TFM_REGISTER_OP(OpDef{
    .name = "multi_tensor_adam",
    .inputs = {"param", "grad", "m", "v", "grad_sum_of_squares", "skip_guard"},
    .outputs = {"param", "m", "v"},
    .attrs = {"lr", "beta1", "beta2", "eps", "step", "max_norm", "weight_decay"},
    .doc = "adam over a list of (param, grad, m, v), the gradients clipped to a global norm of "
           "max_norm (0: none) by a factor read from grad_sum_of_squares on the device, in "
           "place; skipped on the device when grad_sum_of_squares or skip_guard is not finite",
    .validate = ValidateMultiTensorAdam,
    .kernel_dtype_inputs = {0, 1, 2, 3},
    .in_place = {{0, 0}, {1, 2}, {2, 3}},
    .list_inputs = 4,
    .list_outputs = 3,
});

}  // namespace

Attrs AdamAttrs(const AdamOptions& options) {
  Attrs attrs;
  attrs.Set("lr", options.lr)
      .Set("beta1", options.beta1)
      .Set("beta2", options.beta2)
      .Set("eps", options.eps)
      .Set("step", options.step)
      .Set("weight_decay", options.weight_decay);
  return attrs;
}

absl::Status AdamUpdate(const Tensor& param, const Tensor& grad, const Tensor& m,
                        const Tensor& v, const AdamOptions& options) {
  return RunOp("adam", {param, grad, m, v}, AdamAttrs(options)).status();
}

absl::Status MultiTensorAdamUpdate(absl::Span<const AdamTensors> tensors,
                                   const Tensor& grad_sum_of_squares, double max_norm,
                                   const AdamOptions& options, const Tensor* skip_guard) {
  std::vector<Tensor> inputs;
  inputs.reserve(4 * tensors.size() + 2);
  for (const AdamTensors& t : tensors) {
    inputs.insert(inputs.end(), {t.param, t.grad, t.m, t.v});
  }
  inputs.push_back(grad_sum_of_squares);
  inputs.push_back(skip_guard != nullptr ? *skip_guard : grad_sum_of_squares);
  Attrs attrs = AdamAttrs(options);
  attrs.Set("max_norm", max_norm);
  return RunOp("multi_tensor_adam", inputs, attrs).status();
}

}  // namespace tfm

#include "ops/adam/adam.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidateAdam(const KernelContext& context) {
  const Tensor& param = context.input(0);
  for (int i = 0; i < 4; ++i) {
    if (context.input(i).shape() != param.shape()) {
      return context.Error("param, grad, m and v must have one shape");
    }
  }
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
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "adam",
    .inputs = {"param", "grad", "m", "v"},
    .outputs = {"param", "m", "v"},
    .attrs = {"lr", "beta1", "beta2", "eps", "step"},
    .doc = "one bias-corrected Adam step, in place (torch.optim.Adam)",
    .validate = ValidateAdam,
    .kernel_dtype_inputs = {0, 1, 2, 3},
    .in_place = {{0, 0}, {1, 2}, {2, 3}},
});

}  // namespace

Attrs AdamAttrs(const AdamOptions& options) {
  Attrs attrs;
  attrs.Set("lr", options.lr)
      .Set("beta1", options.beta1)
      .Set("beta2", options.beta2)
      .Set("eps", options.eps)
      .Set("step", options.step);
  return attrs;
}

absl::Status AdamUpdate(const Tensor& param, const Tensor& grad, const Tensor& m,
                        const Tensor& v, const AdamOptions& options) {
  return RunOp("adam", {param, grad, m, v}, AdamAttrs(options)).status();
}

}  // namespace tfm

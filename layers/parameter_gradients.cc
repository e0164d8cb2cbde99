#include "layers/parameter_gradients.h"

#include <utility>
#include <vector>

#include "core/check.h"
#include "core/status_macros.h"
#include "ops/add/add.h"
#include "ops/cast/cast.h"
#include "ops/fill/fill.h"

namespace tfm {
namespace {

absl::StatusOr<Tensor> WidenedToF32(const Tensor& grad) {
  if (grad.dtype() == DType::kF32) return grad;
  return Cast(grad, DType::kF32);
}

}  // namespace

absl::Status AccumulateGrad(Parameter& parameter, const Tensor& grad) {
  TFM_CHECK(grad.shape() == parameter.value.shape(), "gradient shaped unlike its parameter");
  if (!parameter.grad.defined() && !parameter.on_grad_accumulated) {
    // The batch's first: kept as it came, widened later with the others.
    parameter.grad = grad;
    return absl::OkStatus();
  }
  TFM_ASSIGN_OR_RETURN(Tensor widened, WidenedToF32(grad));
  if (parameter.grad.defined()) {
    TFM_ASSIGN_OR_RETURN(const Tensor sum, WidenedToF32(parameter.grad));
    TFM_ASSIGN_OR_RETURN(parameter.grad, Add(sum, widened));
  } else {
    parameter.grad = std::move(widened);
  }
  if (parameter.on_grad_accumulated) parameter.on_grad_accumulated();
  return absl::OkStatus();
}

absl::Status CompleteGradients(absl::Span<Parameter* const> parameters) {
  std::vector<Parameter*> narrow;
  std::vector<Tensor> grads;
  for (Parameter* p : parameters) {
    if (!p->grad.defined()) {
      TFM_ASSIGN_OR_RETURN(p->grad, Fill(p->value.shape(), 0.0, DType::kF32, p->value.device()));
    } else if (p->grad.dtype() != DType::kF32) {
      narrow.push_back(p);
      grads.push_back(p->grad);
    }
  }
  // 16-bit gradients share one dtype (the pass's); one cast widens them all.
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> widened, CastAll(grads, DType::kF32));
  for (size_t i = 0; i < narrow.size(); ++i) narrow[i]->grad = std::move(widened[i]);
  return absl::OkStatus();
}

}  // namespace tfm

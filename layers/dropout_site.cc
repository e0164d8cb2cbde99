#include "layers/dropout_site.h"

#include "core/status_macros.h"
#include "ops/dropout/dropout.h"

namespace tfm {

absl::StatusOr<PhiloxState> DropoutSite::Reserve(ForwardContext& context, int64_t count) {
  if (context.rng == nullptr) {
    return absl::FailedPreconditionError(
        "a training pass with dropout needs ForwardContext::rng (seed and step counter)");
  }
  return context.rng->Reserve(count);
}

absl::StatusOr<Tensor> DropoutSite::Forward(ForwardContext& context, const Tensor& x) {
  active_ = context.training && p_ > 0.0f;
  if (!active_) return x;
  TFM_ASSIGN_OR_RETURN(state_, Reserve(context, x.num_elements()));
  return Dropout(x, p_, state_);
}

absl::StatusOr<Tensor> DropoutSite::Backward(const Tensor& dout) const {
  if (!active_) return dout;
  return DropoutBackward(dout, p_, state_);
}

}  // namespace tfm

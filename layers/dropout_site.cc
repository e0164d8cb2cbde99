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

absl::Status DropoutSite::Begin(ForwardContext& context, int64_t count) {
  // Written only when it changes: decoding steps running at once on one
  // model (decode.inter_threads) find it false and leave it.
  const bool active = context.training && p_ > 0.0f;
  if (active_ != active) active_ = active;
  if (!active_) return absl::OkStatus();
  TFM_ASSIGN_OR_RETURN(state_, Reserve(context, count));
  return absl::OkStatus();
}

absl::StatusOr<Tensor> DropoutSite::Forward(ForwardContext& context, const Tensor& x) {
  TFM_RETURN_IF_ERROR(Begin(context, x.num_elements()));
  if (!active_) return x;
  return Dropout(x, p_, state_);
}

float DropoutSite::keep_scale() const { return active_ ? DropoutKeepScale(p_) : 1.0f; }

absl::StatusOr<Tensor> DropoutSite::Backward(const Tensor& dout) const {
  if (!active_) return dout;
  return DropoutBackward(dout, p_, state_);
}

}  // namespace tfm

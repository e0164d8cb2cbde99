// One place in a layer where dropout applies: it reserves its Philox numbers
// from the pass's generator and keeps only their state, from which backward
// regenerates the mask. Outside training, or with p = 0, it is the identity.
#ifndef TFM_LAYERS_DROPOUT_SITE_H_
#define TFM_LAYERS_DROPOUT_SITE_H_

#include "absl/status/statusor.h"
#include "core/layer_registry.h"
#include "core/rng.h"
#include "core/tensor.h"

namespace tfm {

class DropoutSite {
 public:
  explicit DropoutSite(float p = 0.0f) : p_(p) {}

  absl::StatusOr<Tensor> Forward(ForwardContext& context, const Tensor& x);
  absl::StatusOr<Tensor> Backward(const Tensor& dout) const;

  // For an op that applies the dropout itself (ops/residual_layer_norm):
  // reserves the state of `count` numbers as Forward would, without calling
  // the dropout op. rate() is then p, or 0 where Forward would be the
  // identity, and state() the mask's state; both hold for the backward.
  absl::Status Begin(ForwardContext& context, int64_t count);
  float rate() const { return active_ ? p_ : 0.0f; }
  // What the last Forward multiplied kept elements by: the dropout op's
  // 1 / (1 - p), or 1 where it was the identity.
  float keep_scale() const;
  const PhiloxState& state() const { return state_; }

  // The state of an active forward (the attention op draws its own mask).
  static absl::StatusOr<PhiloxState> Reserve(ForwardContext& context, int64_t count);

 private:
  float p_;
  bool active_ = false;
  PhiloxState state_;
};

}  // namespace tfm

#endif  // TFM_LAYERS_DROPOUT_SITE_H_

// Adding a backward pass's gradients into the parameters (Parameter::grad),
// and completing them after a batch's passes.
//
// Gradients are f32 sums. A mixed-precision pass (train.dtype bf16) hands
// its gradients over in the compute dtype; they are widened to f32, one by
// one where they are added to an earlier sum, all at once (one cast) where
// they are a batch's first.
#ifndef TFM_LAYERS_PARAMETER_GRADIENTS_H_
#define TFM_LAYERS_PARAMETER_GRADIENTS_H_

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/layer_registry.h"
#include "core/tensor.h"

namespace tfm {

// parameter.grad += grad (a programming error unless the shapes match); a
// grad in another dtype (bf16 from a mixed-precision backward) is widened
// to f32 first. An undefined parameter.grad (zero, not yet reached this
// batch) becomes `grad` itself, no zeros to add to, and stays in grad's
// dtype until CompleteGradients widens it with the rest (one cast for all
// of them), unless a hook watches the parameter (on_grad_accumulated: it
// sees f32 sums). parameter.grad then shares grad's buffer, which backward
// passes hand over and keep no other use for.
absl::Status AccumulateGrad(Parameter& parameter, const Tensor& grad);

// After a batch's passes, for a trainer that started its gradients
// undefined: zeros (f32) where no pass reached, and every gradient still in
// a 16-bit dtype widened to f32 in one cast.
absl::Status CompleteGradients(absl::Span<Parameter* const> parameters);

}  // namespace tfm

#endif  // TFM_LAYERS_PARAMETER_GRADIENTS_H_

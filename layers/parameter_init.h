// Creating a layer's parameters with their initial values, and adding a
// backward pass's gradient into them.
#ifndef TFM_LAYERS_PARAMETER_INIT_H_
#define TFM_LAYERS_PARAMETER_INIT_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/layer_registry.h"
#include "core/tensor.h"

namespace tfm {

// The paper does not say how it initialises; these are tensor2tensor's and
// fairseq's choices.
enum class ParameterInit {
  kZeros,          // Biases, layer-norm bias.
  kOnes,           // Layer-norm gain.
  kXavierUniform,  // Projection [out, in]: U(+-sqrt(6 / (in + out))).
  kScaledNormal,   // Embedding tables [rows, d]: N(0, 1 / d), so that rows
                   // times sqrt(d_model) have unit scale.
};

// A parameter named args.scope + `name` on args.device with a zero gradient.
// Random inits draw from args.init_rng (an error naming the parameter if it
// is missing).
absl::StatusOr<Parameter> MakeParameter(const LayerArgs& args, absl::string_view name,
                                        const Shape& shape, ParameterInit init);

// parameter.grad += grad (a programming error unless the shapes match).
absl::Status AccumulateGrad(Parameter& parameter, const Tensor& grad);

}  // namespace tfm

#endif  // TFM_LAYERS_PARAMETER_INIT_H_

// Creating a layer's parameters with their initial values and the values a
// pass computes with (mixed precision: a rounded copy per pass). Adding a
// backward pass's gradients into them: layers/parameter_gradients.h.
//
// Mixed precision (train.dtype bf16): the parameters stay f32 (the master
// weights the optimizer updates and checkpoints hold) and so do their
// gradients. Before each pass the model rounds every parameter once into
// Parameter::compute_copy; a layer takes the copy in its input's dtype
// (ValueFor), so the dtype of a pass is set where it starts (the embedding
// tables) and everything downstream follows it. Backward's gradients come
// out in the compute dtype and are widened into the f32 sums
// (layers/parameter_gradients.h).
#ifndef TFM_LAYERS_PARAMETER_INIT_H_
#define TFM_LAYERS_PARAMETER_INIT_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
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
// is missing). With args.load_for_decoding: an uninitialised value for the
// checkpoint to fill and no gradient.
absl::StatusOr<Parameter> MakeParameter(const LayerArgs& args, absl::string_view name,
                                        const Shape& shape, ParameterInit init);


// The parameter's value for a pass computing in `dtype` (the dtype of the
// layer's input): `value` when they match, else compute_copy, which must
// hold that dtype (FailedPrecondition naming the parameter otherwise: the
// model did not round its copies for this pass).
absl::StatusOr<Tensor> ValueFor(const Parameter& parameter, DType dtype);

// Rounds every parameter's value into its compute_copy for passes in
// `dtype`; with `dtype` the values' own, drops the copies (f32 passes read
// the values).
absl::Status RoundComputeCopies(absl::Span<Parameter* const> parameters, DType dtype);

}  // namespace tfm

#endif  // TFM_LAYERS_PARAMETER_INIT_H_

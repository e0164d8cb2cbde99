#include "layers/layer_gradient_check.h"

#include "ops/fill/fill.h"

namespace tfm {
namespace testing {

::testing::AssertionResult CheckLayerGradients(Layer& layer, const std::vector<Tensor>& inputs,
                                               bool training, GradientCheckOptions options) {
  const std::vector<Parameter*> parameters = layer.Parameters();
  const size_t num_inputs = inputs.size();
  std::vector<Tensor> all_inputs = inputs;
  for (const Parameter* p : parameters) all_inputs.push_back(p->value);

  // Runs the layer with the parameters set from inputs[num_inputs...].
  const auto run_forward =
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    for (size_t k = 0; k < parameters.size(); ++k) parameters[k]->value = in[num_inputs + k];
    Generator rng(/*seed=*/20170612, /*stream=*/3);
    ForwardContext context{training, &rng};
    return layer.Forward(context, absl::MakeConstSpan(in.data(), num_inputs));
  };
  const auto run_backward =
      [&](const std::vector<Tensor>& in, const std::vector<Tensor>&,
          const std::vector<Tensor>& dout) -> absl::StatusOr<std::vector<Tensor>> {
    for (Parameter* p : parameters) {
      absl::StatusOr<Tensor> zeros = Fill(p->value.shape(), 0.0, DType::kF32);
      if (!zeros.ok()) return zeros.status();
      p->grad = *zeros;
    }
    absl::StatusOr<std::vector<Tensor>> out = run_forward(in);  // The state to go back from.
    if (!out.ok()) return out.status();
    absl::StatusOr<std::vector<Tensor>> grads = layer.Backward(dout);
    if (!grads.ok()) return grads.status();
    grads->resize(num_inputs);
    for (const Parameter* p : parameters) grads->push_back(p->grad);
    return grads;
  };
  ::testing::AssertionResult result =
      CheckGradients(run_forward, run_backward, all_inputs, options);
  for (size_t k = 0; k < parameters.size(); ++k) {
    parameters[k]->value = all_inputs[num_inputs + k];
  }
  return result;
}

}  // namespace testing
}  // namespace tfm

// Numerical gradient checks: an op's analytic backward against central
// finite differences of its forward.
//
//   ForwardFn forward = [](const std::vector<Tensor>& in)
//       -> absl::StatusOr<std::vector<Tensor>> { ... return {y}; };
//   BackwardFn backward = [](const std::vector<Tensor>& in,
//                            const std::vector<Tensor>& out,
//                            const std::vector<Tensor>& dout)
//       -> absl::StatusOr<std::vector<Tensor>> { ... return {dx, dw}; };
//   EXPECT_TRUE(CheckGradients(forward, backward, {x, w}));
//
// The loss is L = sum_k sum(outputs[k] * r_k) with fixed random weights r_k
// (uniform in [-1, 1)) for the outputs in the loss, so every output element
// contributes with a different weight and a gradient that is wrong by a
// permutation or a constant factor cannot pass. The backward receives the
// inputs, the forward's outputs and dL/doutputs (r_k, or zeros for outputs
// left out of the loss, e.g. saved statistics) and returns one gradient per
// input (an undefined Tensor for inputs without one, e.g. indices).
//
// Numerics. The ops run in f32, so each loss evaluation is summed in double
// from f32 outputs whose rounding (~6e-8 relative each) is the noise floor:
// divided by the 2*step of the difference it becomes ~1e-4 for a thousand
// outputs of magnitude ~1 at step 1e-2, while the O(step^2) truncation error
// of central differences stays ~1e-5 for smooth ops. Hence the defaults: step
// 1e-2, and |numeric - analytic| <= atol (1e-3) + rtol (1e-2) * max(|numeric|,
// |analytic|). The perturbed value is rounded to f32 and the difference
// quotient divides by the step actually taken. For ops with kinks (relu) or
// discrete choices (dropout's mask, a max), keep inputs farther than `step`
// from the kinks. Large inputs are checked on a random sample of elements
// (max_elements_per_input) to keep tests fast; two forward runs per element.
#ifndef TFM_TESTS_UTIL_GRADIENT_CHECK_H_
#define TFM_TESTS_UTIL_GRADIENT_CHECK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "gtest/gtest.h"

namespace tfm {
namespace testing {

// inputs -> outputs. Must be deterministic (fixed seeds for random ops).
using ForwardFn =
    std::function<absl::StatusOr<std::vector<Tensor>>(const std::vector<Tensor>& inputs)>;

// (inputs, outputs, dL/doutputs) -> dL/dinputs, one per input.
using BackwardFn = std::function<absl::StatusOr<std::vector<Tensor>>(
    const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
    const std::vector<Tensor>& output_grads)>;

struct GradientCheckOptions {
  double step = 1e-2;  // Finite-difference step, absolute.
  double atol = 1e-3;
  double rtol = 1e-2;
  // Inputs with more elements are checked on this many random elements.
  int64_t max_elements_per_input = 128;
  // Inputs to check; empty: every f32 input.
  std::vector<int> inputs_to_check;
  // Outputs in the loss; empty: every f32 output.
  std::vector<int> outputs_in_loss;
  uint64_t seed = 20170612;  // Loss weights and element sampling.
};

// Success when every checked element's analytic gradient matches the
// numerical one. The caller's inputs are not modified. Failures list the
// worst mismatches (input, flat index, numeric, analytic).
::testing::AssertionResult CheckGradients(const ForwardFn& forward, const BackwardFn& backward,
                                          const std::vector<Tensor>& inputs,
                                          const GradientCheckOptions& options = {});

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TESTS_UTIL_GRADIENT_CHECK_H_

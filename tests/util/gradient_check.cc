#include "tests/util/gradient_check.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/philox.h"
#include "core/rng.h"
#include "core/tensor_copy.h"

namespace tfm {
namespace testing {
namespace {

struct Mismatch {
  int input;
  int64_t index;
  double numeric;
  double analytic;
  double excess;  // How far past the tolerance.
};

// sum_k sum(outputs[k] * weights[k]) in double over the outputs in the loss.
absl::StatusOr<double> Loss(const ForwardFn& forward, const std::vector<Tensor>& inputs,
                            const std::vector<Tensor>& weights) {
  absl::StatusOr<std::vector<Tensor>> outputs = forward(inputs);
  if (!outputs.ok()) return outputs.status();
  if (outputs->size() != weights.size()) {
    return absl::InternalError("forward returned a different number of outputs");
  }
  double loss = 0;
  for (size_t k = 0; k < weights.size(); ++k) {
    if (!weights[k].defined()) continue;
    absl::StatusOr<Tensor> out = CopyToDevice((*outputs)[k], Device::Cpu());
    if (!out.ok()) return out.status();
    const float* o = out->data<float>();
    const float* w = weights[k].data<float>();
    for (int64_t i = 0; i < out->num_elements(); ++i) loss += static_cast<double>(o[i]) * w[i];
  }
  return loss;
}

// The flat indices of `input` to check: all, or a reproducible sample.
std::vector<int64_t> ElementsToCheck(int64_t count, int input, const GradientCheckOptions& options) {
  std::vector<int64_t> indices;
  if (count <= options.max_elements_per_input) {
    for (int64_t i = 0; i < count; ++i) indices.push_back(i);
    return indices;
  }
  for (int64_t i = 0; i < options.max_elements_per_input; ++i) {
    const philox::Uint4 bits = philox::Block(options.seed, 1000 + input, i);
    indices.push_back(((static_cast<uint64_t>(bits.x) << 32) | bits.y) % count);
  }
  return indices;
}

}  // namespace

::testing::AssertionResult CheckGradients(const ForwardFn& forward, const BackwardFn& backward,
                                          const std::vector<Tensor>& inputs,
                                          const GradientCheckOptions& options) {
  // Private host copies: perturbing them must not touch the caller's buffers.
  std::vector<Tensor> work;
  for (const Tensor& input : inputs) {
    absl::StatusOr<Tensor> copy = CopyToDevice(input, Device::Cpu());
    if (!copy.ok()) return ::testing::AssertionFailure() << copy.status();
    work.push_back(*std::move(copy));
  }
  absl::StatusOr<std::vector<Tensor>> outputs = forward(work);
  if (!outputs.ok()) return ::testing::AssertionFailure() << "forward: " << outputs.status();

  std::vector<int> in_loss = options.outputs_in_loss;
  if (in_loss.empty()) {
    for (size_t k = 0; k < outputs->size(); ++k) {
      if ((*outputs)[k].dtype() == DType::kF32) in_loss.push_back(static_cast<int>(k));
    }
  }
  std::vector<Tensor> weights(outputs->size());  // Undefined: not in the loss.
  std::vector<Tensor> output_grads(outputs->size());
  for (size_t k = 0; k < outputs->size(); ++k) {
    const Tensor& out = (*outputs)[k];
    if (out.dtype() != DType::kF32) continue;
    const bool used = std::find(in_loss.begin(), in_loss.end(), k) != in_loss.end();
    absl::StatusOr<Tensor> grad = Tensor::Zeros(out.shape(), DType::kF32);
    if (!grad.ok()) return ::testing::AssertionFailure() << grad.status();
    if (used) {
      FillUniformCpu(PhiloxState{options.seed, k, 0}, -1.0f, 1.0f, grad->span<float>());
      weights[k] = *grad;
    }
    output_grads[k] = *std::move(grad);
  }

  absl::StatusOr<std::vector<Tensor>> analytic = backward(work, *outputs, output_grads);
  if (!analytic.ok()) return ::testing::AssertionFailure() << "backward: " << analytic.status();
  if (analytic->size() != work.size()) {
    return ::testing::AssertionFailure() << "backward returned " << analytic->size()
                                         << " gradients for " << work.size() << " inputs";
  }

  std::vector<int> to_check = options.inputs_to_check;
  if (to_check.empty()) {
    for (size_t i = 0; i < work.size(); ++i) {
      if (work[i].dtype() == DType::kF32) to_check.push_back(static_cast<int>(i));
    }
  }
  std::vector<Mismatch> mismatches;
  int64_t checked = 0;
  double max_error = 0;
  for (int i : to_check) {
    const Tensor& grad = (*analytic)[i];
    if (!grad.defined() || grad.shape() != work[i].shape() || grad.dtype() != DType::kF32) {
      return ::testing::AssertionFailure()
             << "gradient of input " << i << " is " << (grad.defined() ? grad.DebugString() : "undefined")
             << ", expected the input's shape " << work[i].DebugString();
    }
    absl::StatusOr<Tensor> host_grad = CopyToDevice(grad, Device::Cpu());
    if (!host_grad.ok()) return ::testing::AssertionFailure() << host_grad.status();
    float* x = work[i].data<float>();
    for (int64_t index : ElementsToCheck(work[i].num_elements(), i, options)) {
      const float original = x[index];
      const float plus = static_cast<float>(original + options.step);
      const float minus = static_cast<float>(original - options.step);
      x[index] = plus;
      absl::StatusOr<double> loss_plus = Loss(forward, work, weights);
      x[index] = minus;
      absl::StatusOr<double> loss_minus = Loss(forward, work, weights);
      x[index] = original;
      if (!loss_plus.ok()) return ::testing::AssertionFailure() << loss_plus.status();
      if (!loss_minus.ok()) return ::testing::AssertionFailure() << loss_minus.status();
      const double numeric = (*loss_plus - *loss_minus) /
                             (static_cast<double>(plus) - static_cast<double>(minus));
      const double analytic_value = host_grad->data<float>()[index];
      const double error = std::isfinite(analytic_value) ? std::abs(numeric - analytic_value)
                                                         : INFINITY;
      const double allowed =
          options.atol + options.rtol * std::max(std::abs(numeric), std::abs(analytic_value));
      max_error = std::max(max_error, error);
      ++checked;
      if (!(error <= allowed)) {
        mismatches.push_back({i, index, numeric, analytic_value, error - allowed});
      }
    }
  }
  if (mismatches.empty()) {
    return ::testing::AssertionSuccess()
           << checked << " elements checked, max error " << max_error;
  }
  std::sort(mismatches.begin(), mismatches.end(),
            [](const Mismatch& a, const Mismatch& b) { return a.excess > b.excess; });
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << mismatches.size() << " of " << checked
          << " checked gradient elements differ (|numeric - analytic| > " << options.atol
          << " + " << options.rtol << " * max(|numeric|, |analytic|), step " << options.step
          << "); worst:";
  for (size_t m = 0; m < std::min<size_t>(mismatches.size(), 8); ++m) {
    failure << "\n  input " << mismatches[m].input << " " << work[mismatches[m].input].DebugString()
            << " element " << mismatches[m].index << ": numeric " << mismatches[m].numeric
            << ", analytic " << mismatches[m].analytic;
  }
  return failure;
}

}  // namespace testing
}  // namespace tfm

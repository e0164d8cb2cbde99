// PyTorch parity for op tests: run a PyTorch snippet on the same inputs and
// compare tensors.
//
//   absl::StatusOr<NamedTensors> ref = TorchReference(R"py(
//       y = x @ w.t() + b
//       dx, dw, db = grads(y, dy, [x, w, b])
//   )py", {{"x", x}, {"w", w}, {"b", b}, {"dy", dy}}, {"y", "dx", "dw", "db"});
//   ASSERT_TRUE(ref.ok()) << ref.status();
//   EXPECT_TRUE(AllClose(y, ref->at("y")));
//
// How the snippet runs (a fresh peer interpreter per call, ~1-2 s):
// - `torch`, `np` (numpy) and `F` (torch.nn.functional) are imported.
// - Each input is a global torch tensor named by its key (keys must be Python
//   identifiers). Floating inputs arrive with requires_grad=True, so the
//   snippet can differentiate with respect to any of them.
// - `grads(outputs, upstream, inputs)` returns the gradients of
//   sum(outputs * upstream) with respect to each of `inputs` (a list), with
//   zeros for inputs that do not reach the outputs. `outputs`/`upstream` are a
//   tensor each or lists of tensors.
// - The snippet may be indented (it is dedented) and may compute in float64
//   (e.g. `x.double()`): floating outputs are saved as f32, integer outputs as
//   i32 (if int32) or i64, so every output comes back as an engine dtype.
// - Each name in `outputs` must be a global the snippet defines (a tensor, a
//   numpy array or a Python number).
// Inputs travel as .npy files (f32, i32, i64) under TEST_TMPDIR. A failing
// snippet or a missing peer environment is an error status carrying Python's
// stderr, never a skip.
#ifndef TFM_TESTS_UTIL_TORCH_PARITY_H_
#define TFM_TESTS_UTIL_TORCH_PARITY_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "gtest/gtest.h"

namespace tfm {
namespace testing {

using NamedTensors = std::map<std::string, Tensor>;

// Runs `python_body` in the peer with `inputs` and returns the globals named
// in `outputs` as host tensors.
absl::StatusOr<NamedTensors> TorchReference(const std::string& python_body,
                                            const NamedTensors& inputs,
                                            const std::vector<std::string>& outputs);

// When two tensors count as equal. Element i passes when
//   |actual_i - expected_i| <= atol + rtol * scale_i,
// where scale_i = |expected_i|, or max_j |expected_j| with relative_to_max.
// The defaults (1e-5) are the parity bar for f32 ops whose outputs are each a
// short computation. Use relative_to_max for outputs that are sums of many
// (hundreds+) terms, such as matmul and reduction gradients: their rounding
// error grows with the size of the terms, not of the result, and an element
// that cancels to near zero would otherwise demand an absurd relative accuracy.
struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-5;
  bool relative_to_max = false;
};

// Tolerance for sums of many terms: rtol against the largest magnitude.
inline Tolerance SumTolerance(double rtol = 1e-5) {
  return Tolerance{.atol = 0.0, .rtol = rtol, .relative_to_max = true};
}

// Success when shapes and dtypes match and every element passes `tolerance`
// (integers must be equal; NaN only matches NaN). The failure message gives
// the shapes, the max absolute and relative errors, the worst element and the
// number of failing elements.
::testing::AssertionResult AllClose(const Tensor& actual, const Tensor& expected,
                                    const Tolerance& tolerance = {});

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TESTS_UTIL_TORCH_PARITY_H_

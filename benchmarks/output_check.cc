#include "benchmarks/output_check.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace bench {
namespace {

// The CUDA unit tests' bar for bf16 outputs: 1e-2 where f32 has 1e-5
// (bf16 keeps 8 bits of mantissa: one rounding is up to 2^-9 relative).
testing::Tolerance ForDType(const testing::Tolerance& f32, DType dtype) {
  if (dtype != DType::kBF16) return f32;
  if (f32.relative_to_max) return testing::SumTolerance(1e-2);
  return testing::Tolerance{.atol = 1e-2, .rtol = 1e-2};
}

// Each element of `out` is 0 (dropped) or input / (1 - p) (kept, to the
// unit tests' 1e-5, 1e-2 in bf16), and the dropped fraction is p to within
// 0.01 (at 2M elements a fair mask is within 0.001).
absl::Status CheckDropoutPattern(const Tensor& input, const Tensor& out, double p, DType dtype) {
  const double tolerance = dtype == DType::kBF16 ? 1e-2 : 1e-5;
  if (input.shape() != out.shape()) return absl::InternalError("dropout output shape differs");
  const float* x = input.data<float>();
  const float* y = out.data<float>();
  const double keep = 1.0 / (1.0 - p);
  int64_t dropped = 0;
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    if (y[i] == 0.0f && x[i] != 0.0f) {
      ++dropped;
    } else if (std::abs(y[i] - x[i] * keep) > tolerance + tolerance * std::abs(x[i] * keep)) {
      return absl::InternalError(absl::StrFormat(
          "element %d is %g, neither 0 nor input %g / (1 - %g)", i, y[i], x[i], p));
    }
  }
  const double fraction = static_cast<double>(dropped) / out.num_elements();
  if (std::abs(fraction - p) > 0.01) {
    return absl::InternalError(absl::StrFormat("dropped %.4f of the elements, not %g", fraction, p));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckOutputs(const OpCase& op_case, const std::vector<NamedTensor>& inputs,
                          const std::vector<Tensor>& ours, const std::vector<Tensor>& torch) {
  if (ours.size() != torch.size()) {
    return absl::InternalError(
        absl::StrCat("ours has ", ours.size(), " outputs, PyTorch ", torch.size()));
  }
  for (size_t i = 0; i < ours.size(); ++i) {
    if (op_case.check == Check::kDropoutPattern) {
      const Tensor& input = inputs.back().tensor;
      absl::Status status = CheckDropoutPattern(input, ours[i], kDropoutP, op_case.dtype);
      if (!status.ok()) return absl::InternalError(absl::StrCat("ours: ", status.message()));
      status = CheckDropoutPattern(input, torch[i], kDropoutP, op_case.dtype);
      if (!status.ok()) return absl::InternalError(absl::StrCat("PyTorch: ", status.message()));
      continue;
    }
    const ::testing::AssertionResult close =
        testing::AllClose(ours[i], torch[i], ForDType(op_case.tolerance, op_case.dtype));
    if (!close) {
      return absl::InternalError(absl::StrCat("output ", i, ": ", close.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace bench
}  // namespace tfm

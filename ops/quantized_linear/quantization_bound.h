// What an int8 product should give, and how far from it quantization may
// take it: the f32 reference of quantized_linear (x W^T + b in double) with
// each output's bound on the quantization error. The kernel tests hold every
// kernel to it, and benchmarks/int8_linear checks its cases against it
// before timing them.
//
// With per-row steps sx = (max(0, x) - min(0, x)) / L (L = 255, or 127 for
// the AVX2 kernel: Int8ActivationLevels) and sw = max |w| / 127, every x is
// within sx / 2 of its level and every w within sw / 2 of its level, so
//   |x^ w^ - x w| <= sx / 2 (|w| + sw / 2) + |x| sw / 2
// per term, summed over the inputs; plus float rounding of the final
// scaling (1e-5 of sum |x w|, far above float's 6e-8 per operation).
#ifndef TFM_OPS_QUANTIZED_LINEAR_QUANTIZATION_BOUND_H_
#define TFM_OPS_QUANTIZED_LINEAR_QUANTIZATION_BOUND_H_

#include <optional>
#include <vector>

#include "core/tensor.h"

namespace tfm {

struct QuantizationReference {
  std::vector<double> y;      // [rows * out], row-major.
  std::vector<double> bound;  // The error each output may show.
};

// For host f32 x [rows, in], w [out, in], b [out] (optional), max(0, .)
// with `relu`, and activations quantized to `levels` steps.
QuantizationReference QuantizedLinearReference(const Tensor& x, const Tensor& w,
                                               const std::optional<Tensor>& b, bool relu,
                                               int levels);

// The largest |y - reference| / bound over the outputs of host f32 `y`
// (<= 1: every output within its bound).
double WorstBoundFraction(const Tensor& y, const QuantizationReference& reference);

}  // namespace tfm

#endif  // TFM_OPS_QUANTIZED_LINEAR_QUANTIZATION_BOUND_H_

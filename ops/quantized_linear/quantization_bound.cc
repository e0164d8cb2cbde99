#include "ops/quantized_linear/quantization_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tfm {

QuantizationReference QuantizedLinearReference(const Tensor& x, const Tensor& w,
                                               const std::optional<Tensor>& b, bool relu,
                                               int levels) {
  const std::vector<float> xs = x.ToVector<float>(), ws = w.ToVector<float>();
  const int64_t in = w.dim(1), out = w.dim(0), rows = static_cast<int64_t>(xs.size()) / in;
  const std::vector<float> bs = b.has_value() ? b->ToVector<float>() : std::vector<float>(out, 0);
  std::vector<double> sw(out, 0);
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t k = 0; k < in; ++k) sw[o] = std::max<double>(sw[o], std::abs(ws[o * in + k]));
    sw[o] /= 127.0;
  }
  QuantizationReference ref;
  ref.y.reserve(rows * out);
  ref.bound.reserve(rows * out);
  for (int64_t r = 0; r < rows; ++r) {
    double lo = 0, hi = 0;
    for (int64_t k = 0; k < in; ++k) {
      lo = std::min<double>(lo, xs[r * in + k]);
      hi = std::max<double>(hi, xs[r * in + k]);
    }
    const double sx = (hi - lo) / levels;
    for (int64_t o = 0; o < out; ++o) {
      double sum = bs[o], bound = 1e-6 + 1e-6 * std::abs(bs[o]);
      for (int64_t k = 0; k < in; ++k) {
        const double xv = xs[r * in + k], wv = ws[o * in + k];
        sum += xv * wv;
        bound += sx / 2 * (std::abs(wv) + sw[o] / 2) + std::abs(xv) * sw[o] / 2 +
                 1e-5 * std::abs(xv * wv);
      }
      ref.y.push_back(relu ? std::max(sum, 0.0) : sum);
      ref.bound.push_back(bound);
    }
  }
  return ref;
}

double WorstBoundFraction(const Tensor& y, const QuantizationReference& reference) {
  const std::vector<float> got = y.ToVector<float>();
  if (got.size() != reference.y.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double fraction = std::abs(got[i] - reference.y[i]) / reference.bound[i];
    // NaN is never within the bound.
    worst = std::isnan(fraction) ? std::numeric_limits<double>::infinity()
                                 : std::max(worst, fraction);
  }
  return worst;
}

}  // namespace tfm

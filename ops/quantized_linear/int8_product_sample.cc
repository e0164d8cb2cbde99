#include "ops/quantized_linear/int8_product_sample.h"

#include <cmath>

namespace tfm {

Int8ProductSample::Int8ProductSample(int64_t rows_in, int64_t groups_in, int64_t out_in,
                                     uint32_t seed)
    : rows(rows_in), groups(groups_in), out(out_in) {
  uint32_t state = seed;
  auto next = [&state] {  // A linear congruential generator's high bits.
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  const int64_t panels = (out + kInt8PanelColumns - 1) / kInt8PanelColumns;
  const int64_t padded = (rows + kInt8AmxTileRows - 1) / kInt8AmxTileRows * kInt8AmxTileRows;
  const int64_t inputs = groups * kInt8GroupInputs;
  x_panels.assign(groups * rows * kInt8GroupInputs, 0);
  x_rows.assign(padded * inputs, 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < inputs; ++k) {
      const uint8_t level = static_cast<uint8_t>(next() % 256);
      x_panels[((k / kInt8GroupInputs) * rows + r) * kInt8GroupInputs + k % kInt8GroupInputs] =
          level;
      x_rows[r * inputs + k] = level;
    }
    zero_points.push_back(static_cast<int32_t>(next() % 256));
    x_scales.push_back(1e-3f * static_cast<float>(1 + next() % 100));
  }
  constexpr int64_t kGroupBytes = kInt8PanelColumns * kInt8GroupInputs;
  packed.assign(panels * groups * kGroupBytes, 0);
  for (int64_t j = 0; j < out; ++j) {
    int32_t sum = 0;
    for (int64_t k = 0; k < inputs; ++k) {
      const int8_t q = static_cast<int8_t>(static_cast<int>(next() % 255) - 127);
      packed[((j / kInt8PanelColumns) * groups + k / kInt8GroupInputs) * kGroupBytes +
             (j % kInt8PanelColumns) * kInt8GroupInputs + k % kInt8GroupInputs] = q;
      sum += q;
    }
    row_sums.push_back(sum);
    scales.push_back(1e-3f * static_cast<float>(1 + next() % 100));
    bias.push_back(static_cast<float>(next() % 1000) / 1000.0f - 0.5f);
  }
}

Int8Product Int8ProductSample::Product(bool row_major, bool relu, std::vector<float>* y) const {
  y->assign(rows * out, -1.0f);
  Int8Product p;
  p.rows = rows;
  p.groups = groups;
  p.out = out;
  p.x = row_major ? x_rows.data() : x_panels.data();
  p.x_zero_points = zero_points.data();
  p.x_scales = x_scales.data();
  p.packed = packed.data();
  p.scales = scales.data();
  p.row_sums = row_sums.data();
  p.bias = bias.data();
  p.relu = relu;
  p.y = y->data();
  return p;
}

bool Int8RowMajorKernelAgrees(Int8PanelsFn panels, const Int8ProductSample& sample, bool relu,
                              int64_t* first_bad_row, int64_t* first_bad_column) {
  const int64_t count = (sample.out + kInt8PanelColumns - 1) / kInt8PanelColumns;
  std::vector<float> want, got;
  Int8PanelsScalar(sample.Product(/*row_major=*/false, relu, &want), 0, count);
  const Int8Product p = sample.Product(/*row_major=*/true, relu, &got);
  panels(p, 0, 1);
  panels(p, 1, count);
  for (int64_t i = 0; i < sample.rows * sample.out; ++i) {
    // The same integer sums; the float finish may round differently in the
    // last bit (operation order, contraction).
    if (!(std::abs(got[i] - want[i]) <= 1e-6f * (1.0f + std::abs(want[i])))) {
      *first_bad_row = i / sample.out;
      *first_bad_column = i % sample.out;
      return false;
    }
  }
  return true;
}

}  // namespace tfm

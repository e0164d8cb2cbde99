// A random int8 product (activation levels, packed weights, zero points,
// scales, row sums, bias) in both activation layouts, the vector kernels'
// and AMX's (int8_panels.h): what the AMX kernel's tests and its check at
// start-up (quantized_linear.cc) compare against the scalar reference.
#ifndef TFM_OPS_QUANTIZED_LINEAR_INT8_PRODUCT_SAMPLE_H_
#define TFM_OPS_QUANTIZED_LINEAR_INT8_PRODUCT_SAMPLE_H_

#include <cstdint>
#include <vector>

#include "ops/quantized_linear/int8_panels.h"

namespace tfm {

struct Int8ProductSample {
  // Levels, weights and scales drawn from `seed` (a fixed generator: the
  // same sample on every machine).
  Int8ProductSample(int64_t rows, int64_t groups, int64_t out, uint32_t seed);

  // The product over the sample writing into `y` (resized, filled with -1):
  // x row-major (AMX) or [groups, rows, 4] (the other kernels).
  Int8Product Product(bool row_major, bool relu, std::vector<float>* y) const;

  int64_t rows, groups, out;
  std::vector<uint8_t> x_panels;  // [groups, rows, 4]
  std::vector<uint8_t> x_rows;    // [rows padded to kInt8AmxTileRows, groups * 4]
  std::vector<int32_t> zero_points;
  std::vector<float> x_scales;
  std::vector<int8_t> packed;  // [panels, groups, 16, 4]
  std::vector<float> scales, bias;
  std::vector<int32_t> row_sums;
};

// Whether `panels` (an AMX-layout kernel) gives the scalar reference's
// outputs, to float rounding, over `sample` at every panel, a first range
// of one panel and the rest (as two threads take them).
bool Int8RowMajorKernelAgrees(Int8PanelsFn panels, const Int8ProductSample& sample, bool relu,
                              int64_t* first_bad_row, int64_t* first_bad_column);

}  // namespace tfm

#endif  // TFM_OPS_QUANTIZED_LINEAR_INT8_PRODUCT_SAMPLE_H_

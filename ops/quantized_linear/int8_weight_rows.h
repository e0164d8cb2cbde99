// A weight's int8 form as a model file stores it: the quantized rows in
// their natural [out, in] order with a scale per row, beside the packed
// form quantized_linear multiplies by (quantized_linear.h). A quantized
// model directory (tasks/common/quantized_model.h) keeps the rows, since
// the packed layout is this engine's, and packs them when it loads.
#ifndef TFM_OPS_QUANTIZED_LINEAR_INT8_WEIGHT_ROWS_H_
#define TFM_OPS_QUANTIZED_LINEAR_INT8_WEIGHT_ROWS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "ops/quantized_linear/quantized_linear.h"

namespace tfm {

// W[j, :] ~ scales[j] * values[j, :], values in [-127, 127].
struct Int8Rows {
  Tensor values;  // i8 [out, in]
  Tensor scales;  // f32 [out]
};

// OK when `rows` is i8 [out, in] with f32 [out] scales on the CPU, else
// InvalidArgument saying what is wrong (callers add the tensor's name).
absl::Status CheckInt8Rows(const Int8Rows& rows);

// weight [out, in] f32 on the CPU -> its rows quantized exactly as
// QuantizeLinearWeight quantizes them (it is the one definition of the
// rounding: its packed weight is read back into row order), so that
// PackInt8Rows of the result is bit for bit QuantizeLinearWeight(weight).
absl::StatusOr<Int8Rows> QuantizeWeightRows(const Tensor& weight);

// The packed form quantized_linear multiplies by, with the row sums its
// zero-point correction needs; no f32 on the way.
absl::StatusOr<QuantizedWeight> PackInt8Rows(const Int8Rows& rows);

// scales[j] * values[j, :] as f32 [out, in]: what f32 computations (the
// encoder, embedding lookups) use of an int8 model.
absl::StatusOr<Tensor> DequantizeInt8Rows(const Int8Rows& rows);

}  // namespace tfm

#endif  // TFM_OPS_QUANTIZED_LINEAR_INT8_WEIGHT_ROWS_H_

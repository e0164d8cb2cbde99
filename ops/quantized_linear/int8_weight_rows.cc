#include "ops/quantized_linear/int8_weight_rows.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "ops/quantized_linear/int8_panels.h"

namespace tfm {
namespace {

constexpr int64_t kGroupBytes = kInt8PanelColumns * kInt8GroupInputs;

// Where weight (row, k) sits in the packed layout [panels, groups, 16, 4]
// with `groups` groups of 4 inputs: the one map that packing and
// unpacking share.
int64_t PackedIndex(int64_t row, int64_t k, int64_t groups) {
  const int64_t panel = row / kInt8PanelColumns, column = row % kInt8PanelColumns;
  return (panel * groups + k / kInt8GroupInputs) * kGroupBytes + column * kInt8GroupInputs +
         k % kInt8GroupInputs;
}

int64_t GroupsOf(int64_t in) { return (in + kInt8GroupInputs - 1) / kInt8GroupInputs; }

}  // namespace

absl::Status CheckInt8Rows(const Int8Rows& rows) {
  const Tensor& values = rows.values;
  const Tensor& scales = rows.scales;
  if (!values.defined() || values.dtype() != DType::kI8 || values.rank() != 2 ||
      !values.device().is_cpu()) {
    return absl::InvalidArgumentError(
        absl::StrCat("int8 values must be i8 [out, in] on the CPU, got ",
                     values.defined() ? values.DebugString() : "none"));
  }
  if (!scales.defined() || scales.dtype() != DType::kF32 || scales.rank() != 1 ||
      scales.dim(0) != values.dim(0) || !scales.device().is_cpu()) {
    return absl::InvalidArgumentError(
        absl::StrCat("scales must be f32 [", values.dim(0), "] (one per row of the i8 values ",
                     ShapeToString(values.shape()), "), got ",
                     scales.defined() ? scales.DebugString() : "none"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Int8Rows> QuantizeWeightRows(const Tensor& weight) {
  if (!QuantizedLinearSupported(weight)) {
    return absl::InvalidArgumentError(
        absl::StrCat("int8 rows of a weight need f32 [out, in] on the CPU, got ",
                     weight.DebugString()));
  }
  TFM_ASSIGN_OR_RETURN(const QuantizedWeight packed, QuantizeLinearWeight(weight));
  const int64_t out = weight.dim(0), in = weight.dim(1), groups = GroupsOf(in);
  TFM_ASSIGN_OR_RETURN(Tensor values, Tensor::Empty({out, in}, DType::kI8));
  const int8_t* from = packed.packed.data<int8_t>();
  int8_t* to = values.data<int8_t>();
  for (int64_t row = 0; row < out; ++row) {
    for (int64_t k = 0; k < in; ++k) to[row * in + k] = from[PackedIndex(row, k, groups)];
  }
  return Int8Rows{std::move(values), packed.scales};
}

absl::StatusOr<QuantizedWeight> PackInt8Rows(const Int8Rows& rows) {
  TFM_RETURN_IF_ERROR(CheckInt8Rows(rows));
  const int64_t out = rows.values.dim(0), in = rows.values.dim(1), groups = GroupsOf(in);
  const int64_t panels = (out + kInt8PanelColumns - 1) / kInt8PanelColumns;
  // Zeros past `out` and past `in`, as quantize_linear_weight leaves them.
  TFM_ASSIGN_OR_RETURN(Tensor packed, Tensor::Zeros({panels, groups, kInt8PanelColumns,
                                                     kInt8GroupInputs},
                                                    DType::kI8));
  TFM_ASSIGN_OR_RETURN(Tensor row_sums, Tensor::Empty({out}, DType::kI32));
  const int8_t* from = rows.values.data<int8_t>();
  int8_t* to = packed.data<int8_t>();
  int32_t* sums = row_sums.data<int32_t>();
  for (int64_t row = 0; row < out; ++row) {
    int32_t sum = 0;
    for (int64_t k = 0; k < in; ++k) {
      const int8_t q = from[row * in + k];
      to[PackedIndex(row, k, groups)] = q;
      sum += q;
    }
    sums[row] = sum;
  }
  return QuantizedWeight{std::move(packed), rows.scales, std::move(row_sums)};
}

absl::StatusOr<Tensor> DequantizeInt8Rows(const Int8Rows& rows) {
  TFM_RETURN_IF_ERROR(CheckInt8Rows(rows));
  const int64_t out = rows.values.dim(0), in = rows.values.dim(1);
  TFM_ASSIGN_OR_RETURN(Tensor weight, Tensor::Empty({out, in}, DType::kF32));
  const int8_t* q = rows.values.data<int8_t>();
  const float* scales = rows.scales.data<float>();
  float* w = weight.data<float>();
  for (int64_t row = 0; row < out; ++row) {
    for (int64_t k = 0; k < in; ++k) w[row * in + k] = scales[row] * q[row * in + k];
  }
  return weight;
}

}  // namespace tfm

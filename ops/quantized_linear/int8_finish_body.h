// Writing a kernel's int32 sums out as floats (the zero-point correction,
// scales, bias and ReLU through Isa::Finish), kLanes columns at a time, the
// last panel's partial vector too. Included inside a kernel file's target
// region and anonymous namespace after `struct Isa` (int8_panels_body.h
// lists what Isa provides; Finish and kLanes are what this part uses), by
// the vector bodies (int8_panels_body.h) and the AMX one (int8_amx_body.h).
#ifndef TFM_OPS_QUANTIZED_LINEAR_INT8_FINISH_BODY_H_
#define TFM_OPS_QUANTIZED_LINEAR_INT8_FINISH_BODY_H_

// The last panel's columns past `out` (count < kLanes of them): through
// zero-padded copies. Out of line: FinishVector, inlined everywhere, stays
// small.
__attribute__((noinline)) void FinishPartialVector(const Int8Product& p, typename Isa::Acc acc,
                                                   int64_t row, int64_t column, int64_t count) {
  const float* bias = p.bias != nullptr ? p.bias + column : nullptr;
  float scales[Isa::kLanes] = {}, biases[Isa::kLanes] = {}, ys[Isa::kLanes];
  int32_t sums[Isa::kLanes] = {};
  for (int64_t j = 0; j < count; ++j) {
    scales[j] = p.scales[column + j];
    sums[j] = p.row_sums[column + j];
    if (bias != nullptr) biases[j] = bias[j];
  }
  Isa::Finish(acc, p.x_zero_points[row], p.x_scales[row], scales, sums, biases, p.relu,
              /*stream=*/false, ys);
  float* y = p.y + row * p.out + column;
  for (int64_t j = 0; j < count; ++j) y[j] = ys[j];
}

// Output row `row`, columns column .. column + kLanes - 1 (those below
// `out`) from one accumulator. Always inlined: GCC kept it a call per
// accumulator, 5% of int8 decoding's time at d_model 256 (perf).
__attribute__((always_inline)) inline void FinishVector(const Int8Product& p, typename Isa::Acc acc,
                                                        int64_t row, int64_t column) {
  if (column >= p.out) return;
  if (p.out - column < Isa::kLanes) return FinishPartialVector(p, acc, row, column, p.out - column);
  Isa::Finish(acc, p.x_zero_points[row], p.x_scales[row], p.scales + column, p.row_sums + column,
              p.bias != nullptr ? p.bias + column : nullptr, p.relu, p.stream_y,
              p.y + row * p.out + column);
}

#endif  // TFM_OPS_QUANTIZED_LINEAR_INT8_FINISH_BODY_H_

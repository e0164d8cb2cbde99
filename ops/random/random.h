// Random tensors from Philox streams: random_uniform and random_normal.
// For the same PhiloxState every device produces the same numbers (exactly
// for uniform; within float rounding of log/sin/cos for normal).
#ifndef TFM_OPS_RANDOM_RANDOM_H_
#define TFM_OPS_RANDOM_RANDOM_H_

#include "absl/status/statusor.h"
#include "core/rng.h"
#include "core/tensor.h"

namespace tfm {

// Uniform in [low, high), f32.
absl::StatusOr<Tensor> RandomUniform(const Shape& shape, const PhiloxState& state, float low,
                                     float high, const Device& device = Device::Cpu());

// Normal(mean, stddev^2) by Box-Muller, f32.
absl::StatusOr<Tensor> RandomNormal(const Shape& shape, const PhiloxState& state, float mean,
                                    float stddev, const Device& device = Device::Cpu());

}  // namespace tfm

#endif  // TFM_OPS_RANDOM_RANDOM_H_

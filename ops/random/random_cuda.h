// Launchers of the Philox CUDA kernels (plain C++: included by host code).
#ifndef TFM_OPS_RANDOM_RANDOM_CUDA_H_
#define TFM_OPS_RANDOM_RANDOM_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

// Same layout as core/rng.h: element i from block offset + i / 4, lane i % 4.
// Return nullptr or the CUDA error text.
const char* LaunchRandomUniform(float* out, int64_t count, uint64_t seed, uint64_t stream_id,
                                uint64_t offset, float low, float high, StreamHandle stream);
const char* LaunchRandomNormal(float* out, int64_t count, uint64_t seed, uint64_t stream_id,
                               uint64_t offset, float mean, float stddev, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_RANDOM_RANDOM_CUDA_H_

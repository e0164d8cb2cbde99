// Launcher of cast's CUDA kernel (plain C++: included by host code). From
// and To are host element types (float, Half or BFloat16; declarations
// suffice). Returns nullptr or the CUDA error text.
#ifndef TFM_OPS_CAST_CAST_CUDA_H_
#define TFM_OPS_CAST_CAST_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

struct Half;
struct BFloat16;

// out[i] = x[i] converted through f32, rounded to nearest even.
template <typename From, typename To>
const char* LaunchCast(const From* x, To* out, int64_t count, StreamHandle stream);

// One tensor of a list cast in one launch (ops/cuda_multi_tensor.cuh):
// From and To elements, forming chunks first_chunk, first_chunk + 1, ...
// (filled in by the launcher).
struct CastCudaTensor {
  const void* x;
  void* out;
  int64_t count;
  int64_t first_chunk;
};

// LaunchCast over every tensor of the list, in one launch: copies the host
// list into `device_list` on `stream` first.
template <typename From, typename To>
const char* LaunchCastList(CastCudaTensor* tensors, int num_tensors, CastCudaTensor* device_list,
                           StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_CAST_CAST_CUDA_H_

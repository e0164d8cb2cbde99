// Launchers of adam's CUDA kernel (plain C++: included by host code). One
// launch updates a list of tensors (multi-tensor Adam); the op passes a list
// of one. Each returns nullptr or the CUDA error text.
#ifndef TFM_OPS_ADAM_ADAM_CUDA_H_
#define TFM_OPS_ADAM_ADAM_CUDA_H_

#include <cstdint>

#include "core/device.h"
#include "ops/adam/adam_kernel_args.h"

namespace tfm {

// One f32 tensor's state, all device pointers of `count` elements. Its
// elements form chunks first_chunk, first_chunk + 1, ... of the launch.
struct AdamCudaTensor {
  float* param;
  const float* grad;
  float* m;
  float* v;
  int64_t count;
  int64_t first_chunk;
};

// Chunks of a tensor of `count` elements (one block's work each).
int64_t AdamCudaChunks(int64_t count);

// Updates tensors[0..num_tensors) (a device array, first_chunk ascending
// and contiguous from 0, total_chunks in all) as AdamCpu does.
const char* LaunchAdam(const AdamCudaTensor* tensors, int num_tensors, int64_t total_chunks,
                       const AdamStep& step, StreamHandle stream);

// Copies the host list `tensors` into `device_list` (num_tensors entries of
// device memory) on `stream`, fills in first_chunk, and launches.
const char* LaunchAdamFromHost(const AdamCudaTensor* tensors, int num_tensors,
                               AdamCudaTensor* device_list, const AdamStep& step,
                               StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_ADAM_ADAM_CUDA_H_

// The launcher of adam's CUDA kernel (plain C++: included by host code).
// One launch updates a list of tensors: multi_tensor_adam passes all of
// them, adam a list of one. Returns nullptr or the CUDA error text.
#ifndef TFM_OPS_ADAM_ADAM_CUDA_H_
#define TFM_OPS_ADAM_ADAM_CUDA_H_

#include <cstdint>

#include "core/device.h"
#include "ops/adam/adam_kernel_args.h"

namespace tfm {

// One f32 tensor's state, all device pointers of `count` elements. Its
// elements form chunks first_chunk, first_chunk + 1, ... of the launch
// (filled in by the launcher).
struct AdamCudaTensor {
  float* param;
  const float* grad;
  float* m;
  float* v;
  int64_t count;
  int64_t first_chunk;
};

// Numbers the chunks of the host list `tensors`, copies it into
// `device_list` (num_tensors entries of device memory) on `stream`, and
// updates every tensor as AdamCpu does, each gradient multiplied as it is
// read by ClipFactor(*grad_sum_of_squares, max_norm) (a device scalar, or
// nullptr for no clipping); nothing changes when SkipsUpdate(
// grad_sum_of_squares, skip_guard) (device scalars or nullptr).
const char* LaunchAdamFromHost(AdamCudaTensor* tensors, int num_tensors,
                               AdamCudaTensor* device_list, const AdamStep& step,
                               const float* grad_sum_of_squares, const float* skip_guard,
                               double max_norm, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_ADAM_ADAM_CUDA_H_

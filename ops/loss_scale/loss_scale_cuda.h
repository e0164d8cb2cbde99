// Launchers of multi_tensor_scale_by's and loss_scale_step's CUDA kernels
// (plain C++: included by host code). Each returns nullptr or the CUDA
// error text.
#ifndef TFM_OPS_LOSS_SCALE_LOSS_SCALE_CUDA_H_
#define TFM_OPS_LOSS_SCALE_LOSS_SCALE_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

// One f32 tensor of the list, forming chunks first_chunk, first_chunk + 1,
// ... of the launch (filled in by the launcher).
struct ScaleByCudaTensor {
  float* x;
  int64_t count;
  int64_t first_chunk;
};

// Copies the host list into `device_list` on `stream` and multiplies every
// element by *scale (a device scalar), or by 1 / *scale with `reciprocal`.
const char* LaunchScaleBy(ScaleByCudaTensor* tensors, int num_tensors,
                          ScaleByCudaTensor* device_list, const float* scale, bool reciprocal,
                          StreamHandle stream);

// next = StepLossScale of (scale, clean) after `sum_of_squares`: device
// scalars, one thread.
const char* LaunchLossScaleStep(const float* scale, const float* clean,
                                const float* sum_of_squares, int64_t window, float max_scale,
                                float* next_scale, float* next_clean, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_LOSS_SCALE_LOSS_SCALE_CUDA_H_

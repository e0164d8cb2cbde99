// Launchers of multi_tensor_sum_of_squares' and scale_in_place's CUDA
// kernels (plain C++: included by host code). T is the host element type
// (float or BFloat16; declarations suffice). Each returns nullptr or the
// CUDA error text.
#ifndef TFM_OPS_ADAM_GRAD_NORM_CUDA_H_
#define TFM_OPS_ADAM_GRAD_NORM_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

struct BFloat16;

// One tensor of the list: `count` elements of T at device address x,
// forming chunks first_chunk, first_chunk + 1, ... of the launch.
struct SquaresCudaTensor {
  const void* x;
  int64_t count;
  int64_t first_chunk;
};

// Numbers the list's chunks (fills in first_chunk) and returns how many
// there are: the doubles of workspace that LaunchSumOfSquares needs.
int64_t SumOfSquaresChunks(SquaresCudaTensor* tensors, int num_tensors);

// *sum (device f32) = the sum over the host list `tensors` (numbered by
// SumOfSquaresChunks, copied into `device_list` on `stream`) of x^2, in
// double, in two levels with a fixed order (chunks into `workspace`, then
// the chunks), rounded once: the same bits on every run.
template <typename T>
const char* LaunchSumOfSquares(const SquaresCudaTensor* tensors, int num_tensors,
                               int64_t total_chunks, SquaresCudaTensor* device_list,
                               double* workspace, float* sum, StreamHandle stream);

// x *= factor (in f32, one rounding).
template <typename T>
const char* LaunchScaleInPlace(T* x, int64_t count, float factor, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_ADAM_GRAD_NORM_CUDA_H_

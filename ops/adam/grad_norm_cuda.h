// Launchers of sum_of_squares' and scale_in_place's CUDA kernels (plain
// C++: included by host code). T is the host element type (float or
// BFloat16; declarations suffice). Each returns nullptr or the CUDA error
// text.
#ifndef TFM_OPS_ADAM_GRAD_NORM_CUDA_H_
#define TFM_OPS_ADAM_GRAD_NORM_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

struct BFloat16;

// Doubles of workspace that LaunchSumOfSquares needs for `count` elements.
int64_t SumOfSquaresWorkspaceDoubles(int64_t count);

// *sum (device f32) += sum of x^2 in double, in two levels with a fixed
// order (fixed chunks into `workspace`, then the chunks): the same bits on
// every run.
template <typename T>
const char* LaunchSumOfSquares(const T* x, int64_t count, double* workspace, float* sum,
                               StreamHandle stream);

// x *= factor (in f32, one rounding).
template <typename T>
const char* LaunchScaleInPlace(T* x, int64_t count, float factor, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_ADAM_GRAD_NORM_CUDA_H_

// Launchers of layer_norm's CUDA kernels (plain C++: included by host code).
// T is the host element type (float, Half or BFloat16; declarations suffice) of x,
// gain, bias, out and the gradients; mean and rstd are f32. Each returns
// nullptr or the CUDA error text.
#ifndef TFM_OPS_LAYER_NORM_LAYER_NORM_CUDA_H_
#define TFM_OPS_LAYER_NORM_LAYER_NORM_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

struct Half;
struct BFloat16;

// out, mean, rstd of `rows` rows of d elements, as LayerNormCpu.
template <typename T>
const char* LaunchLayerNorm(const T* x, const T* gain, const T* bias, int64_t rows, int64_t d,
                            float eps, T* out, float* mean, float* rstd, StreamHandle stream);

// The f32 workspace LaunchLayerNormBackward needs, in floats.
int64_t LayerNormBackwardWorkspaceFloats(int64_t rows, int64_t d);

// dx row by row; dgain and dbias summed over the rows in two levels (fixed
// chunks of rows into `workspace`, then the chunks in order): no atomics,
// the same bits on every run.
template <typename T>
const char* LaunchLayerNormBackward(const T* dout, const T* x, const T* gain, const float* mean,
                                    const float* rstd, int64_t rows, int64_t d, T* dx, T* dgain,
                                    T* dbias, float* workspace, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_LAYER_NORM_LAYER_NORM_CUDA_H_

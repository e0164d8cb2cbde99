// Launchers of relu's CUDA kernels (plain C++: included by host code). T is
// the host element type (float, Half or BFloat16; declarations suffice).
// Each returns nullptr or the CUDA error text.
#ifndef TFM_OPS_RELU_RELU_CUDA_H_
#define TFM_OPS_RELU_RELU_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

struct Half;
struct BFloat16;

// y[i] = x[i] unless x[i] <= 0 (then +0): NaN propagates, as on the CPU.
template <typename T>
const char* LaunchRelu(const T* x, T* y, int64_t count, StreamHandle stream);

// dx[i] = dout[i] * scale (in f32, rounded once) where out[i] > 0, else +0.
template <typename T>
const char* LaunchReluBackward(const T* dout, const T* out, T* dx, int64_t count, float scale,
                               StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_RELU_RELU_CUDA_H_

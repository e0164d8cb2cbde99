// Launchers of residual_layer_norm's CUDA kernels (plain C++: included by
// host code). T is the host element type (float, Half or BFloat16;
// declarations suffice) of x, h, h_bias, gain, bias, out, sum and the
// gradients; mean and rstd are f32. Each returns nullptr or the CUDA error
// text.
#ifndef TFM_OPS_RESIDUAL_LAYER_NORM_RESIDUAL_LAYER_NORM_CUDA_H_
#define TFM_OPS_RESIDUAL_LAYER_NORM_RESIDUAL_LAYER_NORM_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

struct Half;
struct BFloat16;

// The dropout of h as the kernels see it: element i of h is kept when the
// Philox uniform i of (seed, stream_id, offset) is >= threshold, and kept
// values are multiplied by scale (ops/dropout's DropoutScaling); enabled =
// false (p = 0) draws nothing and keeps all.
struct ResidualDropoutLaunch {
  bool enabled;
  float threshold;
  float scale;
  uint64_t seed;
  uint64_t stream_id;
  uint64_t offset;
};

// sum = x + dropout(h + h_bias) (h_bias may be null), rounded to T once;
// out, mean, rstd = layer_norm of sum, as ResidualLayerNormCpu. Rows of
// d <= 1024, a multiple of 4, with aligned tensors keep sum in registers.
template <typename T>
const char* LaunchResidualLayerNorm(const T* x, const T* h, const T* h_bias, const T* gain,
                                    const T* bias, int64_t rows, int64_t d, float eps,
                                    const ResidualDropoutLaunch& dropout, T* out, T* sum,
                                    float* mean, float* rstd, StreamHandle stream);

// The f32 workspace LaunchResidualLayerNormBackward needs, in floats: the
// same for the fused and the general kernels (3 sums per column and chunk).
int64_t ResidualLayerNormBackwardWorkspaceFloats(int64_t rows, int64_t d);

// dx and dh row by row; dgain, dbias and (when dh_bias is not null) dh_bias
// summed over the rows in two levels (fixed chunks of rows into
// `workspace`, then the chunks in order): no atomics, the same bits on
// every run. Rows of d <= 4096, a multiple of 4, with aligned tensors take
// one kernel that reads dout and sum once for all of it.
template <typename T>
const char* LaunchResidualLayerNormBackward(const T* dout, const T* sum, const T* gain,
                                            const float* mean, const float* rstd, int64_t rows,
                                            int64_t d, const ResidualDropoutLaunch& dropout,
                                            T* dx, T* dh, T* dgain, T* dbias, T* dh_bias,
                                            float* workspace, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_RESIDUAL_LAYER_NORM_RESIDUAL_LAYER_NORM_CUDA_H_

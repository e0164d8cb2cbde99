// Launchers of softmax's CUDA kernels (plain C++: included by host code). T
// is the host element type (float, Half or BFloat16; declarations suffice) of x,
// out, dout and dx. Each returns nullptr or the CUDA error text.
#ifndef TFM_OPS_SOFTMAX_SOFTMAX_CUDA_H_
#define TFM_OPS_SOFTMAX_SOFTMAX_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

struct Half;
struct BFloat16;

// A mask of masked_softmax as the kernels read it: at most one of
// `additive` (f32) and `removing` (i32, nonzero removes) is set; row r of x
// finds its mask row at sum over axes a of ((r / inner_a) % extents[a]) *
// strides[a], with MaskRows' axes, adjacent ones merged where they can be.
struct SoftmaxCudaMask {
  static constexpr int kMaxAxes = 8;
  const float* additive = nullptr;
  const int32_t* removing = nullptr;
  int num_axes = 0;
  int64_t extents[kMaxAxes] = {};
  int64_t strides[kMaxAxes] = {};
};

// softmax (mask without pointers) or masked_softmax of `rows` rows of n.
template <typename T>
const char* LaunchSoftmax(const T* x, const SoftmaxCudaMask& mask, int64_t rows, int64_t n, T* out,
                          StreamHandle stream);

template <typename T>
const char* LaunchLogSoftmax(const T* x, int64_t rows, int64_t n, T* out, StreamHandle stream);

// dx = out * (dout - sum(dout * out)) row by row.
template <typename T>
const char* LaunchSoftmaxBackward(const T* dout, const T* out, int64_t rows, int64_t n, T* dx,
                                  StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_SOFTMAX_SOFTMAX_CUDA_H_

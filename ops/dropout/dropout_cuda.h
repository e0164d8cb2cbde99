// Launchers of dropout's CUDA kernels (plain C++: included by host code). T
// is the host element type (float, Half or BFloat16; declarations suffice).
// Each returns nullptr or the CUDA error text.
#ifndef TFM_OPS_DROPOUT_DROPOUT_CUDA_H_
#define TFM_OPS_DROPOUT_DROPOUT_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

struct Half;
struct BFloat16;

// out[i] = keep ? in[i] * scale : +0, keep = Philox uniform i of (seed,
// stream_id, offset) >= threshold: the CPU kernel's stream, indexing and
// threshold (dropout.h). With a mask (DropoutMaskWords(count) words), also
// its keep bits, packed as on the CPU. Serves dropout, dropout_backward and
// dropout_with_mask.
template <typename T>
const char* LaunchDropout(const T* in, T* out, uint32_t* mask, int64_t count, float threshold,
                          float scale, uint64_t seed, uint64_t stream_id, uint64_t offset,
                          StreamHandle stream);

// dx[i] = bit i of mask ? dout[i] * scale : +0; a null mask keeps all (p = 0,
// where the CPU copies dout whatever the mask says).
template <typename T>
const char* LaunchDropoutBackwardMasked(const T* dout, const uint32_t* mask, T* dx, int64_t count,
                                        float scale, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_DROPOUT_DROPOUT_CUDA_H_

// Launchers of the positional encoding CUDA kernels (plain C++: included by
// host code). T is the host element type (float, Half or BFloat16;
// declarations suffice). Each returns nullptr or the CUDA error text.
#ifndef TFM_OPS_POSITIONAL_ENCODING_POSITIONAL_ENCODING_CUDA_H_
#define TFM_OPS_POSITIONAL_ENCODING_POSITIONAL_ENCODING_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

struct Half;
struct BFloat16;

// pe[p, :] = PE(offset + p) for p < length, [length, d_model].
template <typename T>
const char* LaunchPositionalEncoding(T* pe, int64_t length, int64_t d_model, int64_t offset,
                                     StreamHandle stream);

// Floats of the table that the add launchers below take as scratch (device
// memory the caller allocates on the launch's stream).
inline int64_t AddPositionalEncodingTableFloats(int64_t length, int64_t d_model) {
  return length * d_model;
}

// out = x + PE(offset + (row % length)) row by row, x [count / d_model,
// d_model] with rows cycling through `length` positions. The encodings are
// computed once each into `table` (length x d_model floats), then added:
// the same bits as computing them per element, without that element's
// double exp, sin or cos and 64-bit divisions (10 times the add's memory
// time on an H200).
template <typename T>
const char* LaunchAddPositionalEncoding(const T* x, T* out, int64_t count, int64_t length,
                                        int64_t d_model, int64_t offset, float* table,
                                        StreamHandle stream);

// LaunchAddPositionalEncoding with offset = *position, read by the kernel
// from device memory (no host sync: a captured graph replays it at every
// step); the caller guarantees *position >= 0.
template <typename T>
const char* LaunchAddPositionalEncodingAt(const T* x, T* out, int64_t count, int64_t length,
                                          int64_t d_model, const int32_t* position, float* table,
                                          StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_POSITIONAL_ENCODING_POSITIONAL_ENCODING_CUDA_H_

// Launchers of add's CUDA kernels (plain C++: included by host code).
// T is the host element type: float, Half or BFloat16 (core/dtype.h); only
// pointers to it cross this header, so declarations suffice. Each launcher
// computes in f32, rounds once at the store, and returns nullptr or the CUDA
// error text.
#ifndef TFM_OPS_ADD_ADD_CUDA_H_
#define TFM_OPS_ADD_ADD_CUDA_H_

#include <cstddef>
#include <cstdint>

#include "core/device.h"

namespace tfm {

struct Half;
struct BFloat16;

// out[i] = a[i] + b[i % period] for i < count (b broadcast over a's leading
// axes).
template <typename T>
const char* LaunchAdd(const T* a, const T* b, T* out, int64_t count, int64_t period,
                      StreamHandle stream);

// The f32 scratch LaunchSumRows needs for an in [rows, cols]: floats, maybe 0.
int64_t SumRowsCudaScratch(int64_t rows, int64_t cols);

// out[c] = sum_r in[r * cols + c], summed in f32: row chunks reduced in
// parallel into `scratch` (SumRowsCudaScratch floats), then the chunks in
// order. The order depends on the shape only, so results are reproducible.
template <typename T>
const char* LaunchSumRows(const T* in, int64_t rows, int64_t cols, float* scratch, T* out,
                          StreamHandle stream);

// An asynchronous device-to-device copy of `bytes` on `stream`.
const char* LaunchDeviceCopy(void* dst, const void* src, size_t bytes, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_ADD_ADD_CUDA_H_

// Launchers of linear's own CUDA kernels (plain C++: included by host code).
// The products themselves are cuBLASLt GEMMs (ops/matmul/gemm_cuda.h); these
// kernels do the bias work where cuBLASLt cannot fuse it into them, for T
// float, Half and BFloat16. Each returns nullptr or the CUDA error text.
#ifndef TFM_OPS_LINEAR_LINEAR_CUDA_H_
#define TFM_OPS_LINEAR_LINEAR_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

struct Half;
struct BFloat16;

// out[r, :] = row for every r < rows: the bias, for a GEMM to accumulate onto.
template <typename T>
const char* LaunchBroadcastRow(const T* row, int64_t rows, int64_t cols, T* out,
                               StreamHandle stream);

// out[c] = sum over r < rows of in[r, c], summed in f32 and rounded once;
// zeros when rows is 0.
template <typename T>
const char* LaunchSumRows(const T* in, int64_t rows, int64_t cols, T* out, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_LINEAR_LINEAR_CUDA_H_

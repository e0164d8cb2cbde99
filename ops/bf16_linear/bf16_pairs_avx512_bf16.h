// bf16_linear's kernel for CPUs with AVX512-BF16 and no usable AMX (AMD Zen
// 4 and later, Intel Cooper Lake): vdpbf16ps adds the products of two bf16
// pairs to an f32 lane, and the packed weight's rows are those pairs (16
// columns of one pair of inputs in a vector), so one instruction does a
// row's 32 multiply-adds for 16 columns, on the weight as packed, with no
// widening. Plain declarations: the file compiles its own instruction set
// (#pragma GCC target), called only where the CPU has it.
#ifndef TFM_OPS_BF16_LINEAR_BF16_PAIRS_AVX512_BF16_H_
#define TFM_OPS_BF16_LINEAR_BF16_PAIRS_AVX512_BF16_H_

#include <cstdint>

namespace tfm {

class ThreadPool;

// y[rows, out] = x W^T (+ bias, then ReLU if `relu`) for x [rows, in] f32
// dense and `packed` the bf16 pairs of gemm_bf16_cpu.h's layout with kp
// inputs (in rounded up to 32). Threads split the panels of 16 columns;
// each row's sums are one fixed sequence whatever `rows`.
void Bf16PairsProductAvx512Bf16(const float* x, int64_t rows, int64_t in, const uint16_t* packed,
                                int64_t kp, int64_t out, const float* bias, bool relu, float* y,
                                ThreadPool* pool);

}  // namespace tfm

#endif  // TFM_OPS_BF16_LINEAR_BF16_PAIRS_AVX512_BF16_H_

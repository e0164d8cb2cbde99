// Host products with bf16 inputs and f32 sums: GemmCpu's under a
// ScopedCpuProductPrecision of bf16 (core/cpu_product_precision.h), which
// is training's `train.dtype: bf16` on the CPU. The tensors stay f32
// (weights, activations, gradients, Adam's state); only each product's
// inputs are rounded to bf16 (to nearest, ties to even: core/dtype.h's
// BFloat16) and their products
// summed in f32, as bf16 tensor-core products are on a GPU. Where the CPU
// multiplies bf16 itself (AMX tiles), one instruction does 16 times the
// multiply-adds of an f32 vector FMA; elsewhere the rounded values go
// through the f32 GEMM, with the same products and f32 sums (only the
// order of the sums differs), so a run means the same on every CPU. (One
// more difference: the tiles take bf16 subnormals, below 1.2e-38, as zero.)
#ifndef TFM_OPS_MATMUL_GEMM_BF16_CPU_H_
#define TFM_OPS_MATMUL_GEMM_BF16_CPU_H_

#include <cstdint>

#include "core/cpu_product_precision.h"

namespace tfm {

class ThreadPool;

// One operand of a row-major product: op(X) is X, or X^T when trans; ld is
// the stored row length.
struct GemmOperand {
  const float* data;
  int64_t ld;
  bool trans;
};

// What is applied to each element of C after the product, in one pass with
// it: + bias[column] (none if null), then ReLU (x <= 0 becomes +0; NaN
// stays), as linear's forward does.
struct GemmEpilogue {
  const float* bias = nullptr;
  bool relu = false;
};

// The kernels that multiply bf16: "amx_bf16" (tiles) or "f32_of_rounded"
// (the inputs rounded, then the f32 GEMM).
const char* Bf16ProductKernelName();

// C[m, n] (dense) = epilogue(op(A) op(B) + beta C) with A and B rounded to
// bf16 and the sums in f32; beta == 0 ignores C's old values. Threaded over
// `pool`. m, n, k are positive.
void GemmBf16(const GemmOperand& a, const GemmOperand& b, int64_t m, int64_t n, int64_t k,
              float beta, float* c, ThreadPool* pool, const GemmEpilogue& epilogue = {});

// The same on AMX tiles (only where CpuFeatures::amx_bf16), and through the
// f32 GEMM on rounded copies (any CPU): the two kernels GemmBf16 chooses
// between, exposed for tests.
void GemmBf16Amx(const GemmOperand& a, const GemmOperand& b, int64_t m, int64_t n, int64_t k,
                 float beta, float* c, ThreadPool* pool, const GemmEpilogue& epilogue = {});
void GemmBf16OfRounded(const GemmOperand& a, const GemmOperand& b, int64_t m, int64_t n,
                       int64_t k, float beta, float* c, ThreadPool* pool,
                       const GemmEpilogue& epilogue = {});

// Whether GemmBf16 runs on AMX tiles in this process (Bf16ProductKernelName
// "amx_bf16"): the CPU has them, our kernels may use AVX-512, and the tiles
// passed the start-up check against the f32 reference.
bool Bf16ProductsOnAmx();

// A weight laid out once for many products with it (decoding's: every step
// multiplies by the same weights): weight [n, k] (a linear layer's [out,
// in], so the product is x W^T) rounded to bf16 in panels of 16 output
// columns, [np / 16, kp / 2, 16, 2]: for each pair of inputs 2r, 2r + 1 the
// 16 columns' two values side by side, np = n and kp = k rounded up to 32,
// zeros past n and k. This is the tiles' packed B (tdpbf16ps's pairs, a 1
// KiB tile in consecutive memory), and the pairs are also what a vector
// dot product of bf16 pairs reads (vdpbf16ps), so one layout serves every
// kernel.
inline constexpr int64_t kBf16WeightPanel = 16;
int64_t Bf16PackedWeightRows(int64_t n);    // np
int64_t Bf16PackedWeightInputs(int64_t k);  // kp

// y[m, n] = epilogue(x W^T) on AMX tiles (Bf16ProductsOnAmx() only) for x
// [m, k] dense and W packed as above: x rounded to bf16, the sums in f32.
// Each row's sums are one fixed sequence whatever m, so a row's result does
// not depend on the rows beside it. Threaded over the output columns.
void GemmBf16AmxPackedWeight(const float* x, int64_t m, const uint16_t* packed, int64_t n,
                             int64_t k, float* y, ThreadPool* pool,
                             const GemmEpilogue& epilogue = {});

// The epilogue on rows [first, last) of a dense C[., n] already holding
// op(A) op(B) + beta C: the kernels without a fused one.
void ApplyEpilogue(const GemmEpilogue& epilogue, int64_t first, int64_t last, int64_t n,
                   float* c);

}  // namespace tfm

#endif  // TFM_OPS_MATMUL_GEMM_BF16_CPU_H_

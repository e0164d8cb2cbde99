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

// The epilogue on rows [first, last) of a dense C[., n] already holding
// op(A) op(B) + beta C: the kernels without a fused one.
void ApplyEpilogue(const GemmEpilogue& epilogue, int64_t first, int64_t last, int64_t n,
                   float* c);

}  // namespace tfm

#endif  // TFM_OPS_MATMUL_GEMM_BF16_CPU_H_

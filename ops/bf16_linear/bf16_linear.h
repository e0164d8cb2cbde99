// bf16_linear: out = x W^T + b with bf16 products, for decoding on the CPU
// (`--dtype=bf16`): the weight rounded to bf16 and laid out once per search
// ("pack_bf16_linear_weight"), each call's x rounded to bf16, the products
// summed in f32, as training's `train.dtype: bf16` multiplies on the CPU
// (ops/matmul/gemm_bf16_cpu.h) and as bf16 tensor cores do.
//
// Layout: ops/matmul/gemm_bf16_cpu.h's packed weight, [np / 16, kp / 2, 32]
// bf16 (np = out and kp = in rounded up to 32): panels of 16 output columns
// holding each pair of inputs' two values side by side. The same on every
// CPU, so a packed weight is valid in any process.
//
// Kernels (Bf16LinearKernel), the fastest this process runs chosen: AMX
// tiles where GemmBf16 uses them; else vdpbf16ps where the CPU has
// AVX512-BF16 (Zen 4, Cooper Lake) and our kernels may use AVX-512; else
// f32 vector FMAs on the pairs widened to f32 (as fast as f32, no faster).
// All compute the same products, so their results differ only by the
// order of the f32 sums; in each a row's result is one fixed sequence of
// sums whatever the rows beside it (batch invariance).
#ifndef TFM_OPS_BF16_LINEAR_BF16_LINEAR_H_
#define TFM_OPS_BF16_LINEAR_BF16_LINEAR_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

// Whether PackBf16LinearWeight takes `weight`: f32 [out, in] on the CPU.
bool Bf16LinearSupported(const Tensor& weight);

enum class Bf16LinearKernel { kF32OfPairs, kAvx512Bf16, kAmxBf16 };

// "f32_of_pairs", "avx512_bf16", "amx_bf16".
const char* Bf16LinearKernelName(Bf16LinearKernel kernel);
// The kernels this process can run (f32_of_pairs always), fastest last.
std::vector<Bf16LinearKernel> Bf16LinearKernelsThisCpuRuns();
// The one bf16_linear runs unless told: the fastest, or the one the
// environment's TFM_BF16_KERNEL names (f32_of_pairs, avx512_bf16,
// amx_bf16) where this CPU runs it. And its name.
Bf16LinearKernel ActiveBf16LinearKernel();
const char* Bf16LinearKernelName();

// weight [out, in] f32 -> the packed bf16 weight (see the top of the file).
absl::StatusOr<Tensor> PackBf16LinearWeight(const Tensor& weight);

// x [..., in] f32 -> [..., out_features] f32 = x W^T + bias for `packed` =
// PackBf16LinearWeight(W), W [out_features, in]; bias [out_features] f32 or
// none. With `relu`, max(0, x W^T + bias). `kernel`: one of
// Bf16LinearKernelsThisCpuRuns() instead of the active one (tests and
// benchmarks; another is InvalidArgument).
absl::StatusOr<Tensor> Bf16Linear(const Tensor& x, const Tensor& packed, int64_t out_features,
                                  const std::optional<Tensor>& bias = std::nullopt,
                                  bool relu = false,
                                  std::optional<Bf16LinearKernel> kernel = std::nullopt);

}  // namespace tfm

#endif  // TFM_OPS_BF16_LINEAR_BF16_LINEAR_H_

// quantized_linear: out = x W^T + b with W stored as int8, for decoding on
// the CPU (--quantize=int8). f32 stays the default and the reference.
//
// Weights: one f32 scale per output row, W[j, :] ~ scales[j] * q[j, :] with
// q in [-127, 127] (symmetric: the weights of a trained layer centre on 0).
//
// Activations are quantized per row on the fly, asymmetrically to u8 with a
// zero point: x[r, :] ~ sx[r] * (u[r, :] - zp[r]), u in [0, L]. Why u8 with a
// zero point rather than s8 with a compensation term: the u8 x s8 products
// of vpdpbusd / vpmaddubsw need an unsigned operand either way, and both
// corrections cost the same (zp[r] times the weight row's sum, kept with
// the packed weight), but the zero point spends all of the 8 bits on the
// row's actual range [min(0, x), max(0, x)] instead of a symmetric one: the
// second feed-forward product's input (after ReLU) is never negative, and
// there symmetric s8 would waste half of its levels. (On a trained Multi30k
// model the two gave the same validation BLEU and agreement with f32:
// benchmarks/results/README.md.) L = 255 with VNNI;
// L = 127 for the AVX2 kernel, whose vpmaddubsw sums two u8 x s8 products
// into int16: 2 x 255 x 127 = 64770 would saturate, 2 x 127 x 127 = 32258
// cannot (a test feeds it the worst case).
//
// Layout: "quantize_linear_weight" turns weight [out, in] into
//   packed      i8  [panels, groups, 16, 4]: panel p holds output rows
//               16p .. 16p + 15; for each group g of 4 inputs, each row's
//               4 consecutive weights (what one 32-bit lane of vpdpbusd
//               sums); zero past `out` and past `in`,
//   scales      f32 [out],
//   row_sums    i32 [out]: sum_k q[j, k], for the zero-point correction.
// The layout is the same for every kernel (a 512-bit vector takes one
// panel's group, a 256-bit one half of it), so a packed weight is valid in
// any process.
#ifndef TFM_OPS_QUANTIZED_LINEAR_QUANTIZED_LINEAR_H_
#define TFM_OPS_QUANTIZED_LINEAR_QUANTIZED_LINEAR_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace tfm {

// The int8 product kernels, chosen at run time (ActiveInt8Kernel).
enum class Int8Kernel {
  kScalar,      // The reference, plain C++.
  kAvx2,        // vpmaddubsw + vpmaddwd, 7-bit activations (see the top).
  kAvxVnni,     // 256-bit vpdpbusd (VEX).
  kAvx512Vnni,  // 512-bit vpdpbusd.
  kAmxInt8,     // AMX tiles (tdpbusd), inputs a multiple of 64; other
                // products run kAvx512Vnni (int8_panels.h).
};

// "scalar", "avx2", "avx_vnni", "avx512_vnni", "amx_int8".
const char* Int8KernelName(Int8Kernel kernel);
absl::StatusOr<Int8Kernel> ParseInt8Kernel(absl::string_view name);
// Every kernel this CPU runs, the reference first.
std::vector<Int8Kernel> HostInt8Kernels();
// The fastest kernel this CPU runs: AMX, else AVX-512 VNNI, else AVX-VNNI,
// else AVX2. AMX only once it has given the scalar reference's results on
// a sample product at start-up (a kernel that could not be run where it was
// written: no CPU there exposed AMX). TFM_CPU_ISA=avx2 (which caps the f32
// kernels at AVX2) takes the AVX2 kernel, the one for CPUs without VNNI.
Int8Kernel ActiveInt8Kernel();
// The activations' levels L with `kernel` (255, or 127 for kAvx2).
int Int8ActivationLevels(Int8Kernel kernel);

// Weights quantized and packed (see the top of the file).
struct QuantizedWeight {
  Tensor packed;    // i8 [panels, groups, 16, 4]
  Tensor scales;    // f32 [out_features]
  Tensor row_sums;  // i32 [out_features]
  int64_t out_features() const { return scales.defined() ? scales.dim(0) : 0; }
};

// Whether QuantizeLinearWeight takes `weight`: f32 [out, in] on the CPU.
bool QuantizedLinearSupported(const Tensor& weight);

// weight [out, in] f32 -> its int8 form.
absl::StatusOr<QuantizedWeight> QuantizeLinearWeight(const Tensor& weight);

// x [..., in] f32 -> [..., out_features] ~ x W^T + bias; with `relu`,
// max(0, .). `kernel` forces one (tests, benchmarks); it must be one of
// HostInt8Kernels(). By default ActiveInt8Kernel().
absl::StatusOr<Tensor> QuantizedLinear(const Tensor& x, const QuantizedWeight& weight,
                                       const std::optional<Tensor>& bias = std::nullopt,
                                       bool relu = false,
                                       std::optional<Int8Kernel> kernel = std::nullopt);

}  // namespace tfm

#endif  // TFM_OPS_QUANTIZED_LINEAR_QUANTIZED_LINEAR_H_

// packed_linear: out = x W^T + b, as linear (ops/linear/linear.h), with the
// weight laid out once for the CPU's register-blocked product
// (ops/cpu_math/register_product.h) instead of being packed by BLAS on
// every call.
//
// For decoding: a search runs its decoder's products once per step on a
// few rows (beam x sentences) against weights that do not change during the
// search; BLAS re-packs each weight at every call and splits each product
// between threads with both packing the same rows. Here the weights are
// packed once per search (DecodingCache::PackedWeight), every row is
// computed by the same sequence of FMAs whatever the number of rows (so a
// sentence's results do not depend on its batch), and the threads share
// the weight's panels.
//
// Layout: "pack_linear_weight" turns weight [out, in] into [panels, in,
// width]: panel p holds columns p * width .. p * width + width - 1 of W^T,
// one row of `width` floats per input feature, zero past `out`. The width
// is two vectors of the instruction set the process runs (32 floats with
// AVX-512, 16 with AVX2), so a packed weight is only valid in the process
// that packed it. CPU f32 only (PackedLinearSupported).
#ifndef TFM_OPS_PACKED_LINEAR_PACKED_LINEAR_H_
#define TFM_OPS_PACKED_LINEAR_PACKED_LINEAR_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

// Whether PackLinearWeight takes `weight`: f32 on the CPU.
bool PackedLinearSupported(const Tensor& weight);

// weight [out, in] -> [panels, in, width] (see the top of the file).
absl::StatusOr<Tensor> PackLinearWeight(const Tensor& weight);

// x [..., in] -> [..., out_features] = x W^T + bias for `packed` =
// PackLinearWeight(W) with W [out_features, in]; bias [out_features] or none.
// With `relu`, max(0, x W^T + bias) (the feed-forward's first product: no
// second pass over its output).
absl::StatusOr<Tensor> PackedLinear(const Tensor& x, const Tensor& packed, int64_t out_features,
                                    const std::optional<Tensor>& bias = std::nullopt,
                                    bool relu = false);

}  // namespace tfm

#endif  // TFM_OPS_PACKED_LINEAR_PACKED_LINEAR_H_

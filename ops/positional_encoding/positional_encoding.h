// Sinusoidal positional encodings (Vaswani et al. 2017, section 3.5):
//   PE(pos, 2i)     = sin(pos / 10000^(2i / d_model))
//   PE(pos, 2i + 1) = cos(pos / 10000^(2i / d_model))
// evaluated in double precision (float32 rounding only at the end, even for
// positions in the thousands). The CPU kernels keep the rows of each d_model
// in a process-wide table grown to the longest run of positions seen (up to
// 64 MiB per d_model; further positions are computed on the fly with the same
// formula), so there is no length limit and the values never depend on the
// cache. The CUDA kernels evaluate the formula per element (no table), in
// f32, f16 or bf16 (rounded once from double, and once after the add).
#ifndef TFM_OPS_POSITIONAL_ENCODING_POSITIONAL_ENCODING_H_
#define TFM_OPS_POSITIONAL_ENCODING_POSITIONAL_ENCODING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

// [length, d_model] f32: rows for positions offset .. offset + length - 1.
absl::StatusOr<Tensor> PositionalEncoding(int64_t length, int64_t d_model, int64_t offset = 0,
                                          const Device& device = Device::Cpu());

// x [..., length, d_model] + PE of positions offset + (0 .. length - 1) along
// the second-to-last axis: `offset` is the number of tokens already decoded in
// incremental decoding.
absl::StatusOr<Tensor> AddPositionalEncoding(const Tensor& x, int64_t offset = 0);

// AddPositionalEncoding(x, offset) with the offset held by `position`, a [1]
// i32 tensor on x's device, bit for bit: the step of a captured CUDA graph,
// replayed at every position without a new launch (the CUDA kernel reads
// the position from device memory). The caller guarantees position >= 0:
// the CPU kernel returns an error otherwise; the CUDA kernel cannot report
// one without waiting for the GPU (and evaluates the formula as it is).
absl::StatusOr<Tensor> AddPositionalEncodingAt(const Tensor& x, const Tensor& position);

// Gradient of sum(dout * AddPositionalEncoding(x, offset)) with respect to x:
// dout itself, as a new tensor (an op's result never aliases its input, see
// OpDef::in_place), on dout's device. It needs no kernel of its own: the
// table is a constant, so the claim to test is that the forward is x plus
// something independent of x.
absl::StatusOr<Tensor> AddPositionalEncodingBackward(const Tensor& dout);

}  // namespace tfm

#endif  // TFM_OPS_POSITIONAL_ENCODING_POSITIONAL_ENCODING_H_

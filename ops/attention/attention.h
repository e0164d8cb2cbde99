// scaled_dot_product_attention: softmax(Q K^T * scale + mask) V for all
// heads of a batch at once, fused, with its backward.
//
// Layout: q [batch, heads, q_len, d_k], k [batch, heads, k_len, d_k],
// v [batch, heads, k_len, d_v], out [batch, heads, q_len, d_v], all dense
// row-major f32. Interleaved heads: with interleaved_queries q, out and
// their gradients, with interleaved_keys k, v and theirs, are [batch, len,
// heads, d] instead: the projections' [batch, len, heads * d] as they are,
// so that a layer needs no split_heads and merge_heads around the op
// (training sets both; a decoding step its queries, against heads-first
// caches). The CUDA tensor-core kernels and the decode kernel read and
// write that layout in place; the other kernels get heads-first
// copies inside the op (the cost the two ops had; none where len or heads
// is 1, the same bytes either way), so the results are the same either
// way, to the bit. lse stays [batch, heads, q_len]; key rows take
// heads-first keys only. On
// CUDA q, k, v, out and the gradients may also be bf16 or f16 (lse stays
// f32): flash-attention kernels in attention_cuda*.cu, tensor cores for bf16
// and f16 at head sizes 32, 64 and 128, and for up to 8 query rows without
// dropout (a decoding step) a split-K decode kernel (f32 and bf16);
// TFM_ATTENTION_BACKEND picks the implementation (attention_backend.h). On
// the CPU, f32 q may read f16 k and v (heads-first, forward only: a
// decoding step against 16-bit caches), widened to f32 as they load by the
// row-by-row kernel whatever the query rows; out and lse stay f32.
//
// Masks (combined):
//   - causal: query i sees keys j <= i + (k_len - q_len), i.e. the queries are
//     the last q_len positions of the key sequence (incremental decoding with a
//     cache of k_len - q_len earlier steps; the usual triangle when equal).
//   - key lengths [batch] (i32/i64): keys j >= length[b] are padding (on
//     CUDA a length outside [0, k_len] is clamped, not rejected: checking
//     would wait for the device); or
//   - key padding mask [batch, k_len] (i32/i64): nonzero marks padding, the
//     convention of torch.nn.MultiheadAttention's key_padding_mask.
// A query row that sees no key at all gets a zero output (and zero
// gradients) instead of NaN.
//
// Key rows (forward only, for at most kMaxRowwiseQueries query rows per
// head: a beam's decoding step; on q's device, whose entries only the CPU
// checks): key_rows [batch, k_len] i32 says
// that position j of batch item b's keys and values is read from batch item
// key_rows[b, j] (same head, same position). A beam search reorders its
// self-attention caches by rewriting this small table instead of moving the
// cached keys and values (FasterTransformer's cache indirection).
//
// Dropout on the attention probabilities: element (b, h, i, j) of the
// [batch, heads, q_len, k_len] probabilities is dropped iff
// philox::ToUniform(x) < dropout, where x is element
// ((b * heads + h) * q_len + i) * k_len + j of the Philox stream
// (seed, stream, offset) as laid out in core/rng.h; kept values are scaled by
// 1 / (1 - dropout). Backward regenerates the same mask; it is never stored.
//
// The forward never materialises the q_len x k_len probabilities: it keeps,
// per query row, only the log-sum-exp of the scaled, masked scores (lse,
// [batch, heads, q_len]), from which backward recomputes them tile by tile.
#ifndef TFM_OPS_ATTENTION_ATTENTION_H_
#define TFM_OPS_ATTENTION_ATTENTION_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/attrs.h"
#include "core/rng.h"
#include "core/tensor.h"

namespace tfm {

// Packed projections: one product's [batch, len, parts * heads * d] output
// read as it is, interleaved heads [batch, len, parts * heads, d] whose
// head slots hold one operand's heads after another:
//   kQueriesKeysValues  q holds q's heads, then k's, then v's (the one GEMM
//                       of a self-attention's projections); k and v are q
//                       itself (the same tensor). Needs interleaved queries
//                       and keys.
//   kKeysValues         k holds k's heads, then v's (encoder-decoder
//                       attention's memory projected by one GEMM); v is k
//                       itself. Needs interleaved keys.
// out stays [batch, q_len, heads, d_v]. The backward's gradient of a packed
// input is one tensor shaped like it, in the same order (dq for qkv, dk for
// kv: the input of the GEMM's backward as it is); the gradients of the
// inputs that are that tensor again come back empty ([0]).
enum class PackedHeads { kNone, kKeysValues, kQueriesKeysValues };

struct AttentionOptions {
  bool causal = false;
  // At most one of the two key masks may be defined.
  Tensor key_lengths;       // [batch], i32 or i64.
  Tensor key_padding_mask;  // [batch, k_len], i32 or i64; nonzero = padding.
  float dropout = 0.0f;     // Probability of dropping, in [0, 1).
  PhiloxState dropout_state;
  std::optional<float> scale;  // Defaults to 1 / sqrt(d_k).
  // CUDA only: "auto", "flash", "cudnn" or "flash_tiles"
  // (attention_backend.h); empty: TFM_ATTENTION_BACKEND, else auto.
  std::string backend;
  // The forward's key rows [batch, k_len] i32 on q's device (see above);
  // undefined: each batch item reads its own keys.
  Tensor key_rows;
  // [batch, len, heads, d] instead of [batch, heads, len, d]: q and out
  // (and dq, d_out); k and v (and dk, dv).
  bool interleaved_queries = false;
  bool interleaved_keys = false;
  PackedHeads packed = PackedHeads::kNone;  // See PackedHeads.
};

struct AttentionOutput {
  Tensor out;  // [batch, heads, q_len, d_v], or interleaved [batch, q_len, heads, d_v].
  Tensor lse;  // [batch, heads, q_len]: saved for backward.
};

struct AttentionGrads {
  Tensor dq, dk, dv;
};

absl::StatusOr<AttentionOutput> ScaledDotProductAttention(const Tensor& q, const Tensor& k,
                                                          const Tensor& v,
                                                          const AttentionOptions& options = {});

// Gradients from the forward's inputs, its out and lse, and d_out; `options`
// must be those of the forward.
absl::StatusOr<AttentionGrads> ScaledDotProductAttentionBackward(
    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
    const Tensor& d_out, const AttentionOptions& options = {});

// The ops' attributes and their key_mask input for `options` (for callers of
// RunOp). Attributes: causal (bool), key_mask ("none", "lengths",
// "padding"), dropout (double), seed/stream/offset (int64), scale (double,
// optional), interleaved_queries and interleaved_keys (bool, when set),
// packed ("kv" or "qkv", when set). The key_mask input is an empty i32 tensor on `device` when there is none.
Attrs AttentionAttrs(const AttentionOptions& options);
absl::StatusOr<Tensor> AttentionKeyMaskInput(const AttentionOptions& options, const Device& device);

// The forward's key_rows input (index kForwardKeyRowsInput): options'
// key_rows, or an empty i32 tensor on `device`.
absl::StatusOr<Tensor> AttentionKeyRowsInput(const AttentionOptions& options, const Device& device);

}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_ATTENTION_H_

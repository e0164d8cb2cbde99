// The attention ops' shapes and attributes, parsed and checked once; shared
// by validation and by every device's kernels.
#ifndef TFM_OPS_ATTENTION_ATTENTION_PARAMS_H_
#define TFM_OPS_ATTENTION_ATTENTION_PARAMS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/op_registry.h"
#include "core/rng.h"
#include "ops/attention/attention.h"

namespace tfm {

enum class KeyMaskKind { kNone, kLengths, kPadding };

struct AttentionParams {
  int64_t batch = 0, heads = 0, q_len = 0, k_len = 0, d_k = 0, d_v = 0;
  int64_t key_batch = 0;  // k's and v's batch: batch, or more with key rows.
  bool causal = false;
  // [batch, len, heads, d] (attention.h): q, out and their gradients; k, v
  // and theirs.
  bool interleaved_queries = false;
  bool interleaved_keys = false;
  PackedHeads packed = PackedHeads::kNone;  // attention.h
  KeyMaskKind key_mask = KeyMaskKind::kNone;
  float scale = 1.0f;
  float dropout = 0.0f;
  PhiloxState dropout_state;
};

// Index of the key_mask input: 3 in the forward, 6 in the backward.
inline constexpr int kForwardKeyMaskInput = 3;
inline constexpr int kBackwardKeyMaskInput = 6;
// The forward's key_rows input (attention.h): empty, or [batch, k_len] i32.
inline constexpr int kForwardKeyRowsInput = 4;

// Most query rows per head that the CPU's row-by-row path takes (a beam's
// rows against their sentence's memory); key_rows needs it.
inline constexpr int64_t kMaxRowwiseQueries = 8;

// Reads q, k, v (inputs 0-2), the key_mask input and the attributes; errors
// name the op and the shapes.
// With `key_rows`, k and v may have more batch items than q (a beam's
// caches keep rows past the live ones); key_batch says how many.
absl::StatusOr<AttentionParams> ParseAttentionParams(const KernelContext& context,
                                                     int key_mask_input, bool key_rows = false);

// Packed projections (attention.h's PackedHeads): how many head slots a
// position of q's tensor holds (heads, or 3 heads for qkv), and of k's and
// v's (heads, 2 heads for kv, 3 for qkv); and the part of its tensor's
// slots where each operand's heads start (in units of heads: q 0; k 1 for
// qkv; v 2 for qkv, 1 for kv; else 0).
int64_t QuerySlots(const AttentionParams& p);
int64_t KeySlots(const AttentionParams& p);
int64_t KeyPart(const AttentionParams& p);
int64_t ValuePart(const AttentionParams& p);

// The backward output that holds the gradient of operand `index` (0 q, 1 k,
// 2 v): its own, or with packed projections that of the packed tensor it
// is a part of (dq for all three of qkv, dk for k and v of kv).
int AttentionGradOutput(const AttentionParams& p, int index);

// The shape of the backward's gradient `index` given its input's shape: that
// shape, or [0] where another output holds the gradient
// (AttentionGradOutput: k and v of qkv, v of kv).
Shape AttentionGradShape(const AttentionParams& p, int index, const Shape& input_shape);

// The forward's out (and the backward's out and d_out) in the problem's
// layout: [batch, heads, q_len, d_v], or interleaved [batch, q_len, heads,
// d_v].
Shape AttentionOutShape(const AttentionParams& p);

}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_ATTENTION_PARAMS_H_

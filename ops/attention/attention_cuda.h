// Launchers of the CUDA attention kernels (plain C++: included by host code).
//
// The kernels see the key mask in one form, whatever the op was given: a
// per-batch key end (keys at or past it are never visited) and, for a
// padding mask, a per-key additive bias (0 or -inf). LaunchPrepareKeyMask
// builds both on the device, so no launch waits for the host.
#ifndef TFM_OPS_ATTENTION_ATTENTION_CUDA_H_
#define TFM_OPS_ATTENTION_ATTENTION_CUDA_H_

#include <cstdint>
#include <initializer_list>

#include "core/device.h"

namespace tfm {

// The largest head size (d_k and d_v) the CUDA kernels take.
inline constexpr int64_t kMaxCudaAttentionHeadSize = 256;

struct AttentionCudaProblem {
  int64_t batch = 0, heads = 0, q_len = 0, k_len = 0, d_k = 0, d_v = 0;
  bool causal = false;
  float scale = 1.0f;
  float dropout = 0.0f;
  uint64_t seed = 0, stream = 0, offset = 0;  // The dropout's Philox state.
  const int32_t* key_end = nullptr;           // [batch] on the device; nullptr: k_len.
  const float* key_bias = nullptr;            // [batch, k_len] on the device, or nullptr.
  // [batch] on the device with key_bias: whether item b has padding before
  // its key end. Without, the key end says it all and the bias is skipped.
  const int32_t* key_has_holes = nullptr;
  // [batch, k_len] on the device, or nullptr: position j of item b's keys and
  // values is in item key_rows[b * k_len + j] of k and v (attention.h's key
  // rows). The decode kernel only.
  const int32_t* key_rows = nullptr;
  // Element type of q, k, v, out, d_out, dq, dk, dv: bf16, f16 (__half) or
  // neither (f32). The tensor-core kernels take bf16 and f16, the decode
  // kernel f32 and bf16: f16 decoding steps run the tensor-core tiles (f16
  // is for GPUs without bf16).
  bool bf16 = false;
  bool f16 = false;
  // The backward's dQ: 0 adds every key tile's share with f32 atomics into
  // one buffer (fast; the order of the adds, so the last bits, vary from
  // run to run); > 0 has key tile j store its share in slab j of this many
  // floats, and the slabs are then summed in key-tile order (deterministic
  // mode: bit for bit the same each run). Set by LaunchAttentionBackward.
  int64_t dq_slab_floats = 0;
  // The tensor-core backward where each head's keys fit one key tile (the
  // paper's sentences: up to 64 keys): one block makes the whole dQ of its
  // head, so it stores dQ here, in the element type, with no f32 buffer to
  // zero, add into and convert (and no atomics: deterministic as it is).
  // The value is the other paths' to the bit. Set by LaunchAttentionBackward.
  void* dq_direct = nullptr;
  // The backward in deterministic mode (train.deterministic).
  bool deterministic = false;
  // [batch, len, heads, d] instead of heads-first (lse stays [batch,
  // heads, q_len]): q, out, d_out and dq; k, v, dk and dv. The tensor-core
  // kernels and the backward's small kernels take both, the decode kernel
  // interleaved queries; for the others the op permutes to heads-first and
  // back (AttentionMmaTakes, AttentionDecodeTakes).
  bool interleaved_queries = false;
  bool interleaved_keys = false;
  // Packed projections (attention.h's PackedHeads), interleaved only: the
  // head slots a position of q and dq (q_slots), and of k, v, dk and dv
  // (kv_slots), holds, of which each operand's heads are one part; the
  // launchers' q, k, v, dq, dk and dv point at their part's first head. 0:
  // heads (no packing). out and d_out hold heads. The tensor-core kernels,
  // the decode kernel and the backward's small kernels take them.
  int64_t q_slots = 0;
  int64_t kv_slots = 0;
};

// Every launcher returns nullptr or the CUDA error text; all run on `stream`.

// mask: [batch] lengths (is_lengths) or [batch, k_len] padding flags, i32 or
// i64 (is_i64). Fills key_end [batch] and, for a padding mask, key_bias
// [batch, k_len] and key_has_holes [batch]. Lengths are clamped to
// [0, k_len].
// Sentences whose key length (key_end) is 0 see no key: our kernels give
// their rows zeros (lse -inf, zero gradients), cuDNN leaves them undefined.
// Writes `fill_bits` (a `word_bytes` = 2 or 4 byte pattern) over the
// `per_sentence` words of each such sentence in `data` ([batch, ...]).
const char* LaunchClearEmptySentences(const int32_t* key_end, int64_t batch, int64_t per_sentence,
                                      int word_bytes, uint32_t fill_bits, void* data,
                                      StreamHandle stream);

const char* LaunchPrepareKeyMask(const void* mask, bool is_i64, bool is_lengths, int64_t batch,
                                 int64_t k_len, int32_t* key_end, float* key_bias,
                                 int32_t* key_has_holes, StreamHandle stream);

// Whether the tensor-core kernels take the problem: bf16 or f16, d_k ==
// d_v in {32, 64, 128}, a positive scale, and `tensors` 16-byte aligned.
// Interleaved heads need them: LaunchAttentionForward and
// LaunchAttentionBackward refuse the layout otherwise.
bool AttentionMmaTakes(const AttentionCudaProblem& problem,
                       std::initializer_list<const void*> tensors);

// out [batch, heads, q_len, d_v] (interleaved: [batch, q_len, heads, d_v])
// and lse [batch, heads, q_len] (f32).
const char* LaunchAttentionForward(const AttentionCudaProblem& problem, const void* q,
                                   const void* k, const void* v, void* out, float* lse,
                                   StreamHandle stream);

// dq, dk, dv shaped like q, k, v. `workspace` holds
// AttentionBackwardWorkspaceFloats(problem, the same tensors) floats on the
// device: the tensors' alignment picks the kernels, and with them whether
// dQ needs an f32 accumulation (not where a head's keys fit one key tile).
int64_t AttentionBackwardWorkspaceFloats(const AttentionCudaProblem& problem, const void* q,
                                         const void* k, const void* v, const void* d_out,
                                         const void* dq, const void* dk, const void* dv);
const char* LaunchAttentionBackward(const AttentionCudaProblem& problem, const void* q,
                                    const void* k, const void* v, const void* out, const float* lse,
                                    const void* d_out, void* dq, void* dk, void* dv,
                                    float* workspace, StreamHandle stream);

// Decode attention (attention_cuda_decode.cu): a few query rows per head
// over many keys, a beam search step's shape, with the keys split over
// several blocks when batch x heads alone would leave the GPU idle. Forward
// only, without dropout.
inline constexpr int64_t kMaxAttentionDecodeQueries = 8;

// Whether the decode kernel takes the problem (key rows included): 1 to
// kMaxAttentionDecodeQueries query rows, no dropout, d_k == d_v in {32, 64,
// 128}, and `tensors` (q, k, v, out) 16-byte aligned for 128-bit loads.
bool AttentionDecodeTakes(const AttentionCudaProblem& problem,
                          std::initializer_list<const void*> tensors);

// How many blocks share each head's keys on the current device (1: no
// split), and the f32 workspace the partial results then need.
int AttentionDecodeSplits(const AttentionCudaProblem& problem);
int64_t AttentionDecodeWorkspaceFloats(const AttentionCudaProblem& problem, int splits);

// out [batch, heads, q_len, d_v] and lse [batch, heads, q_len] (f32), as
// LaunchAttentionForward; `workspace` holds
// AttentionDecodeWorkspaceFloats(problem, splits) floats (nullptr when 0).
const char* LaunchAttentionDecode(const AttentionCudaProblem& problem, int splits, const void* q,
                                  const void* k, const void* v, void* out, float* lse,
                                  float* workspace, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_ATTENTION_CUDA_H_

// Internals of the CPU attention kernels: the problem as the tile loops see
// it, and the pieces the forward and backward tile loops share.
#ifndef TFM_OPS_ATTENTION_ATTENTION_CPU_TILES_H_
#define TFM_OPS_ATTENTION_ATTENTION_CPU_TILES_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/cache_aligned_vector.h"
#include "core/thread_pool.h"
#include "ops/attention/attention_params.h"
#include "ops/cpu_math/isa.h"

TFM_ISA_BEGIN
namespace attention_cpu {

// Tile extents. A query tile times a key tile times d_k = 64^3 keeps every
// product under OpenBLAS's threading threshold (m * n * k <= 2^18), so
// the calls stay single-threaded inside our own workers, and the tiles of
// one worker (scores, probabilities, their gradients: 16 KiB each) stay
// in L1/L2.
inline constexpr int64_t kQueryTile = 64;
inline constexpr int64_t kKeyTile = 64;

// The rows of each head of an attention tensor where they are:
// heads-first [batch, heads, len, d] (slots 0), or interleaved [batch, len,
// slots, d] with the heads in `heads` consecutive slots (attention.h; a
// part of packed projections). The packed kernels read and write
// interleaved tensors in place through it: permuting them to heads-first
// and back cost a quarter of the base model's attention.
template <typename T>
struct HeadRows {
  T* data = nullptr;  // Row 0 of head 0 of batch item 0.
  int64_t heads = 0, len = 0, d = 0;
  int64_t slots = 0;  // 0: heads-first.

  // Row 0 of head h of batch item b, for bh = b * heads + h.
  T* Head(int64_t bh) const {
    if (slots == 0) return data + bh * len * d;
    return data + ((bh / heads) * len * slots + bh % heads) * d;
  }
  // Elements from one row of a head to the next.
  int64_t ld() const { return slots == 0 ? d : slots * d; }
  bool heads_first() const { return slots == 0; }
};

template <typename T>
HeadRows<T> HeadsFirstRows(T* data, int64_t heads, int64_t len, int64_t d) {
  return {data, heads, len, d, 0};
}

// d floats of each of `rows` rows, `ld` apart, set to zero: an output's
// rows where they lie (HeadRows::ld).
inline void ZeroRows(float* data, int64_t rows, int64_t ld, int64_t d) {
  for (int64_t r = 0; r < rows; ++r) std::memset(data + r * ld, 0, d * sizeof(float));
}

struct Problem {
  AttentionParams params;
  // q, k and v: heads-first for every loop (the row-by-row and BLAS loops
  // read them as dense heads-first arrays from .data), or the interleaved
  // inputs in place for the packed kernels.
  HeadRows<const float> q_rows, k_rows, v_rows;
  // f16 keys and values (Half's bits) instead of k and v: the rowwise path
  // only, for any number of query rows (a decoding step against 16-bit
  // caches; attention.h).
  const uint16_t* k_f16 = nullptr;
  const uint16_t* v_f16 = nullptr;
  // Per batch item, keys at or past key_end[b] are padding (k_len if none).
  std::vector<int64_t> key_end;
  // [batch, k_len], 1 = padding; empty unless the op got a padding mask.
  std::vector<uint8_t> padding;
  // [batch, k_len]: the batch item whose keys and values position j of
  // item b reads (attention.h); null: its own.
  const int32_t* key_rows = nullptr;

  // Exclusive end of the keys that query row i of batch item b may see.
  int64_t RowKeyEnd(int64_t b, int64_t i) const {
    int64_t end = key_end[b];
    if (params.causal) {
      end = std::min(end, std::max<int64_t>(0, i + params.k_len - params.q_len + 1));
    }
    return end;
  }
};

// C = alpha * op(A) op(B) + beta * C, row-major, beta 0 or 1. Skips empty
// products (BLAS rejects zero leading dimensions).
void Gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc);

// Sets the masked scores of a tile to -inf: rows [q0, q0 + rows) of batch
// item b against keys [c0, c0 + cols); row r starts at scores + r * ld.
void MaskScores(const Problem& problem, int64_t b, int64_t q0, int64_t rows, int64_t c0,
                int64_t cols, float* scores, int64_t ld);

// multipliers[j] = 0 (dropped) or 1 / (1 - p) for elements
// [first, first + count) of the dropout stream (layout in attention.h).
void DropoutMultipliers(const AttentionParams& params, uint64_t first, int64_t count,
                        float* multipliers);

// What one backward task works on: a (batch, head) slice of the inputs,
// group `group` of that head's key tiles, and the dQ rows it accumulates into
// (its own slab when a head is split over groups > 1 tasks), zeroed here.
// Rows of q, k, v, d_out and d_q are ld_q, ld_k, ... apart (HeadRows::ld);
// a slab of dQ is heads-first.
struct BackwardHead {
  int64_t bh, b, group;
  const float* q;
  const float* k;
  const float* v;
  const float* d_out;
  const float* lse;
  const float* delta;
  float* d_q;
  int64_t ld_q, ld_k, ld_v, ld_d_out, ld_d_q;
};
BackwardHead StartBackwardHead(const Problem& problem, int64_t task, int64_t groups,
                               const float* lse, const HeadRows<const float>& d_out,
                               const float* delta, const HeadRows<float>& dq, float* dq_slabs);

// The first query row that sees key c0: 0, or under the causal mask the row
// i with i >= c0 - (k_len - q_len).
int64_t FirstQueryRow(const AttentionParams& params, int64_t c0);

// Applies the dropout multipliers of a tile (rows [q0, q0 + rows) of head bh
// against keys [c0, c0 + cols), rows `ld` apart) to P, into `dropped`, and to
// dP in place. Returns P o M: `probs` itself when there is no dropout.
const float* ApplyTileDropout(const AttentionParams& params, int64_t bh, int64_t q0, int64_t rows,
                              int64_t c0, int64_t cols, int64_t ld, const float* probs,
                              float* d_scores, float* dropped, float* multipliers);

// Runs fn(task, scratch) for every task in [0, count) on the default pool,
// handing tasks out one at a time (causal tiles differ in cost); each worker
// owns `scratch_floats` floats of scratch.
template <typename Fn>
void ParallelTasks(int64_t count, int64_t scratch_floats, const Fn& fn) {
  ThreadPool* pool = ThreadPool::Default();
  std::atomic<int64_t> next{0};
  pool->ParallelFor(std::min<int64_t>(count, pool->num_threads()), 1, [&](int64_t, int64_t) {
    CacheAlignedVector<float> scratch(scratch_floats);
    for (int64_t task; (task = next.fetch_add(1)) < count;) {
      fn(task, scratch.data());
    }
  });
}

// out [batch, heads, q_len, d_v] and lse [batch, heads, q_len].
void Forward(const Problem& problem, float* out, float* lse);

// The gradients into dq, dk and dv, given out and d_out: heads-first for
// every loop; in place (interleaved) where UsePackedKernels.
void Backward(const Problem& problem, const HeadRows<const float>& out, const float* lse,
              const HeadRows<const float>& d_out, const HeadRows<float>& dq,
              const HeadRows<float>& dk, const HeadRows<float>& dv);

// Forward's whole job when q_len <= kMaxRowwiseQueries (attention_params.h),
// or with f16 keys and values: row by row, two matrix-vector passes each
// (attention_cpu_rowwise.cc). Up
// to a beam's width of rows, re-reading a head's K and V per row (from L1 or
// L2) costs less than a tile's setup. The only path that takes key rows.
void ForwardRowwise(const Problem& problem, float* out, float* lse);

// Whether Forward takes ForwardRowwise: 1 .. kMaxRowwiseQueries query rows
// (decoding), key rows, or f16 keys and values. The op's kernel asks it
// before reading its inputs, to know whether they may stay in place.
inline bool ForwardIsRowwise(const AttentionParams& p, bool key_rows, bool f16_keys) {
  return (p.q_len >= 1 && p.q_len <= kMaxRowwiseQueries) || key_rows || f16_keys;
}

// The largest head size the packed kernels take (their per-worker scratch
// holds K^T and V^T of one key tile).
inline constexpr int64_t kMaxPackedHeadSize = 256;

// Whether Forward and Backward run on the packed kernels
// (attention_cpu_packed.cc): head sizes that are multiples of 16. Other
// sizes take the BLAS tile loops.
bool UsePackedKernels(const AttentionParams& params);

// The packed kernels, reading the problem's q_rows, k_rows and v_rows and
// writing through HeadRows (heads-first or interleaved): ForwardPacked is
// Forward's whole job; BackwardPacked is the tile loop of Backward, given
// delta_i = dO_i . O_i ([batch * heads, q_len]) and the split of each
// head's key tiles into `groups` tasks (dQ goes to dq_slabs, [groups,
// batch * heads, q_len, d_k], when groups > 1).
void ForwardPacked(const Problem& problem, const HeadRows<float>& out, float* lse);
void BackwardPacked(const Problem& problem, const float* lse, const HeadRows<const float>& d_out,
                    const float* delta, int64_t groups, const HeadRows<float>& dq,
                    const HeadRows<float>& dk, const HeadRows<float>& dv, float* dq_slabs);

}  // namespace attention_cpu
TFM_ISA_END

#endif  // TFM_OPS_ATTENTION_ATTENTION_CPU_TILES_H_

// kv_cache_write (and kv_cache_write_at), kv_cache_gather and
// kv_cache_reorder: the attention key/value caches of incremental decoding,
// [rows, heads, capacity, d] (the attention op's [batch, heads, k_len, d]
// layout with room for every step of a search).
//
// A step writes its new position into the cache in place instead of
// concatenating (no copy of the whole cache, no allocation per step), and
// the attention op reads the first `length` positions through its key
// lengths mask. A beam search that reorders its hypotheses moves the rows
// that changed in place, copying only the positions written so far (most
// hypotheses keep their row from one step to the next); a gather into a new
// cache grows one that is full, or widens a beam. The kernels move bytes:
// f32 and f16 are registered on the CPU, f32, f16 and bf16 on CUDA. On the
// CPU an f16 cache takes f32 steps, rounded to nearest even as they are
// written (int8 decoding's 16-bit caches: half the bytes a step reads).
#ifndef TFM_OPS_KV_CACHE_KV_CACHE_H_
#define TFM_OPS_KV_CACHE_KV_CACHE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace tfm {

// cache[r, h, position + i, :] = x[r, first_head + h, i, :] for x [rows,
// x_heads, n, d] (rows <= the cache's: its first rows), in place; position + n must not exceed the capacity, and x
// has at least first_head + the cache's heads. x with more heads than the
// cache is a fused projection ([rows, 3 heads, 1, d] of queries, keys and
// values) whose keys and values go to their caches without a split copy.
absl::Status KvCacheWrite(const Tensor& cache, const Tensor& x, int64_t position,
                          int64_t first_head = 0);

// KvCacheWrite at the position held by `position`, a [1] i32 tensor on the
// cache's device: the step of a captured CUDA graph, replayed at every
// position without a new launch. The host cannot see the position, so the
// caller guarantees 0 <= position <= capacity - n: the CPU kernel returns
// an error otherwise, and the CUDA kernel (which cannot report one without
// waiting for the GPU) writes nothing.
absl::Status KvCacheWriteAt(const Tensor& cache, const Tensor& x, const Tensor& position,
                            int64_t first_head = 0);

// A new cache [rows.size, heads, capacity, d] whose row i holds positions
// 0 .. length - 1 of cache row rows[i] (i32 ids in [0, cache rows)); later
// positions are left unset (nobody reads past the written length). length
// may not exceed either capacity: a larger `capacity` grows a full cache.
// `rows` may also be [n, length]: position t of new row i comes
// from cache row rows[i, t] (resolving the key rows of a cache that a beam
// search reordered by table, ops/attention/attention.h).
absl::StatusOr<Tensor> KvCacheGather(const Tensor& cache, const Tensor& rows, int64_t length,
                                     int64_t capacity);

// How kv_cache_reorder moves rows within a cache: every source is read
// before any row is written, so a row that is both read and overwritten is
// first staged (copied aside).
struct KvReorderPlan {
  std::vector<int32_t> staged;  // Rows copied to scratch slot 0, 1, ...
  // New row dst[i] = old row src[i], which no move overwrites.
  std::vector<int32_t> from_cache_dst, from_cache_src;
  // New row dst[i] = the scratch slot slot[i].
  std::vector<int32_t> from_scratch_dst, from_scratch_slot;
  // The op's plan input: staged, from_cache_dst, from_cache_src,
  // from_scratch_dst, from_scratch_slot, one after the other.
  std::vector<int32_t> Flat() const;
};

// The plan that makes rows 0 .. rows.size() - 1 of a cache of `cache_rows`
// rows hold old rows rows[0], rows[1], ... (each in [0, cache_rows);
// rows.size() <= cache_rows); rows left where they are move nowhere.
absl::StatusOr<KvReorderPlan> PlanKvReorder(absl::Span<const int32_t> rows, int64_t cache_rows);

// In place: row i of `cache` becomes old row rows[i] for positions 0 ..
// length - 1 (later positions are left as they are: nobody reads past the
// written length), for rows.size() <= the cache's rows. Returns the cache's
// first rows.size() rows (a view of the same buffer). Copies only the rows
// that change (and stages those both read and overwritten), with no new
// cache: what a beam search's reordering needs.
absl::StatusOr<Tensor> KvCacheReorder(const Tensor& cache, absl::Span<const int32_t> rows,
                                      int64_t length);

// A reorder planned on the host and its plan uploaded once, for every cache
// of `cache_rows` rows on `device`: a decoder's caches (two a layer) all
// move alike, so a step plans and uploads once instead of once a cache.
struct UploadedKvReorder {
  int64_t rows = 0;        // rows.size(): the caches keep their first `rows`.
  int64_t cache_rows = 0;  // The caches it serves.
  int64_t staged = 0, from_cache = 0, from_scratch = 0;
  Tensor plan;  // KvReorderPlan::Flat() on the device; undefined: nothing moves.
};
absl::StatusOr<UploadedKvReorder> UploadKvReorder(absl::Span<const int32_t> rows,
                                                  int64_t cache_rows, const Device& device);

// KvCacheReorder(cache, rows, length) with the rows' uploaded plan.
absl::StatusOr<Tensor> KvCacheReorder(const Tensor& cache, const UploadedKvReorder& reorder,
                                      int64_t length);

}  // namespace tfm

#endif  // TFM_OPS_KV_CACHE_KV_CACHE_H_

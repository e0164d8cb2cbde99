// kv_cache_write and kv_cache_gather: the attention key/value caches of
// incremental decoding, [rows, heads, capacity, d] (the attention op's
// [batch, heads, k_len, d] layout with room for every step of a search).
//
// A step writes its new position into the cache in place instead of
// concatenating (no copy of the whole cache, no allocation per step), and
// the attention op reads the first `length` positions through its key
// lengths mask. A beam search that reorders its hypotheses gathers rows,
// copying only the positions written so far (and grows a cache that is full
// the same way). Any 4-byte dtype (the kernels
// move bytes); f32 is registered, and on CUDA f16 and bf16 too.
#ifndef TFM_OPS_KV_CACHE_KV_CACHE_H_
#define TFM_OPS_KV_CACHE_KV_CACHE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

// cache[:, h, position + i, :] = x[:, first_head + h, i, :] for x [rows,
// x_heads, n, d], in place; position + n must not exceed the capacity, and x
// has at least first_head + the cache's heads. x with more heads than the
// cache is a fused projection ([rows, 3 heads, 1, d] of queries, keys and
// values) whose keys and values go to their caches without a split copy.
absl::Status KvCacheWrite(const Tensor& cache, const Tensor& x, int64_t position,
                          int64_t first_head = 0);

// A new cache [rows.size, heads, capacity, d] whose row i holds positions
// 0 .. length - 1 of cache row rows[i] (i32 ids in [0, cache rows)); later
// positions are left unset (nobody reads past the written length). length
// may not exceed either capacity: a larger `capacity` grows a full cache.
absl::StatusOr<Tensor> KvCacheGather(const Tensor& cache, const Tensor& rows, int64_t length,
                                     int64_t capacity);

}  // namespace tfm

#endif  // TFM_OPS_KV_CACHE_KV_CACHE_H_

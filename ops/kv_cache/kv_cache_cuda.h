// Launchers of the key/value cache CUDA kernels (plain C++: included by host
// code). Both move bytes. Each returns nullptr or the CUDA error text.
#ifndef TFM_OPS_KV_CACHE_KV_CACHE_CUDA_H_
#define TFM_OPS_KV_CACHE_KV_CACHE_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

// cache[r, h, position + t, :] = x[r, first_head + h, t, :] for cache [rows,
// heads, capacity, d] and x [rows, x_heads, n, d]; `row_bytes` = d * element
// size.
const char* LaunchKvCacheWrite(void* cache, const void* x, int64_t rows, int64_t heads,
                               int64_t x_heads, int64_t first_head, int64_t capacity, int64_t n,
                               int64_t position, int64_t row_bytes, StreamHandle stream);

// LaunchKvCacheWrite at the position *position (device memory, read by the
// kernel: no host sync, so a captured graph replays it at every step). The
// caller guarantees 0 <= *position <= capacity - n; outside that range the
// kernel writes nothing (and reports nothing).
const char* LaunchKvCacheWriteAt(void* cache, const void* x, const int32_t* position,
                                 int64_t rows, int64_t heads, int64_t x_heads, int64_t first_head,
                                 int64_t capacity, int64_t n, int64_t row_bytes,
                                 StreamHandle stream);

// The first i < count with rows[i] outside [0, cache_rows), with that row,
// or *position = -1. `scratch`: 8 bytes of device memory. Waits for the
// stream (one 8-byte copy back).
const char* FindBadCacheRow(const int32_t* rows, int64_t count, int64_t cache_rows, void* scratch,
                            StreamHandle stream, int64_t* position, int64_t* row);

// kv_cache_reorder's moves as PlanKvReorder planned them (`plan` its Flat()
// on the device): the `staged` rows copied into `scratch` ([staged, heads,
// length] rows of `row_bytes`), then the moves from the cache and from the
// scratch, in stream order.
const char* LaunchKvCacheReorder(void* cache, const int32_t* plan, int64_t staged,
                                 int64_t from_cache, int64_t from_scratch, void* scratch,
                                 int64_t heads, int64_t capacity, int64_t length, int64_t row_bytes,
                                 StreamHandle stream);

// out[i, h, t, :] = cache[rows[i], h, t, :] for t < length, out [count,
// heads, capacity, d], cache [.., heads, source_capacity, d] (rows checked).
const char* LaunchKvCacheGather(const void* cache, const int32_t* rows, void* out, int64_t count,
                                int64_t heads, int64_t source_capacity, int64_t capacity,
                                int64_t length, int64_t row_bytes, StreamHandle stream);

// As LaunchKvCacheGather with a row per position (the decoding cache's key
// rows): out[i, h, t, :] = cache[rows[i * length + t], h, t, :] for t <
// length. Rows are not checked here.
const char* LaunchKvCacheGatherByPosition(const void* cache, const int32_t* rows, void* out,
                                          int64_t count, int64_t heads, int64_t source_capacity,
                                          int64_t capacity, int64_t length, int64_t row_bytes,
                                          StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_KV_CACHE_KV_CACHE_CUDA_H_

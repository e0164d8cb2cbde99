// Launchers of the embedding CUDA kernels (plain C++: included by host
// code). T is the host element type (float, Half or BFloat16), Id int32_t or
// int64_t; declarations suffice. Each returns nullptr or the CUDA error text.
#ifndef TFM_OPS_EMBEDDING_EMBEDDING_CUDA_H_
#define TFM_OPS_EMBEDDING_EMBEDDING_CUDA_H_

#include <cstddef>
#include <cstdint>

#include "core/device.h"

namespace tfm {

struct Half;
struct BFloat16;

// The first position p < count whose id is outside [0, vocab), with that id,
// or *position = -1. `scratch`: 8 bytes of device memory. Waits for the
// stream (one 8-byte copy back).
template <typename Id>
const char* FindBadEmbeddingId(const Id* ids, int64_t count, int64_t vocab, void* scratch,
                               StreamHandle stream, int64_t* position, int64_t* id);

// out[p, :] = scale * table[ids[p], :] for p < positions (ids checked).
template <typename T, typename Id>
const char* LaunchEmbedding(const T* table, const Id* ids, T* out, int64_t positions, int64_t d,
                            float scale, StreamHandle stream);

// d_table[row, :] = scale * sum of d_out[p, :] over p with ids[p] = row, in
// f32: `accumulator` ([vocab, d] f32) is zeroed, takes atomic adds, and is
// rounded into d_table; for float T it may be d_table itself.
template <typename T, typename Id>
const char* LaunchEmbeddingBackward(const Id* ids, const T* d_out, float* accumulator, T* d_table,
                                    int64_t positions, int64_t vocab, int64_t d, float scale,
                                    StreamHandle stream);

// Deterministic mode (core/deterministic.h): the same d_table, summed in a
// fixed order: positions sorted by id (a stable radix sort, so each id's
// positions stay in order), then each id's row summed in f32 in an order
// fixed by the ids alone (embedding_sorted_sums.h) and rounded once.
// `scratch` holds EmbeddingBackwardSortedScratchBytes(positions, vocab, d)
// bytes of device memory.
template <typename Id>
size_t EmbeddingBackwardSortedScratchBytes(int64_t positions, int64_t vocab, int64_t d);
template <typename T, typename Id>
const char* LaunchEmbeddingBackwardSorted(const Id* ids, const T* d_out, T* d_table,
                                          int64_t positions, int64_t vocab, int64_t d,
                                          float scale, void* scratch, size_t scratch_bytes,
                                          StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_EMBEDDING_EMBEDDING_CUDA_H_

// The deterministic embedding gradient's row sums, cut into pieces that run
// in parallel; the CUDA kernels call these functions, and a CPU test runs
// the very same code over every thread index.
//
// Input: the positions sorted by id with a stable sort, so that each id's
// positions are a run in position order. Summing each run in one thread
// (the first version) is deterministic but serial: padding repeats
// thousands of times in a 25k-token batch, so one thread per column walked
// thousands of positions while the rest of the GPU idled.
//
// Here the sorted positions are cut into chunks of kSortedSumsChunk:
// - Pass 1 (SumChunkRuns), one thread per chunk and column, sums each run
//   of one id within its chunk in position order. A run that holds all of
//   its id's positions is that id's row, stored at once. A run that
//   continues an id from the chunk before is the chunk's `entering` piece;
//   a run that starts an id going on into the next chunk, its `leaving`
//   piece.
// - Pass 2 (JoinChunkPieces), one thread per chunk and column: a chunk whose
//   leaving piece starts an id adds the next chunks' entering pieces to it,
//   in chunk order, until the id ends, and stores the row.
// Every row is stored exactly once, and each sum has one order whatever the
// schedule (the run's positions in order, then its pieces in chunk order),
// so the gradient repeats bit for bit. No thread takes more than
// kSortedSumsChunk steps in pass 1, or positions / kSortedSumsChunk in
// pass 2. A run inside one chunk is summed exactly as position by position.
#ifndef TFM_OPS_EMBEDDING_EMBEDDING_SORTED_SUMS_H_
#define TFM_OPS_EMBEDDING_EMBEDDING_SORTED_SUMS_H_

#include <cstdint>

#include "core/host_device.h"

namespace tfm {
namespace embedding_sorted_sums {

// Long enough that the pieces (two f32 per chunk and column) stay a small
// fraction of the gradient read; short enough for thousands of threads.
inline constexpr int64_t kSortedSumsChunk = 32;

TFM_HOST_DEVICE int64_t Chunks(int64_t positions) {
  return (positions + kSortedSumsChunk - 1) / kSortedSumsChunk;
}

// Sorted positions [ChunkBegin, ChunkEnd) make up chunk `chunk`.
TFM_HOST_DEVICE int64_t ChunkBegin(int64_t chunk) { return chunk * kSortedSumsChunk; }
TFM_HOST_DEVICE int64_t ChunkEnd(int64_t chunk, int64_t positions) {
  const int64_t end = (chunk + 1) * kSortedSumsChunk;
  return end < positions ? end : positions;
}

// Pass 1 for one chunk and column. `grad(k)` is the summand of the k-th
// sorted position (scale * d_out[order[k], column]); `store(id, sum)`
// writes element `column` of the id's row. `entering` and `leaving` are
// [Chunks(positions), d] f32, indexed chunk * d + column.
// (nv_exec_check_disable: the functors' operators may be device-only; the
// kernels call these from device code, the test from the host.)
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <typename Id, typename Grad, typename Store>
TFM_HOST_DEVICE void SumChunkRuns(const Id* sorted_ids, int64_t positions, int64_t d,
                                  int64_t chunk, int64_t column, const Grad& grad,
                                  const Store& store, float* entering, float* leaving) {
  const int64_t begin = ChunkBegin(chunk), end = ChunkEnd(chunk, positions);
  int64_t run_begin = begin;
  Id id = sorted_ids[begin];
  float sum = 0.0f;
  for (int64_t k = begin;; ++k) {
    if (k == end || sorted_ids[k] != id) {
      // The run [run_begin, k) of `id` ends here (in this chunk or at its end).
      const bool continues_before = run_begin == begin && begin > 0 && sorted_ids[begin - 1] == id;
      const bool continues_after = k == end && end < positions && sorted_ids[end] == id;
      if (continues_before) {
        entering[chunk * d + column] = sum;
      } else if (continues_after) {
        leaving[chunk * d + column] = sum;
      } else {
        store(id, sum);
      }
      if (k == end) return;
      run_begin = k;
      id = sorted_ids[k];
      sum = 0.0f;
    }
    sum += grad(k);
  }
}

// Pass 2 for one chunk and column: where the chunk's last run starts an id
// that goes on past the chunk, that id's row is the leaving piece plus the
// following chunks' entering pieces, added in chunk order.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <typename Id, typename Store>
TFM_HOST_DEVICE void JoinChunkPieces(const Id* sorted_ids, int64_t positions, int64_t d,
                                     int64_t chunk, int64_t column, const float* entering,
                                     const float* leaving, const Store& store) {
  const int64_t begin = ChunkBegin(chunk), end = ChunkEnd(chunk, positions);
  if (end >= positions) return;
  const Id id = sorted_ids[end - 1];
  if (sorted_ids[end] != id) return;  // The last run ends in this chunk.
  // Sorted, so an id both before the chunk and past it fills the chunk: it
  // started in an earlier chunk, whose thread joins it.
  if (begin > 0 && sorted_ids[begin - 1] == id) return;
  float sum = leaving[chunk * d + column];
  for (int64_t next = chunk + 1;; ++next) {
    sum += entering[next * d + column];
    const int64_t next_end = ChunkEnd(next, positions);
    if (next_end == positions || sorted_ids[next_end] != id) break;
  }
  store(id, sum);
}

}  // namespace embedding_sorted_sums
}  // namespace tfm

#endif  // TFM_OPS_EMBEDDING_EMBEDDING_SORTED_SUMS_H_

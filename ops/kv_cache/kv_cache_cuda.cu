// CUDA kernels of the key/value cache ops: both copy contiguous segments
// (one per (row, head) slice) between strided places, so one grid-stride
// kernel serves both, in the widest word (16, 8, 4 or 2 bytes) that divides
// every segment, stride and address. Consecutive threads move consecutive
// words of a segment.
#include "ops/cuda_elementwise.cuh"
#include "ops/kv_cache/kv_cache_cuda.h"

namespace tfm {
namespace {

using cuda_elementwise::BlocksFor;
using cuda_elementwise::GlobalThread;
using cuda_elementwise::GridThreads;
using cuda_elementwise::kThreads;
using cuda_elementwise::LastError;

// Segments of `words` words, in units of Word.
struct SegmentCopy {
  int64_t segments;
  int64_t words;
  int64_t source_stride;  // Words from one source segment to the next.
  int64_t target_stride;
  // Source segment of target segment s (row s / heads, head s % heads):
  // row * source_heads + s % heads, row being s / heads or, with rows (a
  // gather of cache rows), rows[s / heads]. A write from x with more heads
  // than the cache (source_heads > heads) starts at x's first head to copy.
  const int32_t* rows;
  int64_t heads;
  int64_t source_heads;
  // Target segment of segment s: s, or with target_rows (moves within a
  // cache) target_rows[s / heads] * heads + s % heads.
  const int32_t* target_rows = nullptr;
  // With position (kv_cache_write_at: the step's position in device memory,
  // so that a captured graph serves every step), every target segment
  // starts *position * target_position_stride words further on, and nothing
  // is written unless 0 <= *position <= max_position: a bad position cannot
  // be reported without a host sync, so it must at least not write out of
  // bounds.
  const int32_t* position = nullptr;
  int64_t target_position_stride = 0;
  int64_t max_position = 0;
};

template <typename Word>
__global__ void CopySegmentsKernel(const Word* source, Word* target, SegmentCopy copy) {
  if (copy.position != nullptr) {
    // One load per thread, before the loop; the same for every thread.
    const int64_t position = *copy.position;
    if (position < 0 || position > copy.max_position) return;
    target += position * copy.target_position_stride;
  }
  const int64_t total = copy.segments * copy.words;
  for (int64_t u = GlobalThread(); u < total; u += GridThreads()) {
    const int64_t segment = u / copy.words;
    const int64_t word = u - segment * copy.words;
    const int64_t row = copy.rows == nullptr ? segment / copy.heads
                                             : static_cast<int64_t>(copy.rows[segment / copy.heads]);
    const int64_t source_segment = row * copy.source_heads + segment % copy.heads;
    const int64_t target_segment =
        copy.target_rows == nullptr
            ? segment
            : static_cast<int64_t>(copy.target_rows[segment / copy.heads]) * copy.heads +
                  segment % copy.heads;
    target[target_segment * copy.target_stride + word] =
        source[source_segment * copy.source_stride + word];
  }
}

template <typename Word>
const char* Launch(const void* source, void* target, SegmentCopy bytes, cudaStream_t stream) {
  constexpr int64_t kWord = sizeof(Word);
  SegmentCopy words = bytes;
  words.words /= kWord;
  words.source_stride /= kWord;
  words.target_stride /= kWord;
  words.target_position_stride /= kWord;
  CopySegmentsKernel<Word><<<BlocksFor(words.segments * words.words), kThreads, 0, stream>>>(
      static_cast<const Word*>(source), static_cast<Word*>(target), words);
  return LastError();
}

// launch(Word{}) with the widest word (16, 8, 4, 2 or 1 bytes) that
// divides `alignment` (every size, stride and address or'ed together).
template <typename LaunchFn>
const char* WithWidestWord(uint64_t alignment, LaunchFn launch) {
  if (alignment % 16 == 0) return launch(uint4{});
  if (alignment % 8 == 0) return launch(uint2{});
  if (alignment % 4 == 0) return launch(uint32_t{});
  if (alignment % 2 == 0) return launch(uint16_t{});
  return launch(uint8_t{});
}

// `copy` in bytes; picks the word (one that divides the per-position
// offset too).
const char* CopySegments(const void* source, void* target, const SegmentCopy& copy,
                         StreamHandle stream) {
  if (copy.segments * copy.words == 0) return nullptr;
  cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  const uint64_t alignment =
      static_cast<uint64_t>(copy.words | copy.source_stride | copy.target_stride |
                            copy.target_position_stride) |
      reinterpret_cast<uintptr_t>(source) | reinterpret_cast<uintptr_t>(target);
  return WithWidestWord(alignment, [&](auto word) {
    return Launch<decltype(word)>(source, target, copy, cuda_stream);
  });
}

// Rows of `words` words: out[i, h, t] = cache[rows[i * length + t], h, t].
struct PositionGather {
  int64_t count, heads, source_capacity, capacity, length, words;
};

template <typename Word>
__global__ void GatherByPositionKernel(const Word* cache, const int32_t* rows, Word* out,
                                       PositionGather g) {
  const int64_t total = g.count * g.heads * g.length * g.words;
  for (int64_t u = GlobalThread(); u < total; u += GridThreads()) {
    const int64_t word = u % g.words;
    int64_t rest = u / g.words;
    const int64_t t = rest % g.length;
    rest /= g.length;
    const int64_t h = rest % g.heads, i = rest / g.heads;
    const int64_t row = rows[i * g.length + t];
    out[((i * g.heads + h) * g.capacity + t) * g.words + word] =
        cache[((row * g.heads + h) * g.source_capacity + t) * g.words + word];
  }
}

template <typename Word>
const char* LaunchGatherByPosition(const void* cache, const int32_t* rows, void* out,
                                   PositionGather g, cudaStream_t stream) {
  g.words /= static_cast<int64_t>(sizeof(Word));
  GatherByPositionKernel<Word>
      <<<BlocksFor(g.count * g.heads * g.length * g.words), kThreads, 0, stream>>>(
          static_cast<const Word*>(cache), rows, static_cast<Word*>(out), g);
  return LastError();
}

}  // namespace

const char* LaunchKvCacheGatherByPosition(const void* cache, const int32_t* rows, void* out,
                                          int64_t count, int64_t heads, int64_t source_capacity,
                                          int64_t capacity, int64_t length, int64_t row_bytes,
                                          StreamHandle stream) {
  if (count * heads * length * row_bytes == 0) return nullptr;
  const PositionGather g{count, heads, source_capacity, capacity, length, row_bytes};
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  const uint64_t alignment = static_cast<uint64_t>(row_bytes) |
                             reinterpret_cast<uintptr_t>(cache) | reinterpret_cast<uintptr_t>(out);
  return WithWidestWord(alignment, [&](auto word) {
    return LaunchGatherByPosition<decltype(word)>(cache, rows, out, g, cuda_stream);
  });
}

const char* LaunchKvCacheWrite(void* cache, const void* x, int64_t rows, int64_t heads,
                               int64_t x_heads, int64_t first_head, int64_t capacity, int64_t n,
                               int64_t position, int64_t row_bytes, StreamHandle stream) {
  return CopySegments(static_cast<const char*>(x) + first_head * n * row_bytes,
                      static_cast<char*>(cache) + position * row_bytes,
                      SegmentCopy{rows * heads, n * row_bytes, n * row_bytes, capacity * row_bytes,
                                  nullptr, heads, x_heads},
                      stream);
}

const char* LaunchKvCacheWriteAt(void* cache, const void* x, const int32_t* position,
                                 int64_t rows, int64_t heads, int64_t x_heads, int64_t first_head,
                                 int64_t capacity, int64_t n, int64_t row_bytes,
                                 StreamHandle stream) {
  SegmentCopy copy{rows * heads, n * row_bytes, n * row_bytes, capacity * row_bytes, nullptr,
                   heads, x_heads};
  copy.position = position;
  copy.target_position_stride = row_bytes;
  copy.max_position = capacity - n;
  return CopySegments(static_cast<const char*>(x) + first_head * n * row_bytes, cache, copy,
                      stream);
}

const char* FindBadCacheRow(const int32_t* rows, int64_t count, int64_t cache_rows, void* scratch,
                            StreamHandle stream, int64_t* position, int64_t* row) {
  return cuda_elementwise::FindFirstOutOfRange(rows, count, cache_rows,
                                               static_cast<unsigned long long*>(scratch),
                                               static_cast<cudaStream_t>(stream), position, row);
}

const char* LaunchKvCacheReorder(void* cache, const int32_t* plan, int64_t staged,
                                 int64_t from_cache, int64_t from_scratch, void* scratch,
                                 int64_t heads, int64_t capacity, int64_t length, int64_t row_bytes,
                                 StreamHandle stream) {
  const int32_t* cache_dst = plan + staged;
  const int32_t* cache_src = cache_dst + from_cache;
  const int32_t* scratch_dst = cache_src + from_cache;
  const int32_t* scratch_slot = scratch_dst + from_scratch;
  const int64_t segment = length * row_bytes, stride = capacity * row_bytes;
  // The rows both read and overwritten, aside; then the moves, in stream
  // order after them.
  if (const char* error = CopySegments(
          cache, scratch, SegmentCopy{staged * heads, segment, stride, segment, plan, heads, heads},
          stream)) {
    return error;
  }
  if (const char* error = CopySegments(cache, cache,
                                       SegmentCopy{from_cache * heads, segment, stride, stride,
                                                   cache_src, heads, heads, cache_dst},
                                       stream)) {
    return error;
  }
  return CopySegments(scratch, cache,
                      SegmentCopy{from_scratch * heads, segment, segment, stride, scratch_slot,
                                  heads, heads, scratch_dst},
                      stream);
}

const char* LaunchKvCacheGather(const void* cache, const int32_t* rows, void* out, int64_t count,
                                int64_t heads, int64_t source_capacity, int64_t capacity,
                                int64_t length, int64_t row_bytes, StreamHandle stream) {
  return CopySegments(cache, out,
                      SegmentCopy{count * heads, length * row_bytes, source_capacity * row_bytes,
                                  capacity * row_bytes, rows, heads, heads},
                      stream);
}

}  // namespace tfm

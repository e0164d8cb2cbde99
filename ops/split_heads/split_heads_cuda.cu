// CUDA kernel of split_heads and merge_heads: one grid-stride copy in the
// widest word (16, 8, 4, 2 or 1 bytes) that divides the rows and both
// addresses; consecutive threads write consecutive words of the output and
// read consecutive words of a source row, so both sides coalesce.
#include "ops/cuda_elementwise.cuh"
#include "ops/split_heads/split_heads_cuda.h"

namespace tfm {
namespace {

using cuda_elementwise::BlocksFor;
using cuda_elementwise::GlobalThread;
using cuda_elementwise::GridThreads;
using cuda_elementwise::kThreads;
using cuda_elementwise::LastError;

// Word u of the output is word u % words_per_row of output row u /
// words_per_row; the source row is the same (b, t, h) in the other order.
template <typename Word, bool kSplit>
__global__ void PermuteHeadsKernel(const Word* from, Word* to, int64_t len, int64_t heads,
                                   int64_t words_per_row, int64_t total_words) {
  for (int64_t u = GlobalThread(); u < total_words; u += GridThreads()) {
    const int64_t row = u / words_per_row;
    const int64_t word = u - row * words_per_row;
    const int64_t per_batch = len * heads;
    const int64_t b = row / per_batch;
    const int64_t rest = row - b * per_batch;
    int64_t source_row;
    if (kSplit) {  // Output row (b, h, t) from input row (b, t, h).
      const int64_t h = rest / len, t = rest - h * len;
      source_row = (b * len + t) * heads + h;
    } else {  // Output row (b, t, h) from input row (b, h, t).
      const int64_t t = rest / heads, h = rest - t * heads;
      source_row = (b * heads + h) * len + t;
    }
    to[u] = from[source_row * words_per_row + word];
  }
}

template <typename Word>
const char* Launch(const void* from, void* to, int64_t batch, int64_t len, int64_t heads,
                   int64_t row_bytes, bool split, cudaStream_t stream) {
  const int64_t words_per_row = row_bytes / static_cast<int64_t>(sizeof(Word));
  const int64_t total = batch * len * heads * words_per_row;
  const Word* source = static_cast<const Word*>(from);
  Word* target = static_cast<Word*>(to);
  if (split) {
    PermuteHeadsKernel<Word, true><<<BlocksFor(total), kThreads, 0, stream>>>(
        source, target, len, heads, words_per_row, total);
  } else {
    PermuteHeadsKernel<Word, false><<<BlocksFor(total), kThreads, 0, stream>>>(
        source, target, len, heads, words_per_row, total);
  }
  return LastError();
}

}  // namespace

const char* LaunchPermuteHeads(const void* from, void* to, int64_t batch, int64_t len,
                               int64_t heads, int64_t row_bytes, bool split, StreamHandle stream) {
  if (batch * len * heads * row_bytes == 0) return nullptr;
  cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  // The widest word dividing the row and both addresses.
  const uint64_t alignment = static_cast<uint64_t>(row_bytes) | reinterpret_cast<uintptr_t>(from) |
                             reinterpret_cast<uintptr_t>(to);
  if (alignment % 16 == 0) {
    return Launch<uint4>(from, to, batch, len, heads, row_bytes, split, cuda_stream);
  }
  if (alignment % 8 == 0) {
    return Launch<uint2>(from, to, batch, len, heads, row_bytes, split, cuda_stream);
  }
  if (alignment % 4 == 0) {
    return Launch<uint32_t>(from, to, batch, len, heads, row_bytes, split, cuda_stream);
  }
  if (alignment % 2 == 0) {
    return Launch<uint16_t>(from, to, batch, len, heads, row_bytes, split, cuda_stream);
  }
  return Launch<uint8_t>(from, to, batch, len, heads, row_bytes, split, cuda_stream);
}

}  // namespace tfm

// CUDA kernel of split_heads and merge_heads: one grid-stride copy in the
// widest word (16, 8, 4, 2 or 1 bytes) that divides the rows and both
// addresses; consecutive threads write consecutive words of the output and
// read consecutive words of a source row, so both sides coalesce. A list of
// tensors (attention's q, k and v) takes one launch, an entry per grid row.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/cuda_elementwise.cuh"
#include "ops/split_heads/split_heads_cuda.h"

namespace tfm {
namespace {

using cuda_elementwise::BlocksFor;
using cuda_elementwise::GlobalThread;
using cuda_elementwise::GridThreads;
using cuda_elementwise::kThreads;
using cuda_elementwise::LastError;

// One list entry, in Words: its rows of words_per_row words, and the
// (batch, len, heads) row order of its input; the [batch, len] side's
// positions `slots` rows apart (PermuteHeadsTensor::slots).
struct PermuteEntry {
  const void* from;
  void* to;
  int64_t len, heads, slots, words_per_row, total_words;
};

// Up to kMaxPermuteEntries entries, passed by value (no list upload).
struct PermuteList {
  PermuteEntry entries[kMaxPermuteEntries];
};

// Word u of the heads-first side is word u % words_per_row of its row u /
// words_per_row; the other side's row is the same (b, t, h) in the other
// order. Split reads that row, merge writes it. blockIdx.y picks the entry.
template <typename Word, bool kSplit>
__global__ void PermuteHeadsKernel(PermuteList list) {
  const PermuteEntry e = list.entries[blockIdx.y];
  const Word* from = static_cast<const Word*>(e.from);
  Word* to = static_cast<Word*>(e.to);
  const int64_t per_batch = e.len * e.heads;
  for (int64_t u = GlobalThread(); u < e.total_words; u += GridThreads()) {
    const int64_t row = u / e.words_per_row;
    const int64_t word = u - row * e.words_per_row;
    const int64_t b = row / per_batch;
    const int64_t rest = row - b * per_batch;
    if (kSplit) {  // Output row (b, h, t) from input row (b, t, h).
      const int64_t h = rest / e.len, t = rest - h * e.len;
      to[u] = from[((b * e.len + t) * e.slots + h) * e.words_per_row + word];
    } else {  // Output row (b, t, h) from input row (b, h, t).
      const int64_t t = rest / e.heads, h = rest - t * e.heads;
      const int64_t source_row = (b * e.heads + h) * e.len + t;
      to[((b * e.len + t) * e.slots + h) * e.words_per_row + word] =
          from[source_row * e.words_per_row + word];
    }
  }
}

template <typename Word>
const char* Launch(const PermuteHeadsTensor* tensors, int count, bool split,
                   cudaStream_t stream) {
  PermuteList list{};
  int64_t most_words = 0;
  for (int i = 0; i < count; ++i) {
    const PermuteHeadsTensor& t = tensors[i];
    const int64_t words_per_row = t.row_bytes / static_cast<int64_t>(sizeof(Word));
    list.entries[i] = PermuteEntry{t.from, t.to, t.len, t.heads, t.slots > 0 ? t.slots : t.heads,
                                   words_per_row, t.batch * t.len * t.heads * words_per_row};
    most_words = most_words > list.entries[i].total_words ? most_words
                                                          : list.entries[i].total_words;
  }
  const dim3 grid(BlocksFor(most_words), count);
  if (split) {
    PermuteHeadsKernel<Word, true><<<grid, kThreads, 0, stream>>>(list);
  } else {
    PermuteHeadsKernel<Word, false><<<grid, kThreads, 0, stream>>>(list);
  }
  return LastError();
}

// One launch for up to kMaxPermuteEntries tensors, in the widest word that
// divides every row and address among them.
const char* LaunchGroup(const PermuteHeadsTensor* tensors, int count, bool split,
                        cudaStream_t stream) {
  uint64_t alignment = 0;
  for (int i = 0; i < count; ++i) {
    alignment |= static_cast<uint64_t>(tensors[i].row_bytes) |
                 reinterpret_cast<uintptr_t>(tensors[i].from) |
                 reinterpret_cast<uintptr_t>(tensors[i].to);
  }
  if (alignment % 16 == 0) return Launch<uint4>(tensors, count, split, stream);
  if (alignment % 8 == 0) return Launch<uint2>(tensors, count, split, stream);
  if (alignment % 4 == 0) return Launch<uint32_t>(tensors, count, split, stream);
  if (alignment % 2 == 0) return Launch<uint16_t>(tensors, count, split, stream);
  return Launch<uint8_t>(tensors, count, split, stream);
}

}  // namespace

const char* LaunchPermuteHeads(const PermuteHeadsTensor* tensors, int count, bool split,
                               StreamHandle stream) {
  // Empty tensors move nothing and take no launch.
  std::vector<PermuteHeadsTensor> nonempty;
  for (int i = 0; i < count; ++i) {
    const PermuteHeadsTensor& t = tensors[i];
    if (t.batch * t.len * t.heads * t.row_bytes != 0) nonempty.push_back(t);
  }
  for (size_t first = 0; first < nonempty.size(); first += kMaxPermuteEntries) {
    const int group = static_cast<int>(
        std::min<size_t>(kMaxPermuteEntries, nonempty.size() - first));
    if (const char* error = LaunchGroup(nonempty.data() + first, group, split,
                                        static_cast<cudaStream_t>(stream))) {
      return error;
    }
  }
  return nullptr;
}

}  // namespace tfm

// CUDA kernels of embedding and embedding_backward. The forward is a gather
// of rows in 16-byte packs when the rows and addresses allow (else element
// by element). The backward scatter-adds f32 atomics into an f32
// accumulator, 4 columns a thread (one 4-wide atomic on sm_90, where a big
// model's update spent 0.26 ms a call on one atomic per element) where the
// rows allow, else one element a thread, rounded once at the end for 16-bit
// tables; in deterministic mode it sorts the positions by id (CUB's
// stable radix sort) and sums each id's positions in a fixed order instead,
// in chunks that run in parallel (embedding_sorted_sums.h). Ids are checked
// before any kernel runs.
#include <cub/device/device_radix_sort.cuh>

#include "ops/cuda_elementwise.cuh"
#include "ops/embedding/embedding_cuda.h"
#include "ops/embedding/embedding_sorted_sums.h"

namespace tfm {
namespace {

using cuda_elementwise::Aligned16;
using cuda_elementwise::BlocksFor;
using cuda_elementwise::DeviceT;
using cuda_elementwise::ErrorText;
using cuda_elementwise::FromFloat;
using cuda_elementwise::GlobalThread;
using cuda_elementwise::GridThreads;
using cuda_elementwise::kThreads;
using cuda_elementwise::LastError;
using cuda_elementwise::ToFloat;

// kWidth consecutive elements, accessed as one load or store.
template <typename D, int kWidth>
struct alignas(kWidth * sizeof(D)) Run {
  D v[kWidth];
};

// Unit u is run u % row_runs of position u / row_runs.
template <typename D, typename Id, int kWidth>
__global__ void EmbeddingKernel(const D* table, const Id* ids, D* out, int64_t units,
                                int64_t row_runs, float scale) {
  using R = Run<D, kWidth>;
  for (int64_t u = GlobalThread(); u < units; u += GridThreads()) {
    const int64_t p = u / row_runs;
    const int64_t run = u - p * row_runs;
    const R in = reinterpret_cast<const R*>(table)[static_cast<int64_t>(ids[p]) * row_runs + run];
    R result;
#pragma unroll
    for (int j = 0; j < kWidth; ++j) result.v[j] = FromFloat<D>(scale * ToFloat(in.v[j]));
    reinterpret_cast<R*>(out)[u] = result;
  }
}

// float4 atomicAdd on global memory: sm_90 and later.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
constexpr bool kHasVectorAtomicAdd = true;
#else
constexpr bool kHasVectorAtomicAdd = false;
#endif

// kWidth columns a thread (1, or 4 where d % 4 == 0, d_out is aligned to 4
// elements and the accumulator to 16 bytes): unit u is columns kWidth (u %
// (d / kWidth)) on of position u / (d / kWidth), added by one 4-wide atomic
// on sm_90, else one atomic a column.
template <typename D, typename Id, int kWidth>
__global__ void EmbeddingBackwardKernel(const Id* ids, const D* d_out, float* accumulator,
                                        int64_t units, int64_t d, float scale) {
  using R = Run<D, kWidth>;
  const int64_t row_runs = d / kWidth;
  for (int64_t u = GlobalThread(); u < units; u += GridThreads()) {
    const int64_t p = u / row_runs;
    const int64_t column = kWidth * (u - p * row_runs);
    const R in = reinterpret_cast<const R*>(d_out)[u];
    float* target = accumulator + static_cast<int64_t>(ids[p]) * d + column;
    if constexpr (kWidth == 4 && kHasVectorAtomicAdd) {
      atomicAdd(reinterpret_cast<float4*>(target),
                make_float4(scale * ToFloat(in.v[0]), scale * ToFloat(in.v[1]),
                            scale * ToFloat(in.v[2]), scale * ToFloat(in.v[3])));
    } else {
#pragma unroll
      for (int k = 0; k < kWidth; ++k) atomicAdd(target + k, scale * ToFloat(in.v[k]));
    }
  }
}

template <typename D>
__global__ void RoundKernel(const float* in, D* out, int64_t count) {
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) out[i] = FromFloat<D>(in[i]);
}

__global__ void IotaKernel(int32_t* out, int64_t count) {
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) out[i] = static_cast<int32_t>(i);
}

// The summands and the rows of the sorted sums (embedding_sorted_sums.h):
// element `column` of scale * d_out at the k-th sorted position, and of an
// id's row of d_table.
template <typename D>
struct SortedGrad {
  const int32_t* order;
  const D* d_out;
  int64_t d, column;
  float scale;
  __device__ float operator()(int64_t k) const {
    return scale * ToFloat(d_out[static_cast<int64_t>(order[k]) * d + column]);
  }
};
template <typename D>
struct TableRowStore {
  D* d_table;
  int64_t d, column;
  template <typename Id>
  __device__ void operator()(Id id, float sum) const {
    d_table[static_cast<int64_t>(id) * d + column] = FromFloat<D>(sum);
  }
};

// Thread u: chunk u / d, column u % d (a warp reads consecutive columns).
template <typename D, typename Id>
__global__ void SumChunkRunsKernel(const Id* sorted_ids, const int32_t* order, const D* d_out,
                                   D* d_table, float* entering, float* leaving,
                                   int64_t positions, int64_t d, float scale) {
  const int64_t count = embedding_sorted_sums::Chunks(positions) * d;
  for (int64_t u = GlobalThread(); u < count; u += GridThreads()) {
    const int64_t chunk = u / d, column = u - chunk * d;
    embedding_sorted_sums::SumChunkRuns(sorted_ids, positions, d, chunk, column,
                                        SortedGrad<D>{order, d_out, d, column, scale},
                                        TableRowStore<D>{d_table, d, column}, entering, leaving);
  }
}

template <typename D, typename Id>
__global__ void JoinChunkPiecesKernel(const Id* sorted_ids, const float* entering,
                                      const float* leaving, D* d_table, int64_t positions,
                                      int64_t d) {
  const int64_t count = embedding_sorted_sums::Chunks(positions) * d;
  for (int64_t u = GlobalThread(); u < count; u += GridThreads()) {
    const int64_t chunk = u / d, column = u - chunk * d;
    embedding_sorted_sums::JoinChunkPieces(sorted_ids, positions, d, chunk, column, entering,
                                           leaving, TableRowStore<D>{d_table, d, column});
  }
}

// Bits a radix sort of ids below `vocab` needs.
int IdBits(int64_t vocab) {
  int bits = 1;
  while (bits < 63 && (int64_t{1} << bits) < vocab) ++bits;
  return bits;
}

// The scratch: sorted ids, positions in and out, the entering and leaving
// pieces ([chunks, d] f32 each), then CUB's temporary storage, each
// 256-byte aligned.
size_t AlignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

template <typename Id>
size_t CubSortBytes(int64_t positions, int64_t vocab) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const Id*>(nullptr),
                                  static_cast<Id*>(nullptr), static_cast<const int32_t*>(nullptr),
                                  static_cast<int32_t*>(nullptr), positions, 0, IdBits(vocab));
  return bytes;
}

template <typename D, typename Id, int kWidth>
const char* Gather(const D* table, const Id* ids, D* out, int64_t positions, int64_t d, float scale,
                   cudaStream_t stream) {
  const int64_t units = positions * (d / kWidth);
  EmbeddingKernel<D, Id, kWidth>
      <<<BlocksFor(units), kThreads, 0, stream>>>(table, ids, out, units, d / kWidth, scale);
  return LastError();
}

}  // namespace

template <typename Id>
const char* FindBadEmbeddingId(const Id* ids, int64_t count, int64_t vocab, void* scratch,
                               StreamHandle stream, int64_t* position, int64_t* id) {
  return cuda_elementwise::FindFirstOutOfRange(ids, count, vocab,
                                               static_cast<unsigned long long*>(scratch),
                                               static_cast<cudaStream_t>(stream), position, id);
}

template <typename T, typename Id>
const char* LaunchEmbedding(const T* table, const Id* ids, T* out, int64_t positions, int64_t d,
                            float scale, StreamHandle stream) {
  using D = DeviceT<T>;
  if (positions * d == 0) return nullptr;
  const D* rows = reinterpret_cast<const D*>(table);
  D* target = reinterpret_cast<D*>(out);
  cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  constexpr int kPack = 16 / sizeof(D);
  if (d % kPack == 0 && Aligned16(rows) && Aligned16(target)) {
    return Gather<D, Id, kPack>(rows, ids, target, positions, d, scale, cuda_stream);
  }
  return Gather<D, Id, 1>(rows, ids, target, positions, d, scale, cuda_stream);
}

template <typename T, typename Id>
const char* LaunchEmbeddingBackward(const Id* ids, const T* d_out, float* accumulator, T* d_table,
                                    int64_t positions, int64_t vocab, int64_t d, float scale,
                                    StreamHandle stream) {
  using D = DeviceT<T>;
  const int64_t table_count = vocab * d;
  if (table_count == 0) return nullptr;
  cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  if (const char* error =
          ErrorText(cudaMemsetAsync(accumulator, 0, table_count * sizeof(float), cuda_stream))) {
    return error;
  }
  const int64_t count = positions * d;
  const D* d_out_device = reinterpret_cast<const D*>(d_out);
  if (count > 0 && d % 4 == 0 &&
      reinterpret_cast<uintptr_t>(d_out_device) % (4 * sizeof(D)) == 0 && Aligned16(accumulator)) {
    EmbeddingBackwardKernel<D, Id, 4><<<BlocksFor(count / 4), kThreads, 0, cuda_stream>>>(
        ids, d_out_device, accumulator, count / 4, d, scale);
    if (const char* error = LastError()) return error;
  } else if (count > 0) {
    EmbeddingBackwardKernel<D, Id, 1><<<BlocksFor(count), kThreads, 0, cuda_stream>>>(
        ids, d_out_device, accumulator, count, d, scale);
    if (const char* error = LastError()) return error;
  }
  if (static_cast<void*>(accumulator) == static_cast<void*>(d_table)) return nullptr;
  RoundKernel<D><<<BlocksFor(table_count), kThreads, 0, cuda_stream>>>(
      accumulator, reinterpret_cast<D*>(d_table), table_count);
  return LastError();
}

template <typename Id>
size_t EmbeddingBackwardSortedScratchBytes(int64_t positions, int64_t vocab, int64_t d) {
  return AlignUp(positions * sizeof(Id)) + 2 * AlignUp(positions * sizeof(int32_t)) +
         2 * AlignUp(embedding_sorted_sums::Chunks(positions) * d * sizeof(float)) +
         AlignUp(CubSortBytes<Id>(positions, vocab));
}

template <typename T, typename Id>
const char* LaunchEmbeddingBackwardSorted(const Id* ids, const T* d_out, T* d_table,
                                          int64_t positions, int64_t vocab, int64_t d,
                                          float scale, void* scratch, size_t scratch_bytes,
                                          StreamHandle stream) {
  using D = DeviceT<T>;
  if (vocab * d == 0) return nullptr;
  cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  if (const char* error =
          ErrorText(cudaMemsetAsync(d_table, 0, vocab * d * sizeof(D), cuda_stream))) {
    return error;
  }
  if (positions == 0) return nullptr;
  if (scratch_bytes < EmbeddingBackwardSortedScratchBytes<Id>(positions, vocab, d)) {
    return "embedding_backward: scratch too small for the sort";
  }
  char* at = static_cast<char*>(scratch);
  Id* sorted_ids = reinterpret_cast<Id*>(at);
  at += AlignUp(positions * sizeof(Id));
  int32_t* order_in = reinterpret_cast<int32_t*>(at);
  at += AlignUp(positions * sizeof(int32_t));
  int32_t* order = reinterpret_cast<int32_t*>(at);
  at += AlignUp(positions * sizeof(int32_t));
  const size_t piece_bytes = AlignUp(embedding_sorted_sums::Chunks(positions) * d * sizeof(float));
  float* entering = reinterpret_cast<float*>(at);
  at += piece_bytes;
  float* leaving = reinterpret_cast<float*>(at);
  at += piece_bytes;
  size_t cub_bytes = CubSortBytes<Id>(positions, vocab);
  IotaKernel<<<BlocksFor(positions), kThreads, 0, cuda_stream>>>(order_in, positions);
  if (const char* error = LastError()) return error;
  if (const char* error = ErrorText(cub::DeviceRadixSort::SortPairs(
          at, cub_bytes, ids, sorted_ids, order_in, order, positions, 0, IdBits(vocab),
          cuda_stream))) {
    return error;
  }
  const int64_t units = embedding_sorted_sums::Chunks(positions) * d;
  SumChunkRunsKernel<D, Id><<<BlocksFor(units), kThreads, 0, cuda_stream>>>(
      sorted_ids, order, reinterpret_cast<const D*>(d_out), reinterpret_cast<D*>(d_table),
      entering, leaving, positions, d, scale);
  if (const char* error = LastError()) return error;
  JoinChunkPiecesKernel<D, Id><<<BlocksFor(units), kThreads, 0, cuda_stream>>>(
      sorted_ids, entering, leaving, reinterpret_cast<D*>(d_table), positions, d);
  return LastError();
}

#define TFM_INSTANTIATE_EMBEDDING(T, Id)                                                        \
  template const char* LaunchEmbedding<T, Id>(const T*, const Id*, T*, int64_t, int64_t, float, \
                                              StreamHandle);                                    \
  template const char* LaunchEmbeddingBackward<T, Id>(const Id*, const T*, float*, T*, int64_t, \
                                                      int64_t, int64_t, float, StreamHandle);   \
  template const char* LaunchEmbeddingBackwardSorted<T, Id>(                                    \
      const Id*, const T*, T*, int64_t, int64_t, int64_t, float, void*, size_t, StreamHandle);
TFM_INSTANTIATE_EMBEDDING(float, int32_t)
TFM_INSTANTIATE_EMBEDDING(float, int64_t)
TFM_INSTANTIATE_EMBEDDING(Half, int32_t)
TFM_INSTANTIATE_EMBEDDING(Half, int64_t)
TFM_INSTANTIATE_EMBEDDING(BFloat16, int32_t)
TFM_INSTANTIATE_EMBEDDING(BFloat16, int64_t)
#undef TFM_INSTANTIATE_EMBEDDING
template size_t EmbeddingBackwardSortedScratchBytes<int32_t>(int64_t, int64_t, int64_t);
template size_t EmbeddingBackwardSortedScratchBytes<int64_t>(int64_t, int64_t, int64_t);
template const char* FindBadEmbeddingId<int32_t>(const int32_t*, int64_t, int64_t, void*,
                                                 StreamHandle, int64_t*, int64_t*);
template const char* FindBadEmbeddingId<int64_t>(const int64_t*, int64_t, int64_t, void*,
                                                 StreamHandle, int64_t*, int64_t*);

}  // namespace tfm

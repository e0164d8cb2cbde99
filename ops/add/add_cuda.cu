// CUDA kernels of add, add_backward and sum_to_shape.
//
// add is memory-bound: 16-byte packs when every pointer is aligned and a pack
// never straddles a period of b, each thread keeping kUnroll packs in flight;
// the rest (or everything, when unaligned) goes element by element. The
// column sums of sum_to_shape are a two-level reduction: row chunks of
// 32-column tiles reduce in shared memory to one f32 partial per chunk, then
// one pass adds the chunks in order (no atomics, reproducible).
#include <algorithm>

#include "ops/add/add_cuda.h"
#include "ops/cuda_elementwise.cuh"

namespace tfm {
namespace {

using cuda_elementwise::Aligned16;
using cuda_elementwise::BlocksFor;
using cuda_elementwise::DeviceT;
using cuda_elementwise::FromFloat;
using cuda_elementwise::GlobalThread;
using cuda_elementwise::GridThreads;
using cuda_elementwise::kThreads;
using cuda_elementwise::kUnroll;
using cuda_elementwise::LastError;
using cuda_elementwise::Pack;
using cuda_elementwise::ToFloat;

// Packs [0, packs), then elements [packs * kSize, count) one by one.
template <typename D>
__global__ void AddKernel(const D* a, const D* b, D* out, int64_t count, int64_t period,
                          int64_t packs) {
  using P = Pack<D>;
  const int64_t thread = GlobalThread();
  const int64_t stride = GridThreads();
  for (int64_t first = thread; first < packs; first += stride * kUnroll) {
    P x[kUnroll], y[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t p = first + k * stride;
      if (p < packs) {
        x[k] = reinterpret_cast<const P*>(a)[p];
        y[k] = *reinterpret_cast<const P*>(b + (p * P::kSize) % period);
      }
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t p = first + k * stride;
      if (p < packs) {
        P z;
#pragma unroll
        for (int j = 0; j < P::kSize; ++j) {
          z.v[j] = FromFloat<D>(ToFloat(x[k].v[j]) + ToFloat(y[k].v[j]));
        }
        reinterpret_cast<P*>(out)[p] = z;
      }
    }
  }
  for (int64_t i = packs * P::kSize + thread; i < count; i += stride) {
    out[i] = FromFloat<D>(ToFloat(a[i]) + ToFloat(b[i % period]));
  }
}

// Rows per thread step of the column-sum tiles.
constexpr int kTileRows = 8;
constexpr int kTileCols = 32;
// Aim for about this many tiles in flight; chunks of at least kMinChunkRows.
constexpr int64_t kTargetTiles = 2048;
constexpr int64_t kMinChunkRows = 64;
constexpr int64_t kMaxChunks = 1024;  // Also bounds grid.y (<= 65535).

struct SumRowsPlan {
  int64_t chunks;          // Row chunks; 1 writes straight to the output.
  int64_t rows_per_chunk;  // >= 1.
};

SumRowsPlan PlanSumRows(int64_t rows, int64_t cols) {
  const int64_t tiles = std::max<int64_t>(1, (cols + kTileCols - 1) / kTileCols);
  int64_t chunks = std::min(
      {(kTargetTiles + tiles - 1) / tiles, kMaxChunks, (rows + kMinChunkRows - 1) / kMinChunkRows});
  chunks = std::max<int64_t>(chunks, 1);
  const int64_t rows_per_chunk = std::max<int64_t>(1, (rows + chunks - 1) / chunks);
  // No empty chunks: recount after rounding the chunk length up.
  chunks = std::max<int64_t>(1, (rows + rows_per_chunk - 1) / rows_per_chunk);
  return {chunks, rows_per_chunk};
}

// Block (kTileCols, kTileRows): the column sums of rows [chunk * rows_per_chunk,
// ...) of a kTileCols-wide tile, to partial[chunk, c] or, with one chunk,
// rounded to out[c].
template <typename D>
__global__ void SumRowsTileKernel(const D* in, int64_t rows, int64_t cols, int64_t rows_per_chunk,
                                  float* partial, D* out) {
  __shared__ float sums[kTileRows][kTileCols + 1];
  const int64_t c = blockIdx.x * static_cast<int64_t>(kTileCols) + threadIdx.x;
  const int64_t begin = blockIdx.y * rows_per_chunk;
  const int64_t end = min(rows, begin + rows_per_chunk);
  float acc = 0.0f;
  if (c < cols) {
#pragma unroll 4
    for (int64_t r = begin + threadIdx.y; r < end; r += kTileRows) acc += ToFloat(in[r * cols + c]);
  }
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float total = sums[0][threadIdx.x];
#pragma unroll
    for (int y = 1; y < kTileRows; ++y) total += sums[y][threadIdx.x];
    if (gridDim.y == 1) {
      out[c] = FromFloat<D>(total);
    } else {
      partial[blockIdx.y * cols + c] = total;
    }
  }
}

// out[c] = the chunks' partial sums, added in chunk order.
template <typename D>
__global__ void SumChunksKernel(const float* partial, int64_t chunks, int64_t cols, D* out) {
  for (int64_t c = GlobalThread(); c < cols; c += GridThreads()) {
    float total = 0.0f;
    for (int64_t k = 0; k < chunks; ++k) total += partial[k * cols + c];
    out[c] = FromFloat<D>(total);
  }
}

}  // namespace

template <typename T>
const char* LaunchAdd(const T* a, const T* b, T* out, int64_t count, int64_t period,
                      StreamHandle stream) {
  using D = DeviceT<T>;
  if (count == 0) return nullptr;
  const D* x = reinterpret_cast<const D*>(a);
  const D* y = reinterpret_cast<const D*>(b);
  D* z = reinterpret_cast<D*>(out);
  constexpr int kPack = Pack<D>::kSize;
  // A pack of b is contiguous when b's period is whole packs, or when b is
  // not broadcast at all (period == count: then i % period == i).
  const bool packed =
      Aligned16(x) && Aligned16(y) && Aligned16(z) && (period % kPack == 0 || period == count);
  const int64_t packs = packed ? count / kPack : 0;
  const int64_t work = packs > 0 ? (packs + kUnroll - 1) / kUnroll : count;
  AddKernel<D><<<BlocksFor(work), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, y, z, count,
                                                                                    period, packs);
  return LastError();
}

int64_t SumRowsCudaScratch(int64_t rows, int64_t cols) {
  const SumRowsPlan plan = PlanSumRows(rows, cols);
  return plan.chunks > 1 ? plan.chunks * cols : 0;
}

template <typename T>
const char* LaunchSumRows(const T* in, int64_t rows, int64_t cols, float* scratch, T* out,
                          StreamHandle stream) {
  using D = DeviceT<T>;
  if (cols == 0) return nullptr;
  const SumRowsPlan plan = PlanSumRows(rows, cols);
  cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  const dim3 grid(static_cast<unsigned>((cols + kTileCols - 1) / kTileCols),
                  static_cast<unsigned>(plan.chunks));
  SumRowsTileKernel<D><<<grid, dim3(kTileCols, kTileRows), 0, cuda_stream>>>(
      reinterpret_cast<const D*>(in), rows, cols, plan.rows_per_chunk, scratch,
      reinterpret_cast<D*>(out));
  if (const char* error = LastError()) return error;
  if (plan.chunks == 1) return nullptr;
  SumChunksKernel<D><<<BlocksFor(cols), kThreads, 0, cuda_stream>>>(scratch, plan.chunks, cols,
                                                                    reinterpret_cast<D*>(out));
  return LastError();
}

const char* LaunchDeviceCopy(void* dst, const void* src, size_t bytes, StreamHandle stream) {
  if (bytes == 0) return nullptr;
  return cuda_elementwise::ErrorText(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                                     static_cast<cudaStream_t>(stream)));
}

#define TFM_INSTANTIATE_ADD(T)                                                               \
  template const char* LaunchAdd<T>(const T*, const T*, T*, int64_t, int64_t, StreamHandle); \
  template const char* LaunchSumRows<T>(const T*, int64_t, int64_t, float*, T*, StreamHandle);
TFM_INSTANTIATE_ADD(float)
TFM_INSTANTIATE_ADD(Half)
TFM_INSTANTIATE_ADD(BFloat16)
#undef TFM_INSTANTIATE_ADD

}  // namespace tfm

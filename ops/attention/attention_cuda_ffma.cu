// Attention on CUDA cores with fp32 arithmetic: the f32 path, and the bf16
// and f16 paths for head sizes the tensor-core kernels do not take.
//
// Flash attention 2 with square tiles of kTile queries x kTile keys held in
// shared memory as floats (rows padded by one word, so that a warp reading
// one column of 32 rows hits 32 banks). A block of 256 threads owns one query
// tile (forward) or one key tile (backward) of one head; every thread takes
// a strided share of each tile-sized step, so the code is the same for every
// head size. kTile is 32, or 16 for head sizes above 128 so that the
// backward's eight tiles fit in shared memory on sm_80.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "ops/attention/attention_cuda_common.cuh"

namespace tfm {
namespace attention_cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// Copies rows [row0, row0 + rows) of a [len, d] matrix into a [kTile, d + 1]
// float tile, zero-filling the rows past `rows`.
template <typename T, int kTile>
__device__ void LoadTile(const T* src, int64_t row0, int rows, int d, float* tile) {
  const int ld = d + 1;
  for (int e = threadIdx.x; e < kTile * d; e += kThreads) {
    const int r = e / d, x = e % d;
    tile[r * ld + x] = r < rows ? ToFloat(src[(row0 + r) * d + x]) : 0.0f;
  }
}

__device__ float Dot(const float* a, const float* b, int d) {
  float sum = 0.0f;
  for (int x = 0; x < d; ++x) sum = fmaf(a[x], b[x], sum);
  return sum;
}

__device__ __forceinline__ float WarpMax(float x) {
  for (int s = 16; s > 0; s /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, s));
  return x;
}

__device__ __forceinline__ float WarpSum(float x) {
  for (int s = 16; s > 0; s /= 2) x += __shfl_xor_sync(0xffffffffu, x, s);
  return x;
}

template <int kTile>
size_t ForwardSmemBytes(int d_k, int d_v) {
  return sizeof(float) *
         (2 * kTile * (d_k + 1) + 2 * kTile * (d_v + 1) + kTile * (kTile + 1) + 3 * kTile);
}

template <typename T, int kTile>
__global__ void __launch_bounds__(kThreads)
    ForwardKernel(AttentionCudaProblem p, const T* q, const T* k, const T* v, T* out, float* lse) {
  extern __shared__ float smem[];
  const int d_k = static_cast<int>(p.d_k), d_v = static_cast<int>(p.d_v);
  const int ldk = d_k + 1, ldv = d_v + 1, lds = kTile + 1;
  float* s_q = smem;
  float* s_k = s_q + kTile * ldk;
  float* s_v = s_k + kTile * ldk;
  float* s_o = s_v + kTile * ldv;
  float* s_p = s_o + kTile * ldv;
  float* row_max = s_p + kTile * lds;
  float* row_sum = row_max + kTile;
  float* row_scale = row_sum + kTile;

  const int64_t q_tiles = (p.q_len + kTile - 1) / kTile;
  const int64_t bh = blockIdx.x / q_tiles;
  const int64_t b = bh / p.heads;
  const int64_t q0 = (blockIdx.x % q_tiles) * kTile;
  const int rows = static_cast<int>(MinI64(kTile, p.q_len - q0));
  const int64_t key_end = KeyEnd(p, b);
  const int64_t tile_key_end = RowKeyEnd(p, key_end, q0 + rows - 1);
  const T* k_head = k + bh * p.k_len * d_k;
  const T* v_head = v + bh * p.k_len * d_v;
  const float* bias = KeyBias(p, b);

  LoadTile<T, kTile>(q + bh * p.q_len * d_k, q0, rows, d_k, s_q);
  for (int e = threadIdx.x; e < kTile * ldv; e += kThreads) s_o[e] = 0.0f;
  if (threadIdx.x < kTile) {
    row_max[threadIdx.x] = kNegInf;
    row_sum[threadIdx.x] = 0.0f;
  }
  for (int64_t c0 = 0; c0 < tile_key_end; c0 += kTile) {
    const int cols = static_cast<int>(MinI64(kTile, tile_key_end - c0));
    __syncthreads();  // The previous step is done with s_k, s_v and s_p.
    LoadTile<T, kTile>(k_head, c0, cols, d_k, s_k);
    LoadTile<T, kTile>(v_head, c0, cols, d_v, s_v);
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * kTile; e += kThreads) {
      const int r = e / kTile, c = e % kTile;
      float s = kNegInf;
      if (r < rows && c < cols && c0 + c < RowKeyEnd(p, key_end, q0 + r)) {
        s = Dot(s_q + r * ldk, s_k + c * ldk, d_k) * p.scale;
        if (bias != nullptr) s += bias[c0 + c];
      }
      s_p[r * lds + c] = s;
    }
    __syncthreads();
    // Online softmax: one warp per row, one lane per key.
    const int lane = threadIdx.x % 32;
    for (int r = threadIdx.x / 32; r < kTile; r += kWarps) {
      const float s = lane < kTile ? s_p[r * lds + lane] : kNegInf;
      const float old_max = row_max[r];
      const float new_max = fmaxf(old_max, WarpMax(s));
      float prob = 0.0f, correction = 1.0f;
      if (new_max != kNegInf) {  // Else nothing visible yet: contributes nothing.
        prob = expf(s - new_max);
        correction = expf(old_max - new_max);  // 0 on the first visible tile.
      }
      const float sum = WarpSum(prob);
      if (p.dropout > 0.0f && r < rows && lane < cols) {
        prob *= DropoutMultiplier(p, ((bh * p.q_len + q0 + r) * p.k_len) + c0 + lane);
      }
      if (lane < kTile) s_p[r * lds + lane] = prob;
      // Every lane has read row_max[r] before lane 0 overwrites it: shuffles
      // order no shared-memory accesses (racecheck flagged this).
      __syncwarp();
      if (lane == 0) {
        row_sum[r] = row_sum[r] * correction + sum;
        row_max[r] = new_max;
        row_scale[r] = correction;
      }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * d_v; e += kThreads) {
      const int r = e / d_v, x = e % d_v;
      float acc = s_o[r * ldv + x] * row_scale[r];
      for (int c = 0; c < cols; ++c) acc = fmaf(s_p[r * lds + c], s_v[c * ldv + x], acc);
      s_o[r * ldv + x] = acc;
    }
  }
  __syncthreads();
  T* o = out + (bh * p.q_len + q0) * d_v;
  for (int e = threadIdx.x; e < rows * d_v; e += kThreads) {
    const int r = e / d_v, x = e % d_v;
    o[static_cast<int64_t>(r) * d_v + x] =
        FromFloat<T>(row_sum[r] > 0.0f ? s_o[r * ldv + x] / row_sum[r] : 0.0f);
  }
  if (threadIdx.x < rows) {
    const int r = threadIdx.x;
    lse[bh * p.q_len + q0 + r] = row_sum[r] > 0.0f ? row_max[r] + logf(row_sum[r]) : kNegInf;
  }
}

template <int kTile>
size_t BackwardSmemBytes(int d_k, int d_v) {
  return sizeof(float) *
         (3 * kTile * (d_k + 1) + 3 * kTile * (d_v + 1) + 2 * kTile * (kTile + 1) + 2 * kTile);
}

// One block per key tile of one head: it alone writes those dK and dV rows,
// walking the query tiles that see the keys (see attention_cpu_backward.cc
// for the formulas).
template <typename T, int kTile>
__global__ void __launch_bounds__(kThreads)
    BackwardKernel(AttentionCudaProblem p, const T* q, const T* k, const T* v, const float* lse,
                   const float* delta, const T* d_out, float* dq_accum, T* dk, T* dv) {
  extern __shared__ float smem[];
  const int d_k = static_cast<int>(p.d_k), d_v = static_cast<int>(p.d_v);
  const int ldk = d_k + 1, ldv = d_v + 1, lds = kTile + 1;
  float* s_k = smem;
  float* s_dk = s_k + kTile * ldk;
  float* s_q = s_dk + kTile * ldk;
  float* s_v = s_q + kTile * ldk;
  float* s_dv = s_v + kTile * ldv;
  float* s_do = s_dv + kTile * ldv;
  float* s_p = s_do + kTile * ldv;  // P o M (dropout multipliers).
  float* s_ds = s_p + kTile * lds;  // dS = P o (dP o M - delta).
  float* s_lse = s_ds + kTile * lds;
  float* s_delta = s_lse + kTile;

  const int64_t k_tiles = (p.k_len + kTile - 1) / kTile;
  const int64_t bh = blockIdx.x / k_tiles;
  const int64_t b = bh / p.heads;
  const int64_t c0 = (blockIdx.x % k_tiles) * kTile;
  const int cols = static_cast<int>(MinI64(kTile, p.k_len - c0));
  const int64_t key_end = KeyEnd(p, b);
  const float* bias = KeyBias(p, b);
  const T* q_head = q + bh * p.q_len * d_k;
  const T* d_out_head = d_out + bh * p.q_len * d_v;
  float* dq_head = DqShare(p, dq_accum, blockIdx.x % k_tiles, bh, d_k);

  // Keys at or past key_end load as zeros: no row sees them, and a NaN
  // there (a decoding cache's unwritten tail) would reach dQ through 0 * NaN.
  const int loaded = static_cast<int>(MinI64(cols, key_end - c0));
  LoadTile<T, kTile>(k + bh * p.k_len * d_k, c0, loaded, d_k, s_k);
  LoadTile<T, kTile>(v + bh * p.k_len * d_v, c0, loaded, d_v, s_v);
  for (int e = threadIdx.x; e < kTile * ldk; e += kThreads) s_dk[e] = 0.0f;
  for (int e = threadIdx.x; e < kTile * ldv; e += kThreads) s_dv[e] = 0.0f;
  // Keys at or past key_end get zero gradients; so do all keys no row sees.
  const int64_t first_row = c0 < key_end ? FirstQueryRow(p, c0) : p.q_len;
  for (int64_t q0 = first_row / kTile * kTile; q0 < p.q_len; q0 += kTile) {
    const int rows = static_cast<int>(MinI64(kTile, p.q_len - q0));
    __syncthreads();  // The previous step is done with s_q, s_do, s_p, s_ds.
    LoadTile<T, kTile>(q_head, q0, rows, d_k, s_q);
    LoadTile<T, kTile>(d_out_head, q0, rows, d_v, s_do);
    if (threadIdx.x < kTile) {
      const int r = threadIdx.x;
      s_lse[r] = r < rows ? lse[bh * p.q_len + q0 + r] : kNegInf;
      s_delta[r] = r < rows ? delta[bh * p.q_len + q0 + r] : 0.0f;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * kTile; e += kThreads) {
      const int r = e / kTile, c = e % kTile;
      float kept = 0.0f, d_score = 0.0f;
      // lse = -inf: the row saw no key, so all its probabilities are 0.
      if (r < rows && c < cols && s_lse[r] != kNegInf && c0 + c < RowKeyEnd(p, key_end, q0 + r)) {
        float s = Dot(s_q + r * ldk, s_k + c * ldk, d_k) * p.scale;
        if (bias != nullptr) s += bias[c0 + c];
        const float prob = expf(s - s_lse[r]);
        float d_prob = Dot(s_do + r * ldv, s_v + c * ldv, d_v);
        float multiplier = 1.0f;
        if (p.dropout > 0.0f) {
          multiplier = DropoutMultiplier(p, ((bh * p.q_len + q0 + r) * p.k_len) + c0 + c);
        }
        kept = prob * multiplier;
        d_score = prob * (d_prob * multiplier - s_delta[r]);
      }
      s_p[r * lds + c] = kept;
      s_ds[r * lds + c] = d_score;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * d_v; e += kThreads) {
      const int c = e / d_v, x = e % d_v;
      float acc = s_dv[c * ldv + x];
      for (int r = 0; r < rows; ++r) acc = fmaf(s_p[r * lds + c], s_do[r * ldv + x], acc);
      s_dv[c * ldv + x] = acc;
    }
    for (int e = threadIdx.x; e < kTile * d_k; e += kThreads) {
      const int c = e / d_k, x = e % d_k;
      float acc = 0.0f;
      for (int r = 0; r < rows; ++r) acc = fmaf(s_ds[r * lds + c], s_q[r * ldk + x], acc);
      s_dk[c * ldk + x] += p.scale * acc;
    }
    for (int e = threadIdx.x; e < rows * d_k; e += kThreads) {
      const int r = e / d_k, x = e % d_k;
      float acc = 0.0f;
      for (int c = 0; c < cols; ++c) acc = fmaf(s_ds[r * lds + c], s_k[c * ldk + x], acc);
      AddDq(p, dq_head + (q0 + r) * d_k + x, p.scale * acc);
    }
  }
  __syncthreads();
  T* dk_tile = dk + (bh * p.k_len + c0) * d_k;
  T* dv_tile = dv + (bh * p.k_len + c0) * d_v;
  for (int e = threadIdx.x; e < cols * d_k; e += kThreads) {
    dk_tile[e] = FromFloat<T>(s_dk[(e / d_k) * ldk + e % d_k]);
  }
  for (int e = threadIdx.x; e < cols * d_v; e += kThreads) {
    dv_tile[e] = FromFloat<T>(s_dv[(e / d_v) * ldv + e % d_v]);
  }
}

// Launches `kernel` on `blocks` blocks with `smem` bytes of shared memory,
// raising the kernel's limit above the default 48 KiB when needed.
template <typename Kernel, typename... Args>
const char* LaunchWithSmem(Kernel kernel, int64_t blocks, size_t smem, cudaStream_t stream,
                           Args... args) {
  if (blocks == 0) return nullptr;
  if (blocks > 0x7fffffff) return "attention: too many blocks for one launch";
  if (smem > 48 * 1024) {
    const cudaError_t error = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (error != cudaSuccess) return cudaGetErrorString(error);
  }
  kernel<<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(args...);
  return LastLaunchError();
}

template <typename T, int kTile>
const char* ForwardTyped(const AttentionCudaProblem& p, const void* q, const void* k, const void* v,
                         void* out, float* lse, cudaStream_t stream) {
  const int64_t blocks = p.batch * p.heads * ((p.q_len + kTile - 1) / kTile);
  return LaunchWithSmem(ForwardKernel<T, kTile>, blocks,
                        ForwardSmemBytes<kTile>(static_cast<int>(p.d_k), static_cast<int>(p.d_v)),
                        stream, p, static_cast<const T*>(q), static_cast<const T*>(k),
                        static_cast<const T*>(v), static_cast<T*>(out), lse);
}

template <typename T, int kTile>
const char* BackwardTyped(const AttentionCudaProblem& p, const void* q, const void* k,
                          const void* v, const float* lse, const float* delta, const void* d_out,
                          float* dq_accum, void* dk, void* dv, cudaStream_t stream) {
  const int64_t blocks = p.batch * p.heads * ((p.k_len + kTile - 1) / kTile);
  return LaunchWithSmem(BackwardKernel<T, kTile>, blocks,
                        BackwardSmemBytes<kTile>(static_cast<int>(p.d_k), static_cast<int>(p.d_v)),
                        stream, p, static_cast<const T*>(q), static_cast<const T*>(k),
                        static_cast<const T*>(v), lse, delta, static_cast<const T*>(d_out),
                        dq_accum, static_cast<T*>(dk), static_cast<T*>(dv));
}

bool SmallHeads(const AttentionCudaProblem& p) { return p.d_k <= 128 && p.d_v <= 128; }

}  // namespace

int64_t BackwardFfmaKeyTile(const AttentionCudaProblem& p) { return SmallHeads(p) ? 32 : 16; }

const char* ForwardFfma(const AttentionCudaProblem& p, const void* q, const void* k, const void* v,
                        void* out, float* lse, cudaStream_t stream) {
  if (p.bf16) {
    return SmallHeads(p) ? ForwardTyped<__nv_bfloat16, 32>(p, q, k, v, out, lse, stream)
                         : ForwardTyped<__nv_bfloat16, 16>(p, q, k, v, out, lse, stream);
  }
  if (p.f16) {
    return SmallHeads(p) ? ForwardTyped<__half, 32>(p, q, k, v, out, lse, stream)
                         : ForwardTyped<__half, 16>(p, q, k, v, out, lse, stream);
  }
  return SmallHeads(p) ? ForwardTyped<float, 32>(p, q, k, v, out, lse, stream)
                       : ForwardTyped<float, 16>(p, q, k, v, out, lse, stream);
}

const char* BackwardFfma(const AttentionCudaProblem& p, const void* q, const void* k, const void* v,
                         const float* lse, const float* delta, const void* d_out, float* dq_accum,
                         void* dk, void* dv, cudaStream_t stream) {
  if (p.bf16) {
    return SmallHeads(p) ? BackwardTyped<__nv_bfloat16, 32>(p, q, k, v, lse, delta, d_out, dq_accum,
                                                            dk, dv, stream)
                         : BackwardTyped<__nv_bfloat16, 16>(p, q, k, v, lse, delta, d_out, dq_accum,
                                                            dk, dv, stream);
  }
  if (p.f16) {
    return SmallHeads(p)
               ? BackwardTyped<__half, 32>(p, q, k, v, lse, delta, d_out, dq_accum, dk, dv, stream)
               : BackwardTyped<__half, 16>(p, q, k, v, lse, delta, d_out, dq_accum, dk, dv, stream);
  }
  return SmallHeads(p)
             ? BackwardTyped<float, 32>(p, q, k, v, lse, delta, d_out, dq_accum, dk, dv, stream)
             : BackwardTyped<float, 16>(p, q, k, v, lse, delta, d_out, dq_accum, dk, dv, stream);
}

}  // namespace attention_cuda
}  // namespace tfm

// Decode attention: a few query rows per (batch item, head) over many cached
// keys, as in a beam search step (one query per hypothesis; the rows of a
// beam querying their sentence's memory together). The tile kernels give a
// block 32 query rows, so a step with one wasted 31/32 of each tile; here a
// block takes every query row of its head (up to kMaxAttentionDecodeQueries)
// and streams K and V once for all of them.
//
// FlashDecoding's split-K: when batch x heads blocks would leave the GPU
// idle, each head's keys are cut into `splits` chunks taken by separate
// blocks, each writing its partial (max, sum, unnormalised output) in f32,
// and a second kernel combines them. With one split the block writes the
// output directly.
//
// Inside a block a key row is read by kLanes lanes, 16 bytes each (one
// 128-bit load per lane per row, coalesced across the warp), so a warp reads
// 32 / kLanes consecutive keys at once; each lane group runs its own online
// softmax over its keys with several keys' loads in flight, then the groups
// and warps merge their (max, sum, output) through shuffles and shared memory.
// Scores are kept in log2 units (q is pre-multiplied by scale * log2(e)) so
// that every exponential is one exp2f; statistics and sums are f32 for both
// element types.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ops/attention/attention_cuda.h"
#include "ops/attention/attention_cuda_common.cuh"

namespace tfm {
namespace {

using attention_cuda::FromFloat;
using attention_cuda::HeadOffset;
using attention_cuda::KeyBias;
using attention_cuda::KeySlots;
using attention_cuda::KeyEnd;
using attention_cuda::kNegInf;
using attention_cuda::LastLaunchError;
using attention_cuda::MultiprocessorCount;
using attention_cuda::QueryRowOffset;
using attention_cuda::QuerySlots;
using attention_cuda::RowKeyEnd;
using attention_cuda::RowStride;

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
// Keys each lane group loads before it uses the first: enough bytes in
// flight per warp (4 x 512 bytes of K and of V at d = 64 in bf16) to cover
// the memory latency with a few blocks per multiprocessor.
constexpr int kKeysInFlight = 4;
// A split takes at least this many keys (one pass of a block at d = 64 in
// bf16), so that splitting never leaves a block too little to do.
constexpr int64_t kMinKeysPerSplit = 64;
constexpr int kMaxSplits = 64;
// Blocks of kThreads per multiprocessor that split-K aims for.
constexpr int kBlocksPerSm = 4;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// 16 bytes of a row as floats.
__device__ __forceinline__ void Unpack(const uint4& raw, float (&x)[4]) {
  x[0] = __uint_as_float(raw.x);
  x[1] = __uint_as_float(raw.y);
  x[2] = __uint_as_float(raw.z);
  x[3] = __uint_as_float(raw.w);
}

__device__ __forceinline__ void Unpack(const uint4& raw, float (&x)[8]) {
  const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(pairs[i]);
    x[2 * i] = f.x;
    x[2 * i + 1] = f.y;
  }
}

// exp2(x - max) as a merge weight: 0 for a part that saw no key (whose max
// is -inf; also when every part is empty, where x - max would be NaN).
__device__ __forceinline__ float MergeWeight(float x, float max) {
  return x == kNegInf ? 0.0f : exp2f(x - max);
}

// One block per (batch item b, head h) and split: the block's query rows
// over its chunk of the keys that any of them sees. `partial` (splits > 1)
// holds, per query row r = (b * heads + h) * q_len + i and split s, the max
// and sum at 2 (r * splits + s) and the output row at
// 2 * rows * splits + (r * splits + s) * kD.
template <typename T, int kD, int kQ>
__global__ void __launch_bounds__(kThreads)
    DecodeKernel(AttentionCudaProblem p, int splits, const T* q, const T* k, const T* v, T* out,
                 float* lse, float* partial) {
  constexpr int kElems = 16 / sizeof(T);          // Elements per 16-byte load.
  constexpr int kLanes = kD / kElems;             // Lanes reading one key row.
  constexpr int kGroups = 32 / kLanes;            // Keys a warp reads at once.
  constexpr int kKeysPerPass = kWarps * kGroups;  // Keys the block reads at once.
  static_assert(kLanes >= 1 && kLanes <= 32 && 32 % kLanes == 0, "unsupported head size");

  const int64_t bh = blockIdx.x;
  const int split = blockIdx.y;
  const int64_t b = bh / p.heads;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int slot = lane % kLanes;                    // Which 16 bytes of a row.
  const int group = warp * kGroups + lane / kLanes;  // Which key of a pass.
  const int q_len = static_cast<int>(p.q_len);

  const int64_t key_end = KeyEnd(p, b);
  int64_t row_end[kQ];
  int64_t block_end = 0;
#pragma unroll
  for (int i = 0; i < kQ; ++i) {
    row_end[i] = i < q_len ? RowKeyEnd(p, key_end, i) : 0;
    block_end = row_end[i] > block_end ? row_end[i] : block_end;
  }
  // The chunks cut the keys actually seen (not the cache's capacity k_len),
  // so the splits share the work whatever the length.
  int64_t chunk = (block_end + splits - 1) / splits;
  chunk = chunk > kMinKeysPerSplit ? chunk : kMinKeysPerSplit;
  const int64_t start = split * chunk;
  const int64_t end = start + chunk < block_end ? start + chunk : block_end;

  float q_row[kQ][kElems];
  const float q_scale = p.scale * kLog2e;
  // q's and out's rows of this head (interleaved queries: [batch, q_len,
  // slots, d], out's slots its heads).
  const int64_t q_offset = HeadOffset(p, p.interleaved_queries, QuerySlots(p), bh, q_len, kD);
  const int64_t q_stride = RowStride(p.interleaved_queries, QuerySlots(p), kD);
  const int64_t out_offset = HeadOffset(p, p.interleaved_queries, p.heads, bh, q_len, kD);
  const int64_t out_stride = RowStride(p.interleaved_queries, p.heads, kD);
#pragma unroll
  for (int i = 0; i < kQ; ++i) {
    if (i < q_len) {
      Unpack(*reinterpret_cast<const uint4*>(q + q_offset + i * q_stride + slot * kElems),
             q_row[i]);
    } else {
#pragma unroll
      for (int e = 0; e < kElems; ++e) q_row[i][e] = 0.0f;
    }
#pragma unroll
    for (int e = 0; e < kElems; ++e) q_row[i][e] *= q_scale;
  }

  float row_max[kQ], row_sum[kQ], acc[kQ][kElems];
#pragma unroll
  for (int i = 0; i < kQ; ++i) {
    row_max[i] = kNegInf;
    row_sum[i] = 0.0f;
#pragma unroll
    for (int e = 0; e < kElems; ++e) acc[i][e] = 0.0f;
  }
  const float* bias = KeyBias(p, b);
  // Key j of this head: in item b, or with key rows in item key_rows[b, j]
  // (a beam reordered by table), at the same head and position; heads-first
  // ([items, heads, k_len, d]) or interleaved ([items, k_len, slots, d]:
  // KeySlots, k's and v's parts of a packed tensor apart by their pointers).
  const int64_t head = bh - b * p.heads;
  const int32_t* item_of_key = p.key_rows != nullptr ? p.key_rows + b * p.k_len : nullptr;
  const auto key_offset = [&](int64_t j) {
    const int64_t item = item_of_key != nullptr ? static_cast<int64_t>(item_of_key[j]) : b;
    const int64_t row = p.interleaved_keys ? (item * p.k_len + j) * KeySlots(p) + head
                                           : (item * p.heads + head) * p.k_len + j;
    return row * kD + slot * kElems;
  };

  // Every lane runs the same passes (start and end are the block's), so the
  // shuffles below never diverge.
  for (int64_t pass = start; pass < end; pass += kKeysPerPass * kKeysInFlight) {
    uint4 k_raw[kKeysInFlight], v_raw[kKeysInFlight];
#pragma unroll
    for (int u = 0; u < kKeysInFlight; ++u) {
      const int64_t j = pass + u * kKeysPerPass + group;
      // Keys past the end are never read: a cache holds garbage there.
      if (j < end) {
        const int64_t at = key_offset(j);
        k_raw[u] = __ldg(reinterpret_cast<const uint4*>(k + at));
        v_raw[u] = __ldg(reinterpret_cast<const uint4*>(v + at));
      } else {
        k_raw[u] = v_raw[u] = make_uint4(0, 0, 0, 0);
      }
    }
    float score[kKeysInFlight][kQ];
    float v_row[kKeysInFlight][kElems];
#pragma unroll
    for (int u = 0; u < kKeysInFlight; ++u) {
      const int64_t j = pass + u * kKeysPerPass + group;
      float k_row[kElems];
      Unpack(k_raw[u], k_row);
      Unpack(v_raw[u], v_row[u]);
      const float key_bias = bias != nullptr && j < end ? bias[j] : 0.0f;
#pragma unroll
      for (int i = 0; i < kQ; ++i) {
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < kElems; ++e) dot = fmaf(q_row[i][e], k_row[e], dot);
#pragma unroll
        for (int s = kLanes / 2; s > 0; s /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, s);
        score[u][i] = j < end && j < row_end[i] ? dot + key_bias * kLog2e : kNegInf;
      }
    }
#pragma unroll
    for (int i = 0; i < kQ; ++i) {
      float new_max = row_max[i];
#pragma unroll
      for (int u = 0; u < kKeysInFlight; ++u) new_max = fmaxf(new_max, score[u][i]);
      if (new_max == kNegInf) continue;  // Nothing visible to this row yet.
      const float correction = MergeWeight(row_max[i], new_max);
      row_sum[i] *= correction;
#pragma unroll
      for (int e = 0; e < kElems; ++e) acc[i][e] *= correction;
#pragma unroll
      for (int u = 0; u < kKeysInFlight; ++u) {
        const float prob = exp2f(score[u][i] - new_max);  // 0 for a masked key.
        row_sum[i] += prob;
#pragma unroll
        for (int e = 0; e < kElems; ++e) acc[i][e] = fmaf(prob, v_row[u][e], acc[i][e]);
      }
      row_max[i] = new_max;
    }
  }

  // Merge the warp's lane groups (lanes kLanes apart hold the same slot).
#pragma unroll
  for (int s = kLanes; s < 32; s *= 2) {
#pragma unroll
    for (int i = 0; i < kQ; ++i) {
      const float other_max = __shfl_xor_sync(0xffffffffu, row_max[i], s);
      const float other_sum = __shfl_xor_sync(0xffffffffu, row_sum[i], s);
      const float new_max = fmaxf(row_max[i], other_max);
      const float mine = MergeWeight(row_max[i], new_max);
      const float theirs = MergeWeight(other_max, new_max);
      row_sum[i] = row_sum[i] * mine + other_sum * theirs;
#pragma unroll
      for (int e = 0; e < kElems; ++e) {
        const float other = __shfl_xor_sync(0xffffffffu, acc[i][e], s);
        acc[i][e] = acc[i][e] * mine + other * theirs;
      }
      row_max[i] = new_max;
    }
  }

  // Then the warps, through shared memory.
  __shared__ float warp_max[kWarps][kQ], warp_sum[kWarps][kQ];
  __shared__ float warp_acc[kWarps][kQ][kD];
  if (lane < kLanes) {
#pragma unroll
    for (int i = 0; i < kQ; ++i) {
      if (lane == 0) {
        warp_max[warp][i] = row_max[i];
        warp_sum[warp][i] = row_sum[i];
      }
#pragma unroll
      for (int e = 0; e < kElems; ++e) warp_acc[warp][i][slot * kElems + e] = acc[i][e];
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < q_len * kD; idx += kThreads) {
    const int i = idx / kD, d = idx % kD;
    float max = kNegInf;
    for (int w = 0; w < kWarps; ++w) max = fmaxf(max, warp_max[w][i]);
    float sum = 0.0f, value = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      const float weight = MergeWeight(warp_max[w][i], max);
      sum += warp_sum[w][i] * weight;
      value += warp_acc[w][i][d] * weight;
    }
    const int64_t r = bh * q_len + i;
    if (splits == 1) {
      // A row that sees no key gets zeros and lse -inf (attention.h).
      out[out_offset + i * out_stride + d] = FromFloat<T>(sum > 0.0f ? value / sum : 0.0f);
      if (d == 0) lse[r] = sum > 0.0f ? (max + log2f(sum)) * kLn2 : kNegInf;
    } else {
      const int64_t part = r * splits + split;
      if (d == 0) {
        partial[2 * part] = max;
        partial[2 * part + 1] = sum;
      }
      const int64_t rows = p.batch * p.heads * q_len;
      partial[2 * rows * splits + part * kD + d] = value;
    }
  }
}

// One warp per query row: merges the row's splits into out and lse.
template <typename T, int kD>
__global__ void __launch_bounds__(kThreads)
    CombineSplitsKernel(AttentionCudaProblem p, int64_t rows, int splits, const float* partial,
                        T* out, float* lse) {
  const int lane = threadIdx.x % 32;
  const int64_t r = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / 32;
  if (r >= rows) return;  // Whole warps leave together.
  const float* stats = partial + 2 * r * splits;
  const float* values = partial + 2 * rows * splits + r * splits * kD;
  float max = kNegInf;
  for (int s = lane; s < splits; s += 32) max = fmaxf(max, stats[2 * s]);
  for (int s = 16; s > 0; s /= 2) max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, s));
  float sum = 0.0f;
  for (int s = lane; s < splits; s += 32) sum += stats[2 * s + 1] * MergeWeight(stats[2 * s], max);
  for (int s = 16; s > 0; s /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, s);
  const int64_t out_row = QueryRowOffset(p, p.heads, r, kD);
  for (int d = lane; d < kD; d += 32) {
    float value = 0.0f;
    for (int s = 0; s < splits; ++s) {
      value += values[s * kD + d] * MergeWeight(stats[2 * s], max);
    }
    out[out_row + d] = FromFloat<T>(sum > 0.0f ? value / sum : 0.0f);
  }
  if (lane == 0) lse[r] = sum > 0.0f ? (max + log2f(sum)) * kLn2 : kNegInf;
}

template <typename T, int kD, int kQ>
const char* LaunchFor(const AttentionCudaProblem& p, int splits, const void* q, const void* k,
                      const void* v, void* out, float* lse, float* partial, cudaStream_t stream) {
  const int64_t heads_total = p.batch * p.heads;
  DecodeKernel<T, kD, kQ>
      <<<dim3(static_cast<unsigned>(heads_total), splits), kThreads, 0, stream>>>(
          p, splits, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
          static_cast<T*>(out), lse, partial);
  if (const char* error = LastLaunchError()) return error;
  if (splits == 1) return nullptr;
  const int64_t rows = heads_total * p.q_len;
  const int64_t blocks = (rows * 32 + kThreads - 1) / kThreads;
  CombineSplitsKernel<T, kD><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      p, rows, splits, partial, static_cast<T*>(out), lse);
  return LastLaunchError();
}

// Instantiates the kernels for the query count rounded up to 1, 4 or 8
// (a step's one row, a beam of up to 4, up to 8): rows past q_len are idle.
template <typename T, int kD>
const char* LaunchForHeadSize(const AttentionCudaProblem& p, int splits, const void* q,
                              const void* k, const void* v, void* out, float* lse, float* partial,
                              cudaStream_t stream) {
  if (p.q_len == 1) return LaunchFor<T, kD, 1>(p, splits, q, k, v, out, lse, partial, stream);
  if (p.q_len <= 4) return LaunchFor<T, kD, 4>(p, splits, q, k, v, out, lse, partial, stream);
  return LaunchFor<T, kD, 8>(p, splits, q, k, v, out, lse, partial, stream);
}

template <typename T>
const char* LaunchForType(const AttentionCudaProblem& p, int splits, const void* q, const void* k,
                          const void* v, void* out, float* lse, float* partial,
                          cudaStream_t stream) {
  switch (p.d_k) {
    case 32:
      return LaunchForHeadSize<T, 32>(p, splits, q, k, v, out, lse, partial, stream);
    case 64:
      return LaunchForHeadSize<T, 64>(p, splits, q, k, v, out, lse, partial, stream);
    case 128:
      return LaunchForHeadSize<T, 128>(p, splits, q, k, v, out, lse, partial, stream);
  }
  return "the decode attention kernel takes head sizes 32, 64 and 128";
}

}  // namespace

bool AttentionDecodeTakes(const AttentionCudaProblem& p,
                          std::initializer_list<const void*> tensors) {
  if (p.batch < 1 || p.heads < 1 || p.q_len < 1 || p.q_len > kMaxAttentionDecodeQueries) {
    return false;
  }
  if (p.f16) return false;  // bf16 and f32 kernels only.
  if (p.dropout > 0.0f || p.d_k != p.d_v || (p.d_k != 32 && p.d_k != 64 && p.d_k != 128)) {
    return false;
  }
  // Grid x is batch x heads (up to 2^31 - 1).
  if (p.batch * p.heads > 0x7fffffff) return false;
  for (const void* tensor : tensors) {
    if (reinterpret_cast<uintptr_t>(tensor) % 16 != 0) return false;
  }
  return true;
}

int AttentionDecodeSplits(const AttentionCudaProblem& p) {
  const int64_t heads_total = std::max<int64_t>(p.batch * p.heads, 1);
  const int64_t wanted =
      (static_cast<int64_t>(kBlocksPerSm) * MultiprocessorCount() + heads_total - 1) / heads_total;
  const int64_t useful = (p.k_len + kMinKeysPerSplit - 1) / kMinKeysPerSplit;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({wanted, useful, kMaxSplits})));
}

int64_t AttentionDecodeWorkspaceFloats(const AttentionCudaProblem& p, int splits) {
  if (splits <= 1) return 0;
  return p.batch * p.heads * p.q_len * splits * (2 + p.d_v);
}

const char* LaunchAttentionDecode(const AttentionCudaProblem& p, int splits, const void* q,
                                  const void* k, const void* v, void* out, float* lse,
                                  float* workspace, StreamHandle stream) {
  if (splits < 1 || splits > kMaxSplits) return "decode attention: splits out of range";
  if (splits > 1 && workspace == nullptr) return "decode attention: no workspace for the splits";
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  return p.bf16 ? LaunchForType<__nv_bfloat16>(p, splits, q, k, v, out, lse, workspace, cuda_stream)
                : LaunchForType<float>(p, splits, q, k, v, out, lse, workspace, cuda_stream);
}

}  // namespace tfm

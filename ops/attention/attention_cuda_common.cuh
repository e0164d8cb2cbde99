// Device helpers shared by the CUDA attention kernels: element conversion,
// the key mask and the dropout mask, with the semantics of attention.h.
#ifndef TFM_OPS_ATTENTION_ATTENTION_CUDA_COMMON_CUH_
#define TFM_OPS_ATTENTION_ATTENTION_CUDA_COMMON_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "core/philox.h"
#include "ops/attention/attention_cuda.h"
#include "ops/cuda_elementwise.cuh"

namespace tfm {
namespace attention_cuda {

constexpr float kNegInf = -__builtin_huge_valf();

// Raises kernel kKernel's dynamic shared-memory limit to `bytes` where they
// pass the default 48 KB, once per device: the attribute stays set, and the
// driver call at every launch was host time before each kernel. nullptr or
// the CUDA error text.
template <auto kKernel>
const char* AllowDynamicSmem(size_t bytes) {
  if (bytes <= 48 * 1024) return nullptr;
  constexpr int kMaxDevices = 64;
  static std::atomic<bool> allowed[kMaxDevices] = {};
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess || device >= kMaxDevices) device = -1;
  if (device >= 0 && allowed[device].load(std::memory_order_acquire)) return nullptr;
  const cudaError_t error = cudaFuncSetAttribute(
      kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (error != cudaSuccess) return cudaGetErrorString(error);
  if (device >= 0) allowed[device].store(true, std::memory_order_release);
  return nullptr;
}

// The grids of the kernels that size themselves to the GPU.
using cuda_elementwise::MultiprocessorCount;

__device__ __forceinline__ float ToFloat(float x) { return x; }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float ToFloat(__half x) { return __half2float(x); }

template <typename T>
__device__ __forceinline__ T FromFloat(float x);
template <>
__device__ __forceinline__ float FromFloat<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float x) {
  return __float2half_rn(x);
}

__device__ __forceinline__ int64_t MinI64(int64_t a, int64_t b) { return a < b ? a : b; }

// Keys at or past this end are masked for every query of batch item b.
__device__ __forceinline__ int64_t KeyEnd(const AttentionCudaProblem& p, int64_t b) {
  return p.key_end != nullptr ? p.key_end[b] : p.k_len;
}

// Item b's additive key bias (0 or -inf per key), or nullptr when its key
// end alone describes the mask.
__device__ __forceinline__ const float* KeyBias(const AttentionCudaProblem& p, int64_t b) {
  return p.key_bias != nullptr && p.key_has_holes[b] != 0 ? p.key_bias + b * p.k_len : nullptr;
}

// Exclusive end of the keys query row i may see (causal: the queries are the
// last q_len positions of the keys).
__device__ __forceinline__ int64_t RowKeyEnd(const AttentionCudaProblem& p, int64_t key_end,
                                             int64_t i) {
  if (!p.causal) return key_end;
  const int64_t causal_end = i + p.k_len - p.q_len + 1;
  return causal_end < 0 ? 0 : MinI64(causal_end, key_end);
}

// Head slots a position holds in the interleaved layout: heads, or with
// packed projections more (AttentionCudaProblem::q_slots, kv_slots). q and
// dq take QuerySlots, k, v and theirs KeySlots, out and d_out heads.
__device__ __forceinline__ int64_t QuerySlots(const AttentionCudaProblem& p) {
  return p.q_slots > 0 ? p.q_slots : p.heads;
}
__device__ __forceinline__ int64_t KeySlots(const AttentionCudaProblem& p) {
  return p.kv_slots > 0 ? p.kv_slots : p.heads;
}

// Where head bh's [len, d] matrix of q, k, v, out or a gradient starts (its
// row 0, in elements), and how far apart its rows lie: heads-first, each
// head's rows are contiguous; interleaved ([batch, len, slots, d]: the
// problem's interleaved_queries for q, out, d_out and dq, interleaved_keys
// for k, v and theirs), a row is followed by the position's other slots.
__device__ __forceinline__ int64_t HeadOffset(const AttentionCudaProblem& p, bool interleaved,
                                              int64_t slots, int64_t bh, int64_t len, int64_t d) {
  if (!interleaved) return bh * len * d;
  return ((bh / p.heads) * len * slots + bh % p.heads) * d;
}
__device__ __forceinline__ int64_t RowStride(bool interleaved, int64_t slots, int64_t d) {
  return interleaved ? slots * d : d;
}

// Where query row `row` of the heads-first row order (bh * q_len +
// position) of out or d_out (slots: heads) or dq (QuerySlots) lies.
__device__ __forceinline__ int64_t QueryRowOffset(const AttentionCudaProblem& p, int64_t slots,
                                                  int64_t row, int64_t d) {
  return HeadOffset(p, p.interleaved_queries, slots, row / p.q_len, p.q_len, d) +
         (row % p.q_len) * RowStride(p.interleaved_queries, slots, d);
}

// The first query row that sees key c0 (0 without the causal mask).
__device__ __forceinline__ int64_t FirstQueryRow(const AttentionCudaProblem& p, int64_t c0) {
  if (!p.causal) return 0;
  const int64_t row = c0 - p.k_len + p.q_len;
  return row < 0 ? 0 : MinI64(row, p.q_len);
}

// Whether dropout keeps the element at `lane` of Philox block `block`.
__device__ __forceinline__ bool DropoutKeeps(const philox::Uint4& block, int lane, float dropout) {
  return !(philox::ToUniform(philox::Lane(block, lane)) < dropout);
}

// 0 (dropped) or 1 / (1 - dropout) for element `element` of the dropout
// stream (seed, stream, offset): ((b * heads + h) * q_len + i) * k_len + j.
__device__ __forceinline__ float DropoutMultiplier(uint64_t seed, uint64_t stream, uint64_t offset,
                                                   float dropout, uint64_t element) {
  const philox::Uint4 block = philox::Block(seed, stream, offset + element / 4);
  return DropoutKeeps(block, static_cast<int>(element % 4), dropout) ? 1.0f / (1.0f - dropout)
                                                                     : 0.0f;
}

__device__ __forceinline__ float DropoutMultiplier(const AttentionCudaProblem& p,
                                                   uint64_t element) {
  return DropoutMultiplier(p.seed, p.stream, p.offset, p.dropout, element);
}

// The kernel families, each in its own .cu file, launched by
// attention_cuda.cu; pointers are of the problem's element type. They return
// nullptr or the CUDA error text.

// CUDA cores, fp32 arithmetic, every head size up to
// kMaxCudaAttentionHeadSize (attention_cuda_ffma.cu). The backward adds
// scale * dS K into dq_accum (f32, zeroed by the caller) with atomics, or
// with p.dq_slab_floats > 0 stores key tile j's share in dq_accum's slab j
// (zeroed by the caller), and reads delta_i = dO_i . O_i.
const char* ForwardFfma(const AttentionCudaProblem& p, const void* q, const void* k, const void* v,
                        void* out, float* lse, cudaStream_t stream);
const char* BackwardFfma(const AttentionCudaProblem& p, const void* q, const void* k, const void* v,
                         const float* lse, const float* delta, const void* d_out, float* dq_accum,
                         void* dk, void* dv, cudaStream_t stream);

// bf16 on tensor cores for head sizes 32, 64 and 128 with d_k == d_v and
// 16-byte aligned tensors (attention_cuda_mma.cu,
// attention_cuda_mma_backward.cu); the backward's contract is BackwardFfma's.
const char* ForwardMma(const AttentionCudaProblem& p, const void* q, const void* k, const void* v,
                       void* out, float* lse, cudaStream_t stream);
const char* BackwardMma(const AttentionCudaProblem& p, const void* q, const void* k, const void* v,
                        const float* lse, const float* delta, const void* d_out, float* dq_accum,
                        void* dk, void* dv, cudaStream_t stream);

// Keys per block of each backward kernel: the number of dQ slabs in
// deterministic mode is the key length over it, rounded up.
int64_t BackwardFfmaKeyTile(const AttentionCudaProblem& p);
int64_t BackwardMmaKeyTile();

// Where a backward block of key tile `key_tile` puts its share of dQ for
// head `bh`: one buffer for all (atomics), or its own slab.
__device__ __forceinline__ float* DqShare(const AttentionCudaProblem& p, float* dq_accum,
                                          int64_t key_tile, int64_t bh, int64_t d_k) {
  const int64_t slab = p.dq_slab_floats > 0 ? key_tile * p.dq_slab_floats : 0;
  return dq_accum + slab + bh * p.q_len * d_k;
}

// Adds `value` into a dQ share: atomically into the shared buffer, or as
// the one store of this key tile into its slab.
__device__ __forceinline__ void AddDq(const AttentionCudaProblem& p, float* at, float value) {
  if (p.dq_slab_floats > 0) {
    *at = value;
  } else {
    atomicAdd(at, value);
  }
}

// The error of the last launch, or nullptr.
inline const char* LastLaunchError() {
  const cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

}  // namespace attention_cuda
}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_ATTENTION_CUDA_COMMON_CUH_

// The CUDA attention launchers: the small kernels around the main ones (key
// mask preparation, the backward's delta and its dQ conversion), and the
// choice of kernel family for a problem.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "ops/attention/attention_cuda.h"
#include "ops/attention/attention_cuda_common.cuh"

namespace tfm {
namespace {

using attention_cuda::FromFloat;
using attention_cuda::kNegInf;
using attention_cuda::LastLaunchError;
using attention_cuda::QueryRowOffset;
using attention_cuda::QuerySlots;
using attention_cuda::ToFloat;

constexpr int kThreads = 256;

// One block per batch item. A padding mask becomes a bias row and a key end
// just past the last unpadded key, so that trailing padding is skipped whole;
// the bias is needed only when padding comes before that end.
template <typename Index>
__global__ void PrepareKeyMaskKernel(const Index* mask, bool is_lengths, int64_t k_len,
                                     int32_t* key_end, float* key_bias, int32_t* key_has_holes) {
  const int64_t b = blockIdx.x;
  if (is_lengths) {
    if (threadIdx.x == 0) {
      const Index length = mask[b];
      key_end[b] = static_cast<int32_t>(length < 0 ? 0 : (length > k_len ? k_len : length));
    }
    return;
  }
  __shared__ int32_t end, unpadded;
  if (threadIdx.x == 0) end = unpadded = 0;
  __syncthreads();
  int32_t local_end = 0, local_unpadded = 0;
  for (int64_t j = threadIdx.x; j < k_len; j += blockDim.x) {
    const bool padded = mask[b * k_len + j] != 0;
    key_bias[b * k_len + j] = padded ? kNegInf : 0.0f;
    if (!padded) {
      local_end = static_cast<int32_t>(j + 1);
      ++local_unpadded;
    }
  }
  atomicMax(&end, local_end);
  atomicAdd(&unpadded, local_unpadded);
  __syncthreads();
  if (threadIdx.x == 0) {
    key_end[b] = end;
    key_has_holes[b] = unpadded != end;
  }
}

// delta_i = dO_i . O_i, one warp per row (heads-first row order, either
// layout; out and d_out hold no packed slots).
template <typename T>
__global__ void RowDotsKernel(AttentionCudaProblem p, const T* a, const T* b, int64_t rows,
                              int64_t d, float* dots) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  for (int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; row < rows;
       row += warps) {
    const int64_t offset = QueryRowOffset(p, p.heads, row, d);
    float sum = 0.0f;
    for (int64_t x = lane; x < d; x += 32) {
      sum = fmaf(ToFloat(a[offset + x]), ToFloat(b[offset + x]), sum);
    }
    for (int s = 16; s > 0; s /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, s);
    if (lane == 0) dots[row] = sum;
  }
}

// dq[i] = the sum over the slabs in order of slabs[s * count + i], in dq's
// element type: one slab (the buffer the atomics added into) rounded to 16
// bits, or deterministic mode's slab per key tile summed in a fixed order,
// so the same bits every run. The slabs are heads-first; dq is in the
// problem's layout.
template <typename T>
__global__ void SumSlabsKernel(AttentionCudaProblem p, const float* slabs, int64_t slab_count,
                               int64_t count, T* out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float sum = 0.0f;
    for (int64_t s = 0; s < slab_count; ++s) sum += slabs[s * count + i];
    const int64_t at =
        p.interleaved_queries ? QueryRowOffset(p, QuerySlots(p), i / p.d_k, p.d_k) + i % p.d_k : i;
    out[at] = FromFloat<T>(sum);
  }
}

// q, k, v ... are 16 bits wide: dQ is summed in an f32 workspace.
bool SixteenBit(const AttentionCudaProblem& p) { return p.bf16 || p.f16; }

// What the interleaved layout needs: the tensor-core kernels.
constexpr char kInterleavedNeedsMma[] =
    "interleaved heads take the tensor-core kernels only (AttentionMmaTakes)";

int GridFor(int64_t threads) {
  const int64_t blocks = (threads + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65536 ? blocks : 65536);
}

template <typename Word>
__global__ void ClearEmptySentencesKernel(const int32_t* key_end, int64_t per_sentence, Word fill,
                                          Word* data) {
  const int64_t b = blockIdx.y;
  if (key_end[b] != 0) return;
  Word* sentence = data + b * per_sentence;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < per_sentence;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    sentence[i] = fill;
  }
}

}  // namespace

// A positive scale: the tensor-core kernels take row maxima of unscaled
// scores. The 16-byte alignment: cp.async copies 16 bytes at a time.
bool AttentionMmaTakes(const AttentionCudaProblem& p, std::initializer_list<const void*> tensors) {
  if (!SixteenBit(p) || p.d_k != p.d_v || (p.d_k != 32 && p.d_k != 64 && p.d_k != 128)) {
    return false;
  }
  if (!(p.scale > 0.0f)) return false;
  for (const void* tensor : tensors) {
    if (reinterpret_cast<uintptr_t>(tensor) % 16 != 0) return false;
  }
  return true;
}

const char* LaunchClearEmptySentences(const int32_t* key_end, int64_t batch, int64_t per_sentence,
                                      int word_bytes, uint32_t fill_bits, void* data,
                                      StreamHandle stream) {
  if (batch == 0 || per_sentence == 0) return nullptr;
  if (batch > 65535) return "too many sentences for the clearing kernel";
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  const dim3 grid(
      static_cast<unsigned>(std::min<int64_t>((per_sentence + kThreads - 1) / kThreads, 1024)),
      static_cast<unsigned>(batch));
  if (word_bytes == 2) {
    ClearEmptySentencesKernel<<<grid, kThreads, 0, cuda_stream>>>(
        key_end, per_sentence, static_cast<uint16_t>(fill_bits), static_cast<uint16_t*>(data));
  } else {
    ClearEmptySentencesKernel<<<grid, kThreads, 0, cuda_stream>>>(key_end, per_sentence, fill_bits,
                                                                  static_cast<uint32_t*>(data));
  }
  return LastLaunchError();
}

const char* LaunchPrepareKeyMask(const void* mask, bool is_i64, bool is_lengths, int64_t batch,
                                 int64_t k_len, int32_t* key_end, float* key_bias,
                                 int32_t* key_has_holes, StreamHandle stream) {
  if (batch == 0) return nullptr;
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  if (is_i64) {
    PrepareKeyMaskKernel<<<static_cast<unsigned>(batch), kThreads, 0, cuda_stream>>>(
        static_cast<const int64_t*>(mask), is_lengths, k_len, key_end, key_bias, key_has_holes);
  } else {
    PrepareKeyMaskKernel<<<static_cast<unsigned>(batch), kThreads, 0, cuda_stream>>>(
        static_cast<const int32_t*>(mask), is_lengths, k_len, key_end, key_bias, key_has_holes);
  }
  return LastLaunchError();
}

const char* LaunchAttentionForward(const AttentionCudaProblem& problem, const void* q,
                                   const void* k, const void* v, void* out, float* lse,
                                   StreamHandle stream) {
  // The tensor-core kernel where it applies (an H100 run found the forward
  // left on CUDA cores at 7 TFLOP/s), else the f32/FFMA one.
  const bool mma = AttentionMmaTakes(problem, {q, k, v, out});
  if ((problem.interleaved_queries || problem.interleaved_keys) && !mma) {
    return kInterleavedNeedsMma;
  }
  const auto forward = mma ? attention_cuda::ForwardMma : attention_cuda::ForwardFfma;
  return forward(problem, q, k, v, out, lse, static_cast<cudaStream_t>(stream));
}

namespace {

// What the backward runs for a problem and its tensors, decided once for
// the workspace's size and again by the launcher.
struct BackwardPlan {
  bool mma = false;  // The tensor-core kernels (else the CUDA-core ones).
  // One key tile per head: the tensor-core kernel stores dQ itself. Not
  // without keys: no block runs then, and the zeroed accumulation gives dQ
  // its zeros.
  bool dq_direct = false;
  // dQ accumulates in f32 in the workspace after delta (bf16 and f16, or
  // deterministic mode's slabs); else, unless stored directly, the f32
  // atomics add into dq itself.
  bool accumulates_in_workspace = false;
  int64_t slabs = 1;  // dQ accumulations: one per key tile in deterministic mode.
  int64_t workspace_floats = 0;
};

BackwardPlan PlanBackward(const AttentionCudaProblem& p, const void* q, const void* k,
                          const void* v, const void* d_out, const void* dq, const void* dk,
                          const void* dv) {
  BackwardPlan plan;
  // dq too: the one-key-tile case stores it from the kernel in 32-bit words.
  plan.mma = AttentionMmaTakes(p, {q, k, v, d_out, dq, dk, dv});
  plan.dq_direct = plan.mma && p.k_len > 0 && p.k_len <= attention_cuda::BackwardMmaKeyTile();
  const int64_t key_tile = plan.mma ? attention_cuda::BackwardMmaKeyTile()
                                    : attention_cuda::BackwardFfmaKeyTile(p);
  if (p.deterministic && !plan.dq_direct) plan.slabs = (p.k_len + key_tile - 1) / key_tile;
  plan.accumulates_in_workspace = !plan.dq_direct && (SixteenBit(p) || p.deterministic);
  // delta, then the accumulation.
  const int64_t rows = p.batch * p.heads * p.q_len;
  plan.workspace_floats =
      rows + (plan.accumulates_in_workspace ? plan.slabs * rows * p.d_k : 0);
  return plan;
}

}  // namespace

int64_t AttentionBackwardWorkspaceFloats(const AttentionCudaProblem& p, const void* q,
                                         const void* k, const void* v, const void* d_out,
                                         const void* dq, const void* dk, const void* dv) {
  return PlanBackward(p, q, k, v, d_out, dq, dk, dv).workspace_floats;
}

const char* LaunchAttentionBackward(const AttentionCudaProblem& p, const void* q, const void* k,
                                    const void* v, const void* out, const float* lse,
                                    const void* d_out, void* dq, void* dk, void* dv,
                                    float* workspace, StreamHandle stream) {
  const cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  const int64_t rows = p.batch * p.heads * p.q_len;
  const BackwardPlan plan = PlanBackward(p, q, k, v, d_out, dq, dk, dv);
  const bool mma = plan.mma;
  if ((p.interleaved_queries || p.interleaved_keys) && !mma) return kInterleavedNeedsMma;
  AttentionCudaProblem problem = p;
  if (plan.dq_direct) problem.dq_direct = dq;
  const int64_t slabs = plan.slabs;
  if (p.deterministic && !plan.dq_direct) problem.dq_slab_floats = rows * p.d_k;
  float* delta = workspace;
  float* dq_accum = plan.dq_direct                  ? nullptr
                    : plan.accumulates_in_workspace ? workspace + rows
                                                    : static_cast<float*>(dq);
  if (rows > 0) {
    // Slabs too: a key tile that no query row sees stores nothing.
    if (dq_accum != nullptr) {
      const cudaError_t error =
          cudaMemsetAsync(dq_accum, 0, slabs * rows * p.d_k * sizeof(float), cuda_stream);
      if (error != cudaSuccess) return cudaGetErrorString(error);
    }
    if (p.bf16) {
      RowDotsKernel<<<GridFor(rows * 32), kThreads, 0, cuda_stream>>>(
          p, static_cast<const __nv_bfloat16*>(d_out), static_cast<const __nv_bfloat16*>(out), rows,
          p.d_v, delta);
    } else if (p.f16) {
      RowDotsKernel<<<GridFor(rows * 32), kThreads, 0, cuda_stream>>>(
          p, static_cast<const __half*>(d_out), static_cast<const __half*>(out), rows, p.d_v, delta);
    } else {
      RowDotsKernel<<<GridFor(rows * 32), kThreads, 0, cuda_stream>>>(
          p, static_cast<const float*>(d_out), static_cast<const float*>(out), rows, p.d_v, delta);
    }
    if (const char* error = LastLaunchError()) return error;
  }
  const auto backward = mma ? attention_cuda::BackwardMma : attention_cuda::BackwardFfma;
  if (const char* error =
          backward(problem, q, k, v, lse, delta, d_out, dq_accum, dk, dv, cuda_stream)) {
    return error;
  }
  // dQ from its f32 accumulation (unless the atomics added into dq itself).
  const int64_t count = rows * p.d_k;
  if (dq_accum != nullptr && static_cast<void*>(dq_accum) != dq && count > 0) {
    if (p.bf16) {
      SumSlabsKernel<<<GridFor(count), kThreads, 0, cuda_stream>>>(
          p, dq_accum, slabs, count, static_cast<__nv_bfloat16*>(dq));
    } else if (p.f16) {
      SumSlabsKernel<<<GridFor(count), kThreads, 0, cuda_stream>>>(p, dq_accum, slabs, count,
                                                                   static_cast<__half*>(dq));
    } else {
      SumSlabsKernel<<<GridFor(count), kThreads, 0, cuda_stream>>>(p, dq_accum, slabs, count,
                                                                   static_cast<float*>(dq));
    }
    return LastLaunchError();
  }
  return nullptr;
}

}  // namespace tfm

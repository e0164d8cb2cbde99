// Tensor-core building blocks of the bf16 and f16 attention kernels
// (attention_cuda_mma*.cu, templated on the element type E): inline PTX for
// mma.sync m16n8k16 (bf16 or f16 in, fp32 accumulators), ldmatrix and
// cp.async, and the swizzled shared-memory tile layout they read. The two
// types differ only in the MMA's operand type and in the conversion of the
// f32 probabilities and gradients that feed the next MMA (Pack<E>); f16
// keeps 3 more mantissa bits of P but overflows above 65504 (the f16
// trainer's loss scaling skips such steps).
//
// Fragments (PTX ISA, "Matrix fragments for mma.m16n8k16"), with
// g = lane / 4 and t = lane % 4: A a0 = (g, 2t..2t+1), a1 = (g+8, 2t..),
// a2 = (g, 2t+8..), a3 = (g+8, 2t+8..); B b0 = (k 2t..2t+1, n g),
// b1 = (k 2t+8.., n g); C c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1).
// So the score accumulators of two adjacent 8-key tiles are, packed to
// bf16, exactly the A operand of P V for those 16 keys: P never leaves the
// registers.
//
// Rows of every tile are 16-byte chunks XOR-swizzled by row, so that the
// eight row addresses of each ldmatrix phase hit eight different bank
// groups.
#ifndef TFM_OPS_ATTENTION_ATTENTION_CUDA_MMA_CUH_
#define TFM_OPS_ATTENTION_ATTENTION_CUDA_MMA_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/env_setting.h"
#include "ops/attention/attention_cuda_common.cuh"

namespace tfm {
namespace attention_cuda {

using bf16 = __nv_bfloat16;
using f16 = __half;
static_assert(sizeof(bf16) == 2 && sizeof(f16) == 2, "tiles are sized for 16-bit elements");

// Short problems (at most 64 queries and 64 keys a head: the paper's
// sentences, a training batch of 25k tokens in ~48-token rows) give each
// block one tile of work, so a block's time is mostly the latency of its
// loads, hidden only by the other blocks on the multiprocessor (an H200's
// profile of the big model's bf16 update: forward and backward at about 1%
// of their roof). TFM_ATTENTION_SHORT_OCCUPANCY picks their kernels at head
// size 64, to time the choices on one machine (tools/device/gpu_checks.sh's
// occupancy stage):
//   0  the kernels as for long problems;
//   1  (default) built with a register cap that lets more blocks share a
//      multiprocessor (__launch_bounds__'s minimum: forward 4, 128
//      registers, no spills; backward 3, 168 registers, 48 bytes spilled;
//      uncapped 3 and 2 by registers);
//   2  persistent blocks, each loading its next head while it computes
//      this one: the forward's 4 a multiprocessor (capped as in 1), the
//      backward's 2 (uncapped: capped to 3 a multiprocessor its second K
//      and V buffers' registers spilled 1.1 KB).
enum class ShortProblems { kUncapped, kCapped, kPersistent };
inline ShortProblems ShortProblemMode() {
  static const ShortProblems mode = [] {
    if (EnvIs("TFM_ATTENTION_SHORT_OCCUPANCY", "0")) return ShortProblems::kUncapped;
    if (EnvIs("TFM_ATTENTION_SHORT_OCCUPANCY", "2")) return ShortProblems::kPersistent;
    return ShortProblems::kCapped;
  }();
  return mode;
}

// TFM_ATTENTION_SHARED_DROPOUT=0: the tensor-core kernels compute each of
// their dropout elements' Philox block per thread, as before WarpKeepMasks
// (the same bits; to time the two on one machine).
inline bool SharedDropoutMasks() {
  static const bool on = EnvOnUnlessZero("TFM_ATTENTION_SHARED_DROPOUT");
  return on;
}

// Both kernels run 4 warps per block.
constexpr int kMmaWarps = 4;
constexpr int kMmaThreads = 32 * kMmaWarps;
constexpr float kLog2e = 1.4426950408889634f;

// Element offset of chunk `chunk` (8 elements) of row `row`.
template <int kHeadDim>
__device__ __forceinline__ int SwizzledOffset(int row, int chunk) {
  constexpr int kChunks = kHeadDim / 8;
  static_assert(kChunks == 4 || kChunks % 8 == 0, "head size 32, 64 or 128");
  // Four chunks per row: two rows share a 128-byte line, so rows pair up.
  const int swizzled = kChunks >= 8 ? chunk ^ (row & 7) : chunk ^ ((row >> 1) & 3);
  return row * kHeadDim + swizzled * 8;
}

__device__ __forceinline__ uint32_t SmemAddress(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// 16 bytes from global to shared memory; zeros when !valid (rows past the
// end: P V must never multiply a zero probability by garbage).
__device__ __forceinline__ void CpAsync16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void CpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ void LdMatrixX4(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
}

__device__ __forceinline__ void LdMatrixX4Trans(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
}

// d += a b for one 16x8x16 tile of E (bf16 or f16) operands.
template <typename E>
__device__ __forceinline__ void Mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
  if constexpr (std::is_same_v<E, f16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    static_assert(std::is_same_v<E, bf16>, "bf16 or f16 operands");
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// 2^x by the SFU alone: exp2f adds range checks for denormal results,
// which probabilities below 2^-126 do not need. ex2(-inf) = 0.
__device__ __forceinline__ float FastExp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Two floats as an E pair (bf16x2 or f16x2), `low` in the low half (the
// lower column), rounded to nearest.
template <typename E>
__device__ __forceinline__ uint32_t Pack(float low, float high) {
  if constexpr (std::is_same_v<E, f16>) {
    const __half2 pair = __floats2half2_rn(low, high);
    return *reinterpret_cast<const uint32_t*>(&pair);
  } else {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
    return *reinterpret_cast<const uint32_t*>(&pair);
  }
}

// Bit i set when dropout keeps element element_of(i), i < kCount <= 32.
// The loop stays rolled: unrolled over every score element, Philox would
// bloat the kernel and crowd the registers the accumulators need. With
// kShareBlocks, elements that follow each other in one Philox block (4
// elements each) share its computation; without (when they never do), the
// loop keeps fewer registers.
template <int kCount, bool kShareBlocks, typename ElementOf>
__device__ __forceinline__ uint32_t DropoutKeptBits(const AttentionCudaProblem& p,
                                                    ElementOf element_of) {
  static_assert(kCount <= 32, "one bit per element of a 32-bit mask");
  uint32_t kept = 0;
  uint64_t block_index = ~uint64_t{0};
  philox::Uint4 block{};
#pragma unroll 1
  for (int i = 0; i < kCount; ++i) {
    const uint64_t element = element_of(i);
    if constexpr (kShareBlocks) {
      if (element / 4 != block_index) {
        block_index = element / 4;
        block = philox::Block(p.seed, p.stream, p.offset + block_index);
      }
      if (DropoutKeeps(block, static_cast<int>(element % 4), p.dropout)) kept |= 1u << i;
    } else {
      if (DropoutMultiplier(p, element) != 0.0f) kept |= 1u << i;
    }
  }
  return kept;
}

// Dropout's keep bits of kKeys consecutive keys for kRows consecutive
// queries, as words of 32 keys: masks[r * words + w] bit j is key 32 w + j
// of query r, whose elements are first + r * k_len + 32 w + j in the
// dropout stream's order (attention_cuda_common.cuh). The lanes of a warp
// split the (query, word) pairs and compute whole Philox blocks (at most 9
// cover 32 keys, 5 cover 16), where each thread drawing its own elements'
// blocks used one or two of each block's 4 numbers: a quarter (backward) or
// a half (forward) of the Philox work, which at the paper's sentence
// lengths was a large part of the kernels' time. The bits are the same.
// Every lane of the warp must call it; the warp may read `masks` after.
template <int kRows, int kKeys>
__device__ __forceinline__ void WarpKeepMasks(const AttentionCudaProblem& p, uint64_t first,
                                              int lane, uint32_t* masks) {
  constexpr int kWords = (kKeys + 31) / 32;
  constexpr int kWordKeys = kKeys < 32 ? kKeys : 32;
#pragma unroll 1
  for (int job = lane; job < kRows * kWords; job += 32) {
    const uint64_t word_first =
        first + static_cast<uint64_t>(job / kWords) * p.k_len + (job % kWords) * 32;
    uint32_t bits = 0;
#pragma unroll 1
    for (uint64_t block = word_first / 4; block * 4 < word_first + kWordKeys; ++block) {
      const philox::Uint4 numbers = philox::Block(p.seed, p.stream, p.offset + block);
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const uint64_t element = block * 4 + c;
        if (element >= word_first && element < word_first + kWordKeys &&
            DropoutKeeps(numbers, c, p.dropout)) {
          bits |= 1u << (element - word_first);
        }
      }
    }
    masks[job] = bits;
  }
  __syncwarp();
}

// Runs run_item(item, parity) for this block's items: item blockIdx.x
// alone, or with kPersistent items blockIdx.x, + gridDim.x, ... below
// `items`, parity (which of two buffers holds the item's tiles) alternating.
template <bool kPersistent, typename RunItem>
__device__ __forceinline__ void ForBlockItems(int64_t items, const RunItem& run_item) {
  if constexpr (kPersistent) {
    int parity = 0;
    for (int64_t item = blockIdx.x; item < items; item += gridDim.x, parity ^= 1) {
      run_item(item, parity);
    }
  } else {
    run_item(static_cast<int64_t>(blockIdx.x), 0);
  }
}

// Starts copying rows [row0, row0 + kRows) of a [len, kHeadDim] matrix,
// whose rows lie `row_stride` elements apart (RowStride), into a swizzled
// tile; rows at or past row0 + valid_rows become zeros.
template <int kHeadDim, int kRows, typename E>
__device__ __forceinline__ void LoadTileAsync(const E* src, int64_t row_stride, int64_t row0,
                                              int64_t valid_rows, E* tile) {
  constexpr int kChunks = kHeadDim / 8;
  for (int e = threadIdx.x; e < kRows * kChunks; e += kMmaThreads) {
    const int r = e / kChunks, c = e % kChunks;
    const bool valid = r < valid_rows;
    const E* from = valid ? src + (row0 + r) * row_stride + c * 8 : src;
    CpAsync16(SmemAddress(tile + SwizzledOffset<kHeadDim>(r, c)), from, valid);
  }
}

}  // namespace attention_cuda
}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_ATTENTION_CUDA_MMA_CUH_

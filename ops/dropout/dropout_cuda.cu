// CUDA kernels of dropout. Element i's keep decision is lane i % 4 of
// Philox block i / 4 (the CPU's layout, so the masks are bit-identical).
// Where the tensors are 16-byte aligned, each thread takes whole 16-byte
// packs (4 f32 or 8 f16/bf16 elements: 1 or 2 Philox blocks), kUnroll of
// them per grid step with every load issued ahead of the stores, so that
// enough bytes are in flight to reach HBM bandwidth (the first kernel, one
// 8-byte access a thread in bf16, ran at 46% of it in a big model's
// update); the packs span whole 32-bit mask words, whose bits the lanes of
// each word OR together by shuffles. The rest (unaligned tensors, and the
// last count % 32 elements) goes one Philox block a thread, 8 lanes to a
// mask word. The masked backward is a packed element-wise map reading one
// mask word per 32 elements.
#include <algorithm>

#include "core/philox.h"
#include "ops/cuda_elementwise.cuh"
#include "ops/dropout/dropout_cuda.h"

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
using cuda_elementwise::LaunchMap;
using cuda_elementwise::MapInputs;
using cuda_elementwise::Pack;
using cuda_elementwise::ToFloat;

// The 4 elements of one Philox block, as one 8- or 16-byte access.
template <typename D>
struct alignas(4 * sizeof(D)) Quad {
  D v[4];
};

// A 32-bit mask word gathered from the lanes that share it: each lane's
// kBits keep bits (a Philox block's 4 elements, or a pack's 4 or 8) go to
// bits kBits * (lane % (32 / kBits)) on, ORed across those 32 / kBits
// consecutive lanes by shuffles. Every lane of the warp must call it.
template <int kBits>
__device__ __forceinline__ uint32_t LanesMaskWord(uint32_t bits, int lane) {
  constexpr int kLanes = 32 / kBits;
  uint32_t word = bits << (kBits * (lane % kLanes));
#pragma unroll
  for (int s = 1; s < kLanes; s *= 2) word |= __shfl_xor_sync(0xffffffffu, word, s);
  return word;
}

// What one dropout kernel computes, shared by its two loops.
struct DropoutArgs {
  int64_t count;
  float threshold;
  float scale;
  uint64_t seed;
  uint64_t stream_id;
  uint64_t offset;
};

// Packs [0, packs) of 16 bytes each (packs a multiple of the packs per
// mask word), kUnroll per thread step.
template <typename D>
__device__ __forceinline__ void DropoutPacks(const D* in, D* out, uint32_t* mask, int64_t packs,
                                             const DropoutArgs& a) {
  using P = Pack<D>;
  constexpr int kSize = P::kSize;             // 4 (f32) or 8 (16-bit) elements.
  constexpr int kBlocksPerPack = kSize / 4;    // Philox blocks.
  constexpr int kPacksPerWord = 32 / kSize;    // Lanes that share a mask word.
  const int lane = threadIdx.x % 32;
  const int64_t stride = GridThreads();        // A multiple of 32.
  // The bound is the warp's first pack, so that all 32 lanes run every
  // iteration and the shuffles see the whole warp; a mask word's packs are
  // all below `packs` or all past it.
  for (int64_t first = GlobalThread(); first - lane < packs; first += stride * kUnroll) {
    P loaded[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t p = first + k * stride;
      if (p < packs) loaded[k] = reinterpret_cast<const P*>(in)[p];
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t p = first + k * stride;
      uint32_t bits = 0;  // Keep bits of this pack's elements.
      if (p < packs) {
        P y;
#pragma unroll
        for (int b = 0; b < kBlocksPerPack; ++b) {
          const philox::Uint4 r =
              philox::Block(a.seed, a.stream_id, a.offset + p * kBlocksPerPack + b);
#pragma unroll
          for (int l = 0; l < 4; ++l) {
            const int j = 4 * b + l;
            const bool keep = philox::ToUniform(philox::Lane(r, l)) >= a.threshold;
            y.v[j] = FromFloat<D>(keep ? ToFloat(loaded[k].v[j]) * a.scale : 0.0f);
            bits |= static_cast<uint32_t>(keep) << j;
          }
        }
        reinterpret_cast<P*>(out)[p] = y;
      }
      if (mask != nullptr) {
        // Pack p's bits are bits kSize * (p % kPacksPerWord) on of word
        // p / kPacksPerWord; p % kPacksPerWord is lane % kPacksPerWord, the
        // warp's first pack being a multiple of 32.
        const uint32_t word = LanesMaskWord<kSize>(bits, lane);
        if (lane % kPacksPerWord == 0 && p < packs) mask[p / kPacksPerWord] = word;
      }
    }
  }
}

// Philox blocks [first_block, (count + 3) / 4) (first_block a multiple of
// 8, a mask word's blocks), one a thread step; 4-element accesses where
// `quad_aligned`, else element by element.
template <typename D>
__device__ __forceinline__ void DropoutBlocks(const D* in, D* out, uint32_t* mask,
                                              int64_t first_block, bool quad_aligned,
                                              const DropoutArgs& a) {
  const int64_t blocks = (a.count + 3) / 4;
  const int lane = threadIdx.x % 32;
  // As in DropoutPacks: the bound is the warp's first block.
  for (int64_t warp_first = first_block + GlobalThread() - lane; warp_first < blocks;
       warp_first += GridThreads()) {
    const int64_t block = warp_first + lane;
    uint32_t nibble = 0;  // Keep bits of this block's elements.
    if (block < blocks) {
      const philox::Uint4 bits = philox::Block(a.seed, a.stream_id, a.offset + block);
      const int64_t base = 4 * block;
      const bool whole = base + 4 <= a.count;
      float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (whole && quad_aligned) {
        const Quad<D> q = reinterpret_cast<const Quad<D>*>(in)[block];
#pragma unroll
        for (int l = 0; l < 4; ++l) x[l] = ToFloat(q.v[l]);
      } else {
        for (int l = 0; l < 4 && base + l < a.count; ++l) x[l] = ToFloat(in[base + l]);
      }
      Quad<D> y;
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const bool keep =
            base + l < a.count && philox::ToUniform(philox::Lane(bits, l)) >= a.threshold;
        y.v[l] = FromFloat<D>(keep ? x[l] * a.scale : 0.0f);
        nibble |= static_cast<uint32_t>(keep) << l;
      }
      if (whole && quad_aligned) {
        reinterpret_cast<Quad<D>*>(out)[block] = y;
      } else {
        for (int l = 0; l < 4 && base + l < a.count; ++l) out[base + l] = y.v[l];
      }
    }
    if (mask != nullptr) {
      // Word block / 8 holds the nibbles of blocks 8w .. 8w + 7: lanes
      // 8g .. 8g + 7 of this warp (warp_first is a multiple of 8).
      const uint32_t word = LanesMaskWord<4>(nibble, lane);
      if (lane % 8 == 0 && block < blocks) mask[block / 8] = word;
    }
  }
}

// The packs [0, packs) (none where the tensors are not 16-byte aligned),
// then the remaining blocks.
template <typename D>
__global__ void DropoutKernel(const D* in, D* out, uint32_t* mask, int64_t packs,
                              bool quad_aligned, DropoutArgs a) {
  if (packs > 0) DropoutPacks(in, out, mask, packs, a);
  DropoutBlocks(in, out, mask, packs * (Pack<D>::kSize / 4), quad_aligned, a);
}

struct MaskedBackwardOp {
  const uint32_t* mask;  // Null: every element kept.
  float scale;
  __device__ float operator()(int64_t i, const float (&v)[1]) const {
    const bool keep = mask == nullptr || ((mask[i / 32] >> (i % 32)) & 1u);
    return keep ? v[0] * scale : 0.0f;
  }
};

}  // namespace

template <typename T>
const char* LaunchDropout(const T* in, T* out, uint32_t* mask, int64_t count, float threshold,
                          float scale, uint64_t seed, uint64_t stream_id, uint64_t offset,
                          StreamHandle stream) {
  using D = DeviceT<T>;
  if (count == 0) return nullptr;
  const D* x = reinterpret_cast<const D*>(in);
  D* y = reinterpret_cast<D*>(out);
  const bool quad_aligned = reinterpret_cast<uintptr_t>(x) % sizeof(Quad<D>) == 0 &&
                            reinterpret_cast<uintptr_t>(y) % sizeof(Quad<D>) == 0;
  // The packs cover whole mask words (32 elements); the last count % 32
  // elements go block by block.
  const int64_t packs = Aligned16(x) && Aligned16(y) ? count / 32 * 32 / Pack<D>::kSize : 0;
  const int64_t tail_blocks = (count - packs * Pack<D>::kSize + 3) / 4;
  const int64_t work = std::max((packs + kUnroll - 1) / kUnroll, tail_blocks);
  DropoutKernel<D><<<BlocksFor(work), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      x, y, mask, packs, quad_aligned,
      DropoutArgs{count, threshold, scale, seed, stream_id, offset});
  return LastError();
}

template <typename T>
const char* LaunchDropoutBackwardMasked(const T* dout, const uint32_t* mask, T* dx, int64_t count,
                                        float scale, StreamHandle stream) {
  using D = DeviceT<T>;
  return LaunchMap<1>(MaskedBackwardOp{mask, scale}, static_cast<cudaStream_t>(stream),
                      reinterpret_cast<D*>(dx), count,
                      MapInputs<1, D>{{reinterpret_cast<const D*>(dout)}});
}

#define TFM_INSTANTIATE_DROPOUT(T)                                                                \
  template const char* LaunchDropout<T>(const T*, T*, uint32_t*, int64_t, float, float, uint64_t, \
                                        uint64_t, uint64_t, StreamHandle);                        \
  template const char* LaunchDropoutBackwardMasked<T>(const T*, const uint32_t*, T*, int64_t,     \
                                                      float, StreamHandle);
TFM_INSTANTIATE_DROPOUT(float)
TFM_INSTANTIATE_DROPOUT(Half)
TFM_INSTANTIATE_DROPOUT(BFloat16)
#undef TFM_INSTANTIATE_DROPOUT

}  // namespace tfm

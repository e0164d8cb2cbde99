// CUDA kernels of dropout. Each thread takes one Philox block, the keep
// decisions of 4 consecutive elements (the CPU's layout, so the masks are
// bit-identical); a warp covers 128 elements, and its lanes OR their 4-bit
// nibbles together in groups of 8 by shuffles into 4 mask words. The masked
// backward is a packed element-wise map reading one mask word per 32
// elements.
#include "core/philox.h"
#include "ops/cuda_elementwise.cuh"
#include "ops/dropout/dropout_cuda.h"

namespace tfm {
namespace {

using cuda_elementwise::BlocksFor;
using cuda_elementwise::DeviceT;
using cuda_elementwise::FromFloat;
using cuda_elementwise::GlobalThread;
using cuda_elementwise::GridThreads;
using cuda_elementwise::kThreads;
using cuda_elementwise::LastError;
using cuda_elementwise::LaunchMap;
using cuda_elementwise::MapInputs;
using cuda_elementwise::ToFloat;

// The 4 elements of one Philox block, as one 8- or 16-byte access.
template <typename D>
struct alignas(4 * sizeof(D)) Quad {
  D v[4];
};

template <typename D>
__global__ void DropoutKernel(const D* in, D* out, uint32_t* mask, int64_t count, float threshold,
                              float scale, uint64_t seed, uint64_t stream_id, uint64_t offset,
                              bool quad_aligned) {
  const int64_t blocks = (count + 3) / 4;
  const int lane = threadIdx.x % 32;
  // The loop bound is the warp's first block, so that all 32 lanes run every
  // iteration and the shuffles see the whole warp (kThreads and the grid are
  // whole warps).
  for (int64_t warp_first = GlobalThread() - lane; warp_first < blocks;
       warp_first += GridThreads()) {
    const int64_t block = warp_first + lane;
    uint32_t nibble = 0;  // Keep bits of this block's elements.
    if (block < blocks) {
      const philox::Uint4 bits = philox::Block(seed, stream_id, offset + block);
      const int64_t base = 4 * block;
      const bool whole = base + 4 <= count;
      float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (whole && quad_aligned) {
        const Quad<D> q = reinterpret_cast<const Quad<D>*>(in)[block];
#pragma unroll
        for (int l = 0; l < 4; ++l) x[l] = ToFloat(q.v[l]);
      } else {
        for (int l = 0; l < 4 && base + l < count; ++l) x[l] = ToFloat(in[base + l]);
      }
      Quad<D> y;
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const bool keep = base + l < count && philox::ToUniform(philox::Lane(bits, l)) >= threshold;
        y.v[l] = FromFloat<D>(keep ? x[l] * scale : 0.0f);
        nibble |= static_cast<uint32_t>(keep) << l;
      }
      if (whole && quad_aligned) {
        reinterpret_cast<Quad<D>*>(out)[block] = y;
      } else {
        for (int l = 0; l < 4 && base + l < count; ++l) out[base + l] = y.v[l];
      }
    }
    if (mask != nullptr) {
      // Word block / 8 holds the nibbles of blocks 8w .. 8w + 7: lanes
      // 8g .. 8g + 7 of this warp (warp_first is a multiple of 32).
      uint32_t word = nibble << (4 * (lane % 8));
      word |= __shfl_xor_sync(0xffffffffu, word, 1);
      word |= __shfl_xor_sync(0xffffffffu, word, 2);
      word |= __shfl_xor_sync(0xffffffffu, word, 4);
      if (lane % 8 == 0 && block < blocks) mask[block / 8] = word;
    }
  }
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
  DropoutKernel<D><<<BlocksFor((count + 3) / 4), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      x, y, mask, count, threshold, scale, seed, stream_id, offset, quad_aligned);
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

// CPU kernel of dropout (forward and backward alike): each Philox block
// yields the keep decisions of 4 consecutive elements; threads take disjoint
// runs of blocks, so no state is shared and the result is independent of the
// thread count. The body generates kLanes blocks (4 kLanes elements) per
// step with vector Philox (ops/cpu_math/philox_simd.h); the ragged end uses
// philox::Block, which gives the same words, so the mask is the same on
// every instruction set.
#include <algorithm>
#include <cstring>

#include "core/op_registry.h"
#include "core/philox.h"
#include "core/rng.h"
#include "core/status_macros.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/philox_simd.h"
#include "ops/cpu_math/vec.h"
#include "ops/dropout/dropout.h"
#include "ops/dropout/dropout_kernel_args.h"

TFM_ISA_BEGIN
namespace {

using simd::kLanes;
using simd::VecF;

// Elements [4 * begin_block, min(n, 4 * end_block)) one Philox block at a
// time: the reference path, and the tail of the vector one. begin_block is a
// multiple of 8, so the keep bits fill whole mask words (when mask is given).
void DropoutBlocksScalar(const PhiloxState& state, float threshold, float scale, const float* in,
                         float* out, uint32_t* mask, int64_t n, int64_t begin_block,
                         int64_t end_block) {
  uint32_t word = 0;
  for (int64_t block = begin_block; block < end_block; ++block) {
    const philox::Uint4 bits = philox::Block(state.seed, state.stream, state.offset + block);
    const int64_t base = 4 * block;
    const int lanes = static_cast<int>(std::min<int64_t>(4, n - base));
    for (int lane = 0; lane < lanes; ++lane) {
      const bool keep = philox::ToUniform(philox::Lane(bits, lane)) >= threshold;
      out[base + lane] = keep ? in[base + lane] * scale : 0.0f;
      word |= static_cast<uint32_t>(keep) << ((base + lane) % 32);
    }
    if (mask != nullptr && (block % 8 == 7 || block + 1 == end_block)) {
      mask[block / 8] = word;
      word = 0;
    }
  }
}

}  // namespace

// Serves dropout, dropout_backward (the same map) and dropout_with_mask,
// which also writes the keep bits (see dropout.h for the packing).
absl::Status DropoutCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const DropoutScaling scaling, ReadDropoutScaling(context));
  const double p = scaling.p;
  TFM_ASSIGN_OR_RETURN(const PhiloxState state, PhiloxStateFromAttrs(context.attrs()));
  const bool with_mask = context.def().outputs.size() == 2;
  uint32_t* mask = nullptr;
  if (with_mask) {
    TFM_ASSIGN_OR_RETURN(
        Tensor * mask_tensor,
        context.AllocateOutput(1, {DropoutMaskWords(x.num_elements())}, DType::kI32));
    mask = reinterpret_cast<uint32_t*>(mask_tensor->data<int32_t>());
  }
  if (p == 0.0) {
    // A copy, not x itself: outputs never alias inputs (OpDef::in_place).
    TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), DType::kF32));
    std::memcpy(out->raw_data(), x.raw_data(), x.nbytes());
    if (with_mask) {
      // All kept; bits past the last element stay 0, as when p > 0.
      const int64_t n = x.num_elements(), words = DropoutMaskWords(n);
      std::fill(mask, mask + words, ~uint32_t{0});
      if (n % 32 != 0) mask[words - 1] = (uint32_t{1} << (n % 32)) - 1;
    }
    return absl::OkStatus();
  }
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), DType::kF32));
  const float* in = x.data<float>();
  float* y = out->data<float>();
  const int64_t n = x.num_elements();
  const float threshold = scaling.threshold;
  const float scale = scaling.scale;
  // Tasks are runs of kLanes-block groups so that every vector step but the
  // last one's is whole (and fills whole 32-bit mask words: kLanes >= 8).
  constexpr int64_t kGroupBlocks = simd::kPhiloxBlocks;
  const int64_t blocks = (n + 3) / 4;
  const int64_t groups = (blocks + kGroupBlocks - 1) / kGroupBlocks;
  context.thread_pool()->ParallelFor(groups, 256, [&](int64_t begin, int64_t end) {
    int64_t block = begin * kGroupBlocks;
    const int64_t end_block = std::min(blocks, end * kGroupBlocks);
    const VecF vthreshold = simd::Set(threshold);
    const VecF vscale = simd::Set(scale);
    // Whole groups only: 4 kLanes elements, all inside x.
    for (; block + kGroupBlocks <= end_block && 4 * (block + kGroupBlocks) <= n;
         block += kGroupBlocks) {
      simd::VecI words[4];
      simd::PhiloxWords(state.seed, state.stream, state.offset + block, words);
      const int64_t base = 4 * block;
      uint64_t bits = 0;  // Keep bits of the 4 kLanes elements (32 or 64).
      for (int k = 0; k < 4; ++k) {
        const simd::Mask keep = simd::Ge(simd::ToUniform(words[k]), vthreshold);
        // x * scale where kept, +0 where dropped (NaN kept stays NaN), as
        // the scalar select.
        const VecF scaled = simd::Load(in + base + kLanes * k) * vscale;
        simd::Store(simd::IfThenElseZero(keep, scaled), y + base + kLanes * k);
        bits |= static_cast<uint64_t>(simd::Bits(keep)) << (kLanes * k);
      }
      if (mask != nullptr) {
        for (int w = 0; w < kGroupBlocks / 8; ++w) {
          mask[block / 8 + w] = static_cast<uint32_t>(bits >> (32 * w));
        }
      }
    }
    DropoutBlocksScalar(state, threshold, scale, in, y, mask, n, block, end_block);
  });
  return absl::OkStatus();
}

// dropout_backward_masked: dx = dout * bit / (1 - p), one mask word per 32
// elements; memory-bound, no generator.
absl::Status DropoutBackwardMaskedCpu(KernelContext& context) {
  const Tensor& dout = context.input(0);
  TFM_ASSIGN_OR_RETURN(const DropoutScaling scaling, ReadDropoutScaling(context));
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dout.shape(), DType::kF32));
  if (scaling.p == 0.0) {
    std::memcpy(dx->raw_data(), dout.raw_data(), dout.nbytes());  // Never dout itself.
    return absl::OkStatus();
  }
  const float* dy = dout.data<float>();
  const uint32_t* mask = reinterpret_cast<const uint32_t*>(context.input(1).data<int32_t>());
  float* out = dx->data<float>();
  const int64_t n = dout.num_elements();
  const float scale = scaling.scale;
  const int64_t words = DropoutMaskWords(n);
  context.thread_pool()->ParallelFor(words, 2048, [&](int64_t begin, int64_t end) {
    int64_t word = begin;
    const VecF vscale = simd::Set(scale);
    // Lane j of a kLanes-bit slice tests bit j.
    uint32_t lane_bit_values[kLanes];
    for (int j = 0; j < kLanes; ++j) lane_bit_values[j] = 1u << j;
    const simd::VecI lane_bits = simd::LoadI(lane_bit_values);
    for (; word < end && 32 * (word + 1) <= n; ++word) {
      const uint32_t bits = mask[word];
      for (int k = 0; k < 32 / kLanes; ++k) {
        const uint32_t slice = (bits >> (kLanes * k)) & ((uint32_t{1} << kLanes) - 1);
        const simd::Mask keep = simd::Eq(simd::SetI(slice) & lane_bits, lane_bits);
        const int64_t i = 32 * word + kLanes * k;
        simd::Store(simd::IfThenElseZero(keep, simd::Load(dy + i) * vscale), out + i);
      }
    }
    for (; word < end; ++word) {
      for (int64_t i = 32 * word; i < std::min(n, 32 * (word + 1)); ++i) {
        out[i] = (mask[word] >> (i % 32)) & 1u ? dy[i] * scale : 0.0f;
      }
    }
  });
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("dropout", DType::kF32, DropoutCpu);
TFM_REGISTER_ISA_KERNEL("dropout_backward", DType::kF32, DropoutCpu);
TFM_REGISTER_ISA_KERNEL("dropout_with_mask", DType::kF32, DropoutCpu);
TFM_REGISTER_ISA_KERNEL("dropout_backward_masked", DType::kF32, DropoutBackwardMaskedCpu);

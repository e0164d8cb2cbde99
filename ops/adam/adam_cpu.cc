// CPU f32 kernel of adam and multi_tensor_adam: one fused elementwise
// vector pass (the ragged end masked), threaded over chunks of all the
// call's tensors; the bias corrections are folded into two constants. One
// kernel serves both ops, so a multi-tensor update has the bits of
// per-tensor ones.
#include <algorithm>
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/adam/adam_kernel_args.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/vec.h"

TFM_ISA_BEGIN

namespace {

// 64K elements (1.75 MiB of the four arrays) per task.
constexpr int64_t kChunk = 1 << 16;

// Elements [begin, end) of one tensor, each gradient multiplied by
// grad_scale (a clip factor, or 1: exact) as it is read.
void AdamSpan(const AdamStep& c, float grad_scale, const AdamEntry& t, int64_t begin,
              int64_t end) {
  using simd::Load;
  using simd::Store;
  using simd::VecF;
  const VecF vb1 = simd::Set(c.beta1), vb2 = simd::Set(c.beta2);
  const VecF v1b1 = simd::Set(c.one_minus_beta1), v1b2 = simd::Set(c.one_minus_beta2);
  const VecF vc2 = simd::Set(c.correction2_sqrt);
  const VecF veps = simd::Set(c.eps), vstep = simd::Set(c.step_size);
  const VecF vdecay = simd::Set(c.decay);
  const VecF vscale = simd::Set(grad_scale);
  // The ragged end goes through the same arithmetic with masked loads
  // and stores, so every element rounds alike whatever its position.
  simd::ForEachVector(begin, end, [&](int64_t i, auto lanes) {
    const VecF g = Load(t.grad + i, lanes) * vscale;
    const VecF mi = simd::MulAdd(vb1, Load(t.m + i, lanes), v1b1 * g);
    const VecF vi = simd::MulAdd(vb2, Load(t.v + i, lanes), v1b2 * g * g);
    // torch's order: sqrt(v) / sqrt(1 - beta2^t) + eps, then m / that.
    const VecF denom = simd::Sqrt(vi) / vc2 + veps;
    Store(mi, t.m + i, lanes);
    Store(vi, t.v + i, lanes);
    // torch.optim.AdamW's order: the decay rounded on its own first.
    Store(Load(t.param + i, lanes) * vdecay - vstep * (mi / denom), t.param + i, lanes);
  });
}

}  // namespace

absl::Status AdamCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const AdamStep c, ReadAdamStep(context));
  TFM_ASSIGN_OR_RETURN(const AdamCall call, ReadAdamCall(context));
  if (SkipsUpdate(call.grad_sum_of_squares, call.skip_guard)) {
    HandBackAdamState(context);
    return absl::OkStatus();
  }
  const float grad_scale = call.grad_sum_of_squares == nullptr
                               ? 1.0f
                               : ClipFactor(*call.grad_sum_of_squares, call.max_norm);
  // The chunks of all tensors, so that many small tensors share the
  // threads as one large one does.
  struct Chunk {
    const AdamEntry* tensor;
    int64_t begin, end;
  };
  std::vector<Chunk> chunks;
  for (const AdamEntry& tensor : call.entries) {
    for (int64_t begin = 0; begin < tensor.count; begin += kChunk) {
      chunks.push_back({&tensor, begin, std::min(tensor.count, begin + kChunk)});
    }
  }
  context.thread_pool()->ParallelFor(
      static_cast<int64_t>(chunks.size()), 1, [&](int64_t first, int64_t last) {
        for (int64_t k = first; k < last; ++k) {
          AdamSpan(c, grad_scale, *chunks[k].tensor, chunks[k].begin, chunks[k].end);
        }
      });
  HandBackAdamState(context);
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("adam", DType::kF32, AdamCpu);
TFM_REGISTER_ISA_KERNEL("multi_tensor_adam", DType::kF32, AdamCpu);

// CPU kernels of relu: threaded vector loops (each one compare and one
// mask), the ragged end through the same arithmetic with masked lanes.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/vec.h"

TFM_ISA_BEGIN
namespace {

using simd::ForEachVector;
using simd::Load;
using simd::Store;
using simd::VecF;

// 64K floats (256 KiB) per task: big enough that the pool's wake-up is
// noise, small enough for every thread to get work on the FFN's tensors.
constexpr int64_t kGrain = 1 << 16;

}  // namespace

absl::Status ReluCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), DType::kF32));
  const float* in = x.data<float>();
  float* y = out->data<float>();
  context.thread_pool()->ParallelFor(x.num_elements(), kGrain, [&](int64_t begin, int64_t end) {
    // "Not x <= 0" holds for x > 0 and for NaN, which must propagate as in
    // PyTorch (a max would drop it); -0 and negatives become +0.
    const VecF zero = simd::Zero();
    ForEachVector(begin, end, [&](int64_t i, auto lanes) {
      const VecF v = Load(in + i, lanes);
      Store(simd::IfThenElseZero(simd::NotLe(v, zero), v), y + i, lanes);
    });
  });
  return absl::OkStatus();
}

absl::Status ReluBackwardCpu(KernelContext& context) {
  const Tensor& dout = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dout.shape(), DType::kF32));
  TFM_ASSIGN_OR_RETURN(const double scale, context.attrs().GetOr<double>("scale", 1.0));
  const float* dy = dout.data<float>();
  const float* y = context.input(1).data<float>();
  float* out = dx->data<float>();
  context.thread_pool()->ParallelFor(
      dout.num_elements(), kGrain, [&](int64_t begin, int64_t end) {
        // Ordered compare: out = 0 or NaN passes no gradient. The product
        // as dropout's backward rounds it (dy * scale, once).
        const VecF zero = simd::Zero();
        const VecF vscale = simd::Set(static_cast<float>(scale));
        ForEachVector(begin, end, [&](int64_t i, auto lanes) {
          const simd::Mask keep = simd::Gt(Load(y + i, lanes), zero);
          Store(simd::IfThenElseZero(keep, Load(dy + i, lanes) * vscale), out + i, lanes);
        });
      });
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("relu", DType::kF32, ReluCpu);
TFM_REGISTER_ISA_KERNEL("relu_backward", DType::kF32, ReluBackwardCpu);

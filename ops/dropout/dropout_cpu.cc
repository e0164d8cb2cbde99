// CPU kernel of dropout (forward and backward alike): each Philox block
// yields the keep decisions of 4 consecutive elements; threads take disjoint
// runs of blocks, so no state is shared and the result is independent of the
// thread count.
#include <algorithm>

#include "core/op_registry.h"
#include "core/philox.h"
#include "core/rng.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status DropoutCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const double p, context.attrs().Get<double>("p"));
  TFM_ASSIGN_OR_RETURN(const PhiloxState state, PhiloxStateFromAttrs(context.attrs()));
  if (p == 0.0) {
    context.SetOutput(0, x);
    return absl::OkStatus();
  }
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), DType::kF32));
  const float* in = x.data<float>();
  float* y = out->data<float>();
  const int64_t n = x.num_elements();
  const float threshold = static_cast<float>(p);
  // p = 1 never keeps (uniforms are < 1), so the infinite scale is unused.
  const float scale = p < 1.0 ? static_cast<float>(1.0 / (1.0 - p)) : 0.0f;
  context.thread_pool()->ParallelFor((n + 3) / 4, 2048, [&](int64_t begin, int64_t end) {
    for (int64_t block = begin; block < end; ++block) {
      const philox::Uint4 bits = philox::Block(state.seed, state.stream, state.offset + block);
      const int64_t base = 4 * block;
      const int lanes = static_cast<int>(std::min<int64_t>(4, n - base));
      for (int lane = 0; lane < lanes; ++lane) {
        const bool keep = philox::ToUniform(philox::Lane(bits, lane)) >= threshold;
        y[base + lane] = keep ? in[base + lane] * scale : 0.0f;
      }
    }
  });
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("dropout", DeviceType::kCPU, DType::kF32, DropoutCpu);
TFM_REGISTER_KERNEL("dropout_backward", DeviceType::kCPU, DType::kF32, DropoutCpu);

}  // namespace
}  // namespace tfm

// CPU kernels of relu: threaded, branch-free loops the compiler vectorises.
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

constexpr int64_t kGrain = 1 << 15;

absl::Status ReluCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), DType::kF32));
  const float* in = x.data<float>();
  float* y = out->data<float>();
  context.thread_pool()->ParallelFor(x.num_elements(), kGrain, [&](int64_t begin, int64_t end) {
    // x > 0 ? x : 0 rather than std::max: NaN propagates, as in PyTorch.
    for (int64_t i = begin; i < end; ++i) y[i] = in[i] > 0.0f || in[i] != in[i] ? in[i] : 0.0f;
  });
  return absl::OkStatus();
}

absl::Status ReluBackwardCpu(KernelContext& context) {
  const Tensor& dout = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dout.shape(), DType::kF32));
  const float* dy = dout.data<float>();
  const float* y = context.input(1).data<float>();
  float* out = dx->data<float>();
  context.thread_pool()->ParallelFor(dout.num_elements(), kGrain,
                                     [&](int64_t begin, int64_t end) {
                                       for (int64_t i = begin; i < end; ++i) {
                                         out[i] = y[i] > 0.0f ? dy[i] : 0.0f;
                                       }
                                     });
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("relu", DeviceType::kCPU, DType::kF32, ReluCpu);
TFM_REGISTER_KERNEL("relu_backward", DeviceType::kCPU, DType::kF32, ReluBackwardCpu);

}  // namespace
}  // namespace tfm

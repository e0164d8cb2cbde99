// CPU f32 kernels of sum_of_squares (accumulating) and scale_in_place. The sum is split into
// fixed chunks added in order, so it does not depend on the thread count.
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

constexpr int64_t kChunk = 1 << 14;

absl::Status SumOfSquaresCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  const float* data = x.data<float>();
  const int64_t n = x.num_elements();
  std::vector<double> partial((n + kChunk - 1) / kChunk, 0.0);
  context.thread_pool()->ParallelFor(partial.size(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double sum = 0.0;
      for (int64_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) {
        sum += static_cast<double>(data[i]) * data[i];
      }
      partial[c] = sum;
    }
  });
  double total = 0.0;
  for (double p : partial) total += p;
  Tensor accumulator = context.in_place_input(1);
  float* out = accumulator.data<float>();
  out[0] = static_cast<float>(out[0] + total);
  context.SetOutput(0, context.input(1));
  return absl::OkStatus();
}

absl::Status ScaleInPlaceCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(double factor, context.attrs().Get<double>("factor"));
  const float f = static_cast<float>(factor);
  float* data = context.in_place_input(0).data<float>();
  context.thread_pool()->ParallelFor(context.input(0).num_elements(), kChunk,
                                     [&](int64_t begin, int64_t end) {
                                       for (int64_t i = begin; i < end; ++i) data[i] *= f;
                                     });
  context.SetOutput(0, context.input(0));
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("sum_of_squares", DeviceType::kCPU, DType::kF32, SumOfSquaresCpu);
TFM_REGISTER_KERNEL("scale_in_place", DeviceType::kCPU, DType::kF32, ScaleInPlaceCpu);

}  // namespace
}  // namespace tfm

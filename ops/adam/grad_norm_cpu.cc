// CPU f32 kernels of multi_tensor_sum_of_squares and scale_in_place. Each
// tensor's sum is split into fixed chunks (each summed in a fixed order)
// added in order, and the tensors' sums are added in list order, so it does
// not depend on the thread count.
#include <algorithm>
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

constexpr int64_t kChunk = 1 << 14;

// The sum of x[i]^2 in double, as kLanes interleaved sums (element i goes
// to sum i % kLanes) added pairwise at the end: a fixed order, so the bits
// do not depend on the threads. One running sum waited on its own adds (4
// cycles an element: 2% of the base model's bf16 update); kLanes
// independent ones vectorise.
double SumOfSquares(const float* x, int64_t count) {
  constexpr int kLanes = 8;
  double sums[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) {
      sums[lane] += static_cast<double>(x[i + lane]) * x[i + lane];
    }
  }
  for (int lane = 0; i < count; ++i, ++lane) sums[lane] += static_cast<double>(x[i]) * x[i];
  for (int width = kLanes / 2; width >= 1; width /= 2) {
    for (int lane = 0; lane < width; ++lane) sums[lane] += sums[lane + width];
  }
  return sums[0];
}

absl::Status MultiTensorSumOfSquaresCpu(KernelContext& context) {
  // The chunks of all tensors, summed in parallel, so that many small
  // gradients share the threads as one large one does.
  struct Chunk {
    const float* data;
    int64_t count;
  };
  std::vector<Chunk> chunks;
  std::vector<size_t> first_chunk;  // Of each tensor, and one past the last.
  for (int entry = 0; entry < context.list_size(); ++entry) {
    first_chunk.push_back(chunks.size());
    const Tensor& x = context.list_input(entry, 0);
    const float* data = x.data<float>();
    for (int64_t begin = 0; begin < x.num_elements(); begin += kChunk) {
      chunks.push_back({data + begin, std::min(kChunk, x.num_elements() - begin)});
    }
  }
  first_chunk.push_back(chunks.size());
  std::vector<double> partial(chunks.size(), 0.0);
  context.thread_pool()->ParallelFor(
      static_cast<int64_t>(chunks.size()), 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
          partial[c] = SumOfSquares(chunks[c].data, chunks[c].count);
        }
      });
  // Each tensor's sum in double, added to the total in f32: the bits of the
  // per-tensor sums accumulated one tensor at a time.
  float total = 0.0f;
  for (int entry = 0; entry < context.list_size(); ++entry) {
    double sum = 0.0;
    for (size_t c = first_chunk[entry]; c < first_chunk[entry + 1]; ++c) sum += partial[c];
    total = static_cast<float>(total + sum);
  }
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, {}, DType::kF32));
  out->data<float>()[0] = total;
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

TFM_REGISTER_KERNEL("multi_tensor_sum_of_squares", DeviceType::kCPU, DType::kF32,
                    MultiTensorSumOfSquaresCpu);
TFM_REGISTER_KERNEL("scale_in_place", DeviceType::kCPU, DType::kF32, ScaleInPlaceCpu);

}  // namespace
}  // namespace tfm

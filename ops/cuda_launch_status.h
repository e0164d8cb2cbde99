// The status of a CUDA launch, for the host code that registers an op's
// CUDA kernels: the launchers of every op's .cu files return nullptr on
// success or a static message (they are plain C++ that nvcc compiles, so
// they do not build absl::Status themselves).
#ifndef TFM_OPS_CUDA_LAUNCH_STATUS_H_
#define TFM_OPS_CUDA_LAUNCH_STATUS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/op_registry.h"
#include "core/tensor.h"

namespace tfm {

// OK for nullptr, else InternalError naming the running op.
absl::Status CudaLaunchStatus(const KernelContext& context, const char* error);

// Device memory for a multi-tensor launch's list of `count` entries
// (ops/cuda_multi_tensor.cuh), from the caching allocator on the op's
// stream, where it stays until the kernel queued there has read it. Held
// as 8-byte words; Entry's size must be a multiple of 8.
template <typename Entry>
absl::StatusOr<Tensor> DeviceListBuffer(const KernelContext& context, size_t count) {
  static_assert(sizeof(Entry) % 8 == 0, "the list is held in 8-byte words");
  const int64_t words = static_cast<int64_t>(sizeof(Entry) / 8 * count);
  return Tensor::Empty({words > 0 ? words : 1}, DType::kI64, context.device(), context.stream());
}

// The list's entries in such a buffer.
template <typename Entry>
Entry* ListEntries(Tensor& buffer) {
  return reinterpret_cast<Entry*>(buffer.data<int64_t>());
}

}  // namespace tfm

#endif  // TFM_OPS_CUDA_LAUNCH_STATUS_H_

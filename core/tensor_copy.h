// Copies between devices.
#ifndef TFM_CORE_TENSOR_COPY_H_
#define TFM_CORE_TENSOR_COPY_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace tfm {

// A new tensor on `device` with the contents of `tensor` (a copy even when
// the devices are the same).
absl::StatusOr<Tensor> CopyToDevice(const Tensor& tensor, const Device& device);

// Each of `tensors` on the host: host tensors as they are, device tensors
// copied with one wait for the device (cuda::CopyDeviceToHostTogether), not
// one per tensor as CopyToDevice's copies wait.
absl::StatusOr<std::vector<Tensor>> CopyAllToHost(absl::Span<const Tensor> tensors);

// Copies the elements of `from` into the buffer `to` views (a handle that
// shares it, e.g. a model's parameter), across devices; dtypes and shapes
// must match.
absl::Status CopyInto(const Tensor& from, Tensor to);

// A tensor of `shape` on `device` holding `values` (token ids, lengths);
// on the CPU the host tensor itself, without a second copy.
absl::StatusOr<Tensor> Int32OnDevice(absl::Span<const int32_t> values, const Shape& shape,
                                     const Device& device);

// `values` copied into `buffer` when it is an i32 tensor of `shape` on
// `device` (keeping its address: a CUDA graph reads it there), else into a
// new one that `buffer` then holds.
absl::Status Int32IntoBuffer(absl::Span<const int32_t> values, const Shape& shape,
                             const Device& device, Tensor& buffer);

}  // namespace tfm

#endif  // TFM_CORE_TENSOR_COPY_H_

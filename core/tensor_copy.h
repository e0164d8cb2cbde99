// Copies between devices.
#ifndef TFM_CORE_TENSOR_COPY_H_
#define TFM_CORE_TENSOR_COPY_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

// A new tensor on `device` with the contents of `tensor` (a copy even when
// the devices are the same).
absl::StatusOr<Tensor> CopyToDevice(const Tensor& tensor, const Device& device);

}  // namespace tfm

#endif  // TFM_CORE_TENSOR_COPY_H_

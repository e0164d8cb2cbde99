#include "core/tensor_copy.h"

#include <cstring>

#include "core/cuda/runtime.h"
#include "core/status_macros.h"

namespace tfm {

absl::StatusOr<Tensor> CopyToDevice(const Tensor& tensor, const Device& device) {
  if (!tensor.defined()) return absl::InvalidArgumentError("CopyToDevice: undefined tensor");
  TFM_ASSIGN_OR_RETURN(Tensor copy, Tensor::Empty(tensor.shape(), tensor.dtype(), device));
  const bool from_cpu = tensor.device().is_cpu();
  const bool to_cpu = device.is_cpu();
  if (from_cpu && to_cpu) {
    std::memcpy(copy.raw_data(), tensor.raw_data(), tensor.nbytes());
    return copy;
  }
  const cuda::CopyKind kind = from_cpu ? cuda::CopyKind::kHostToDevice
                              : to_cpu ? cuda::CopyKind::kDeviceToHost
                                       : cuda::CopyKind::kDeviceToDevice;
  TFM_RETURN_IF_ERROR(cuda::Memcpy(copy.raw_data(), tensor.raw_data(), tensor.nbytes(), kind));
  return copy;
}

absl::StatusOr<Tensor> Int32OnDevice(absl::Span<const int32_t> values, const Shape& shape,
                                     const Device& device) {
  TFM_ASSIGN_OR_RETURN(Tensor host, Tensor::FromVector<int32_t>(values, shape));
  if (device.is_cpu()) return host;
  return CopyToDevice(host, device);
}

}  // namespace tfm

#include "core/tensor_copy.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/cuda/runtime.h"
#include "core/op_profile.h"
#include "core/status_macros.h"

namespace tfm {

absl::StatusOr<Tensor> CopyToDevice(const Tensor& tensor, const Device& device) {
  if (!tensor.defined()) return absl::InvalidArgumentError("CopyToDevice: undefined tensor");
  TFM_ASSIGN_OR_RETURN(Tensor copy, Tensor::Empty(tensor.shape(), tensor.dtype(), device));
  TFM_RETURN_IF_ERROR(CopyInto(tensor, copy));
  return copy;
}

absl::StatusOr<std::vector<Tensor>> CopyAllToHost(absl::Span<const Tensor> tensors) {
  std::vector<Tensor> host(tensors.begin(), tensors.end());
  std::vector<cuda::DeviceToHostCopy> copies;
  int device = -1;
  for (Tensor& tensor : host) {
    if (!tensor.defined()) return absl::InvalidArgumentError("CopyAllToHost: undefined tensor");
    if (tensor.device().is_cpu()) continue;
    if (device >= 0 && tensor.device().index != device) {
      return absl::InvalidArgumentError("CopyAllToHost: tensors on several devices");
    }
    device = tensor.device().index;
    const Tensor from = tensor;
    TFM_ASSIGN_OR_RETURN(tensor, Tensor::Empty(from.shape(), from.dtype(), Device::Cpu()));
    copies.push_back({tensor.raw_data(), from.raw_data(), from.nbytes()});
  }
  if (copies.empty()) return host;
  const ScopedOpTimer timer("(copy device to host)");
  TFM_RETURN_IF_ERROR(cuda::CopyDeviceToHostTogether(device, copies.data(), copies.size()));
  return host;
}

absl::Status CopyInto(const Tensor& from, Tensor to) {
  if (!from.defined() || !to.defined() || from.dtype() != to.dtype() ||
      from.shape() != to.shape()) {
    return absl::InvalidArgumentError(absl::StrCat("CopyInto: cannot copy ", from.DebugString(),
                                                   " into ", to.DebugString()));
  }
  const bool from_cpu = from.device().is_cpu();
  const bool to_cpu = to.device().is_cpu();
  if (from_cpu && to_cpu) {
    std::memcpy(to.raw_data(), from.raw_data(), from.nbytes());
    return absl::OkStatus();
  }
  const cuda::CopyKind kind = from_cpu ? cuda::CopyKind::kHostToDevice
                              : to_cpu ? cuda::CopyKind::kDeviceToHost
                                       : cuda::CopyKind::kDeviceToDevice;
  // In the op profile (core/op_profile.h) beside the ops: copies to the host
  // wait for the device, so they are where a host-bound step shows.
  const ScopedOpTimer timer(from_cpu ? "(copy host to device)"
                            : to_cpu ? "(copy device to host)"
                                     : "(copy device to device)");
  if (kind == cuda::CopyKind::kHostToDevice) {
    // Token ids, lengths, a batch: staged in pinned memory and queued, so
    // the host goes on launching while the device finishes its queue.
    return cuda::CopyHostToDeviceInStreamOrder(to.device().index, to.raw_data(),
                                               from.raw_data(), from.nbytes());
  }
  return cuda::Memcpy(to.raw_data(), from.raw_data(), from.nbytes(), kind);
}

absl::StatusOr<Tensor> Int32OnDevice(absl::Span<const int32_t> values, const Shape& shape,
                                     const Device& device) {
  TFM_ASSIGN_OR_RETURN(Tensor host, Tensor::FromVector<int32_t>(values, shape));
  if (device.is_cpu()) return host;
  return CopyToDevice(host, device);
}

absl::Status Int32IntoBuffer(absl::Span<const int32_t> values, const Shape& shape,
                             const Device& device, Tensor& buffer) {
  TFM_ASSIGN_OR_RETURN(const Tensor host, Tensor::FromVector<int32_t>(values, shape));
  if (!buffer.defined() || buffer.shape() != shape || buffer.dtype() != DType::kI32 ||
      buffer.device() != device) {
    TFM_ASSIGN_OR_RETURN(buffer, Tensor::Empty(shape, DType::kI32, device));
  }
  return CopyInto(host, buffer);
}

}  // namespace tfm

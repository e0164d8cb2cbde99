#include "tests/util/cuda_compare.h"

#include <utility>

#include "core/check.h"
#include "core/tensor_copy.h"

namespace tfm {
namespace testing {

Tensor OnCuda(const Tensor& tensor) {
  absl::StatusOr<Tensor> copy = CopyToDevice(tensor, Device::Cuda(0));
  TFM_CHECK(copy.ok(), copy.status().ToString().c_str());
  return *std::move(copy);
}

Tensor HostF32(const Tensor& tensor) {
  absl::StatusOr<Tensor> host = CopyToDevice(tensor, Device::Cpu());
  TFM_CHECK(host.ok(), host.status().ToString().c_str());
  if (host->dtype() == DType::kF32) return *std::move(host);
  Tensor wide = *Tensor::Empty(host->shape(), DType::kF32);
  float* out = wide.data<float>();
  for (int64_t i = 0; i < host->num_elements(); ++i) {
    if (host->dtype() == DType::kBF16) {
      out[i] = static_cast<float>(host->data<BFloat16>()[i]);
    } else {
      out[i] = static_cast<float>(host->data<Half>()[i]);  // Checks the dtype.
    }
  }
  return wide;
}

Tensor HostAs(const Tensor& tensor, DType dtype) {
  TFM_CHECK(tensor.device().is_cpu(), "HostAs takes a host tensor");
  const float* in = tensor.data<float>();
  Tensor out = *Tensor::Empty(tensor.shape(), dtype);
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    if (dtype == DType::kF32) {
      out.data<float>()[i] = in[i];
    } else if (dtype == DType::kBF16) {
      out.data<BFloat16>()[i] = BFloat16(in[i]);
    } else {
      out.data<Half>()[i] = Half(in[i]);  // Checks the dtype.
    }
  }
  return out;
}

Tensor RoundedThrough(const Tensor& tensor, DType dtype) { return HostF32(HostAs(tensor, dtype)); }

}  // namespace testing
}  // namespace tfm

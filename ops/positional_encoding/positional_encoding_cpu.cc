// CPU f32 kernels of positional_encoding and add_positional_encoding.
#include <cmath>
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// 1 / 10000^(2i / d) for each pair i, in double.
std::vector<double> Frequencies(int64_t d_model) {
  std::vector<double> frequencies((d_model + 1) / 2);
  for (size_t i = 0; i < frequencies.size(); ++i) {
    frequencies[i] = std::exp(-std::log(10000.0) * (2.0 * i) / static_cast<double>(d_model));
  }
  return frequencies;
}

// row[0 .. d_model) += PE(position) (or = when `add` is false).
void EncodeRow(int64_t position, const std::vector<double>& frequencies, int64_t d_model,
               bool add, const float* in, float* row) {
  for (int64_t j = 0; j < d_model; ++j) {
    const double angle = static_cast<double>(position) * frequencies[j / 2];
    const float pe = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
    row[j] = add ? in[j] + pe : pe;
  }
}

absl::Status PositionalEncodingCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(int64_t length, context.attrs().Get<int64_t>("length"));
  TFM_ASSIGN_OR_RETURN(int64_t d_model, context.attrs().Get<int64_t>("d_model"));
  TFM_ASSIGN_OR_RETURN(int64_t offset, context.attrs().GetOr<int64_t>("offset", 0));
  TFM_ASSIGN_OR_RETURN(Tensor * pe, context.AllocateOutput(0, {length, d_model}, DType::kF32));
  const std::vector<double> frequencies = Frequencies(d_model);
  float* data = pe->data<float>();
  context.thread_pool()->ParallelFor(length, 16, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      EncodeRow(offset + p, frequencies, d_model, false, nullptr, data + p * d_model);
    }
  });
  return absl::OkStatus();
}

absl::Status AddPositionalEncodingCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(int64_t offset, context.attrs().GetOr<int64_t>("offset", 0));
  const int64_t length = x.dim(-2), d_model = x.dim(-1);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), DType::kF32));
  const std::vector<double> frequencies = Frequencies(d_model);
  const int64_t rows = length == 0 || d_model == 0 ? 0 : x.num_elements() / d_model;
  const float* in = x.data<float>();
  float* data = out->data<float>();
  context.thread_pool()->ParallelFor(rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      EncodeRow(offset + r % length, frequencies, d_model, true, in + r * d_model,
                data + r * d_model);
    }
  });
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("positional_encoding", DeviceType::kCPU, DType::kF32, PositionalEncodingCpu);
TFM_REGISTER_KERNEL("add_positional_encoding", DeviceType::kCPU, DType::kF32,
                    AddPositionalEncodingCpu);

}  // namespace
}  // namespace tfm

// CPU f32 kernels of tied_projection: one BLAS call each (OpenBLAS threads
// these large products itself).
#include <cblas.h>

#include <cstring>

#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status TiedProjectionCpu(KernelContext& context) {
  const Tensor& h = context.input(0);
  const Tensor& table = context.input(1);
  const int64_t vocab = table.dim(0), d = table.dim(1), rows = h.num_elements() / std::max<int64_t>(d, 1);
  Shape shape = h.shape();
  shape.back() = vocab;
  TFM_ASSIGN_OR_RETURN(Tensor * logits, context.AllocateOutput(0, shape, DType::kF32));
  if (rows == 0 || vocab == 0) return absl::OkStatus();
  if (d == 0) {
    std::memset(logits->raw_data(), 0, logits->nbytes());
    return absl::OkStatus();
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, vocab, d, 1.0f, h.data<float>(), d,
              table.data<float>(), d, 0.0f, logits->data<float>(), vocab);
  return absl::OkStatus();
}

absl::Status TiedProjectionBackwardCpu(KernelContext& context) {
  const Tensor& h = context.input(0);
  const Tensor& table = context.input(1);
  const Tensor& d_logits = context.input(2);
  const int64_t vocab = table.dim(0), d = table.dim(1), rows = d_logits.num_elements() / std::max<int64_t>(vocab, 1);
  // Pointers only after both outputs exist: a later AllocateOutput may move them.
  TFM_RETURN_IF_ERROR(context.AllocateOutput(0, h.shape(), DType::kF32).status());
  TFM_RETURN_IF_ERROR(context.AllocateOutput(1, table.shape(), DType::kF32).status());
  Tensor& dh = context.outputs()[0];
  Tensor& dtable = context.outputs()[1];
  if (rows == 0 || vocab == 0 || d == 0) {  // Empty products: zero gradients.
    std::memset(dh.raw_data(), 0, dh.nbytes());
    std::memset(dtable.raw_data(), 0, dtable.nbytes());
    return absl::OkStatus();
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, d, vocab, 1.0f,
              d_logits.data<float>(), vocab, table.data<float>(), d, 0.0f, dh.data<float>(), d);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, vocab, d, rows, 1.0f,
              d_logits.data<float>(), vocab, h.data<float>(), d, 0.0f, dtable.data<float>(), d);
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("tied_projection", DeviceType::kCPU, DType::kF32, TiedProjectionCpu);
TFM_REGISTER_KERNEL("tied_projection_backward", DeviceType::kCPU, DType::kF32,
                    TiedProjectionBackwardCpu);

}  // namespace
}  // namespace tfm

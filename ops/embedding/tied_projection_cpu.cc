// CPU f32 kernels of tied_projection: each product is one GemmCpu call on the
// stored layouts (the transposes go to BLAS, nothing is copied), threaded by
// OpenBLAS. GemmCpu also zero-fills the outputs of empty sums (d or vocab 0).
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/matmul/gemm_cpu.h"

namespace tfm {
namespace {

absl::Status TiedProjectionCpu(KernelContext& context) {
  const Tensor& h = context.input(0);
  const Tensor& table = context.input(1);
  const int64_t vocab = table.dim(0), d = table.dim(1), rows = NumRows(h.shape());
  TFM_ASSIGN_OR_RETURN(Tensor * logits, context.AllocateOutput(0, DType::kF32));
  // logits[rows, vocab] = h[rows, d] E^T.
  GemmCpu(false, true, rows, vocab, d, h.data<float>(), table.data<float>(), 0.0f,
          logits->data<float>());
  return absl::OkStatus();
}

absl::Status TiedProjectionBackwardCpu(KernelContext& context) {
  const Tensor& h = context.input(0);
  const Tensor& table = context.input(1);
  const Tensor& d_logits = context.input(2);
  const int64_t vocab = table.dim(0), d = table.dim(1), rows = NumRows(h.shape());
  TFM_ASSIGN_OR_RETURN(Tensor * dh, context.AllocateOutput(0, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * dtable, context.AllocateOutput(1, DType::kF32));
  // dh[rows, d] = d_logits[rows, vocab] E; dE[vocab, d] = d_logits^T h.
  GemmCpu(false, false, rows, d, vocab, d_logits.data<float>(), table.data<float>(), 0.0f,
          dh->data<float>());
  GemmCpu(true, false, vocab, d, rows, d_logits.data<float>(), h.data<float>(), 0.0f,
          dtable->data<float>());
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("tied_projection", DeviceType::kCPU, DType::kF32, TiedProjectionCpu);
TFM_REGISTER_KERNEL("tied_projection_backward", DeviceType::kCPU, DType::kF32,
                    TiedProjectionBackwardCpu);

}  // namespace
}  // namespace tfm

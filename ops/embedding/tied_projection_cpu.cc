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
  Shape shape = h.shape();
  shape.back() = vocab;
  TFM_ASSIGN_OR_RETURN(Tensor * logits, context.AllocateOutput(0, shape, DType::kF32));
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
  // Pointers only after both outputs exist: a later AllocateOutput may move them.
  TFM_RETURN_IF_ERROR(context.AllocateOutput(0, h.shape(), DType::kF32).status());
  TFM_RETURN_IF_ERROR(context.AllocateOutput(1, table.shape(), DType::kF32).status());
  Tensor& dh = context.outputs()[0];
  Tensor& dtable = context.outputs()[1];
  // dh[rows, d] = d_logits[rows, vocab] E; dE[vocab, d] = d_logits^T h.
  GemmCpu(false, false, rows, d, vocab, d_logits.data<float>(), table.data<float>(), 0.0f,
          dh.data<float>());
  GemmCpu(true, false, vocab, d, rows, d_logits.data<float>(), h.data<float>(), 0.0f,
          dtable.data<float>());
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("tied_projection", DeviceType::kCPU, DType::kF32, TiedProjectionCpu);
TFM_REGISTER_KERNEL("tied_projection_backward", DeviceType::kCPU, DType::kF32,
                    TiedProjectionBackwardCpu);

}  // namespace
}  // namespace tfm

// CUDA kernels of tied_projection (linked only in builds with CUDA): each
// product is one cuBLASLt GEMM on the stored layouts, as on the CPU.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/matmul/gemm_cuda_op.h"

namespace tfm {
namespace {

absl::Status TiedProjectionCuda(KernelContext& context) {
  const Tensor& h = context.input(0);
  const Tensor& table = context.input(1);
  const int64_t vocab = table.dim(0), d = table.dim(1), rows = NumRows(h.shape());
  TFM_ASSIGN_OR_RETURN(Tensor * logits, context.AllocateOutput(0, context.dtype()));
  // logits[rows, vocab] = h[rows, d] E^T.
  return RunGemmCuda(context, {.trans_b = true,
                               .m = rows,
                               .n = vocab,
                               .k = d,
                               .a = h.raw_data(),
                               .b = table.raw_data(),
                               .c = logits->raw_data()})
      .status();
}

absl::Status TiedProjectionBackwardCuda(KernelContext& context) {
  const Tensor& h = context.input(0);
  const Tensor& table = context.input(1);
  const Tensor& d_logits = context.input(2);
  const int64_t vocab = table.dim(0), d = table.dim(1), rows = NumRows(h.shape());
  TFM_ASSIGN_OR_RETURN(Tensor * dh, context.AllocateOutput(0, context.dtype()));
  TFM_ASSIGN_OR_RETURN(Tensor * dtable, context.AllocateOutput(1, context.dtype()));
  // dh[rows, d] = d_logits[rows, vocab] E.
  TFM_RETURN_IF_ERROR(RunGemmCuda(context, {.m = rows,
                                            .n = d,
                                            .k = vocab,
                                            .a = d_logits.raw_data(),
                                            .b = table.raw_data(),
                                            .c = dh->raw_data()})
                          .status());
  // dE[vocab, d] = d_logits^T h.
  return RunGemmCuda(context, {.trans_a = true,
                               .m = vocab,
                               .n = d,
                               .k = rows,
                               .a = d_logits.raw_data(),
                               .b = h.raw_data(),
                               .c = dtable->raw_data()})
      .status();
}

TFM_REGISTER_KERNELS("tied_projection", DeviceType::kCUDA, TiedProjectionCuda, DType::kF32,
                     DType::kBF16, DType::kF16);
TFM_REGISTER_KERNELS("tied_projection_backward", DeviceType::kCUDA, TiedProjectionBackwardCuda,
                     DType::kF32, DType::kBF16, DType::kF16);

}  // namespace
}  // namespace tfm

// CPU kernels of layer_norm. Rows are independent and split across threads;
// the row loops are ops/layer_norm/layer_norm_rows_cpu.h's.
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/layer_norm/layer_norm_kernel_args.h"
#include "ops/layer_norm/layer_norm_rows_cpu.h"

TFM_ISA_BEGIN

using layer_norm_rows::BackwardChunks;
using layer_norm_rows::RowGrain;

absl::Status LayerNormCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const double eps, LayerNormEps(context));
  const int64_t d = x.dim(-1);
  const int64_t rows = NumRows(x.shape());
  // AllocateOutput's pointers stay valid: the outputs are sized up front.
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * mean, context.AllocateOutput(1, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * rstd, context.AllocateOutput(2, DType::kF32));
  const float* in = x.data<float>();
  const float* gain = context.input(1).data<float>();
  const float* bias = context.input(2).data<float>();
  float* y = out->data<float>();
  float* means = mean->data<float>();
  float* rstds = rstd->data<float>();
  context.thread_pool()->ParallelFor(rows, RowGrain(d), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      layer_norm_rows::NormalizeRow(in + r * d, gain, bias, d, static_cast<float>(eps),
                                    y + r * d, means + r, rstds + r);
    }
  });
  return absl::OkStatus();
}

// Per row as layer_norm_rows::NormalizeRowBackward; over rows dgain = sum
// dout * xhat, dbias = sum dout. Each chunk of rows sums its dgain and dbias
// privately; the partial sums are added in chunk order at the end.
absl::Status LayerNormBackwardCpu(KernelContext& context) {
  const Tensor& dout = context.input(0);
  const Tensor& x = context.input(1);
  const int64_t d = x.dim(-1);
  const int64_t rows = NumRows(x.shape());
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * dgain, context.AllocateOutput(1, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * dbias, context.AllocateOutput(2, DType::kF32));
  const float* dy = dout.data<float>();
  const float* in = x.data<float>();
  const float* gain = context.input(2).data<float>();
  const float* means = context.input(3).data<float>();
  const float* rstds = context.input(4).data<float>();
  float* dxs = dx->data<float>();

  // One task per chunk, each with private [dgain | dbias] sums.
  const int64_t tasks = BackwardChunks(rows, d);
  std::vector<float> partial(tasks * 2 * d, 0.0f);
  context.thread_pool()->ParallelFor(tasks, 1, [&](int64_t task_begin, int64_t task_end) {
    for (int64_t task = task_begin; task < task_end; ++task) {
      float* pgain = partial.data() + task * 2 * d;
      for (int64_t r = rows * task / tasks; r < rows * (task + 1) / tasks; ++r) {
        layer_norm_rows::NormalizeRowBackward(dy + r * d, in + r * d, gain, means[r], rstds[r],
                                              d, dxs + r * d, pgain, pgain + d);
      }
    }
  });
  float* const totals[2] = {dgain->data<float>(), dbias->data<float>()};
  layer_norm_rows::AddChunkSums(partial.data(), tasks, 2, d, totals);
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("layer_norm", DType::kF32, LayerNormCpu);
TFM_REGISTER_ISA_KERNEL("layer_norm_backward", DType::kF32, LayerNormBackwardCpu);

// CPU f32 kernels of label_smoothed_cross_entropy: one pass for the row max
// and sum(logits), one for sum(exp); backward writes softmax - target in one
// pass from the saved log-sum-exp. Threaded over rows; the token sums are
// added in row order in double, so results do not depend on threads.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/simd_math.h"
#include "ops/cross_entropy/cross_entropy_kernel_args.h"

TFM_ISA_BEGIN
namespace {

struct Setup : CrossEntropyKernelArgs {
  std::vector<int64_t> targets;
};

absl::StatusOr<Setup> ReadSetup(const KernelContext& context) {
  Setup setup;
  TFM_ASSIGN_OR_RETURN(static_cast<CrossEntropyKernelArgs&>(setup),
                       ReadCrossEntropyKernelArgs(context));
  const Tensor& targets = context.input(1);
  setup.targets.resize(setup.rows);
  for (int64_t i = 0; i < setup.rows; ++i) {
    const int64_t t = targets.dtype() == DType::kI64 ? targets.data<int64_t>()[i]
                                                     : targets.data<int32_t>()[i];
    if (t != setup.padding_index && (t < 0 || t >= setup.vocab)) {
      return BadTargetError(context, setup, i, t);
    }
    setup.targets[i] = t;
  }
  return setup;
}

}  // namespace

absl::Status CrossEntropyCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(Setup s, ReadSetup(context));
  const float* logits = context.input(0).data<float>();
  std::vector<double> row_loss(s.rows, 0.0), row_nll(s.rows, 0.0);
  TFM_RETURN_IF_ERROR(context.AllocateOutput(3, {s.rows}, DType::kF32).status());
  float* lse = context.outputs()[3].data<float>();
  context.thread_pool()->ParallelFor(s.rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* x = logits + i * s.vocab;
      // One pass for the max and the plain sum (label smoothing's term):
      // a scalar double sum here once took 2/3 of the op's time.
      float sum = 0.0f;
      const float max = simd::MaxAndSum(x, s.vocab, &sum);
      const double row_lse = max + std::log(static_cast<double>(simd::SumExpShifted(x, s.vocab, max)));
      lse[i] = static_cast<float>(row_lse);
      if (s.targets[i] == s.padding_index) continue;
      const double nll = row_lse - x[s.targets[i]];
      const double smooth = s.vocab * row_lse - sum;
      row_nll[i] = nll;
      row_loss[i] = (1.0 - s.epsilon) * nll + s.epsilon / s.vocab * smooth;
    }
  });
  double loss = 0.0, nll = 0.0;
  int64_t count = 0;
  for (int64_t i = 0; i < s.rows; ++i) {
    loss += row_loss[i];
    nll += row_nll[i];
    count += s.targets[i] != s.padding_index;
  }
  TFM_RETURN_IF_ERROR(context.AllocateOutput(0, {}, DType::kF32).status());
  TFM_RETURN_IF_ERROR(context.AllocateOutput(1, {}, DType::kF32).status());
  TFM_RETURN_IF_ERROR(context.AllocateOutput(2, {}, DType::kI64).status());
  context.outputs()[0].data<float>()[0] = static_cast<float>(loss);
  context.outputs()[1].data<float>()[0] = static_cast<float>(nll);
  context.outputs()[2].data<int64_t>()[0] = count;
  return absl::OkStatus();
}

absl::Status CrossEntropyBackwardCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(Setup s, ReadSetup(context));
  const float* logits = context.input(0).data<float>();
  const float* lse = context.input(2).data<float>();
  const float d_loss = context.input(3).data<float>()[0];
  TFM_ASSIGN_OR_RETURN(Tensor * d_logits, context.AllocateOutput(0, {s.rows, s.vocab}, DType::kF32));
  float* out = d_logits->data<float>();
  const float smooth = d_loss * s.epsilon / s.vocab;
  context.thread_pool()->ParallelFor(s.rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* row = out + i * s.vocab;
      if (s.targets[i] == s.padding_index) {
        std::memset(row, 0, s.vocab * sizeof(float));
        continue;
      }
      // d_loss * softmax - smooth in one pass from the logits and the saved
      // lse (a copy, an in-place exp and a scaling pass took twice as long).
      const simd::VecF scale = simd::Set(d_loss), shift_down = simd::Set(smooth);
      simd::ShiftedMapSum(logits + i * s.vocab, row, s.vocab, lse[i], [&](simd::VecF v) {
        return scale * simd::Exp(v) - shift_down;
      });
      row[s.targets[i]] -= d_loss * (1.0f - s.epsilon);
    }
  });
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("label_smoothed_cross_entropy", DType::kF32, CrossEntropyCpu);
TFM_REGISTER_ISA_KERNEL("label_smoothed_cross_entropy_backward", DType::kF32,
                        CrossEntropyBackwardCpu);

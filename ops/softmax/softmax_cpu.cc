// CPU kernels of softmax. Rows are independent and split across threads;
// an unmasked row is exponentiated straight from x into out and scaled; a
// masked one is first written as masked logits, then normalised in place.
// max, exp, sum and scaling are vectorised (ops/cpu_math/simd_math.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/row_math.h"
#include "ops/cpu_math/simd_math.h"
#include "ops/cpu_math/vec.h"
#include "ops/softmax/softmax_kernel_args.h"

TFM_ISA_BEGIN
namespace {

using cpu_math::ExpNonPositive;
using cpu_math::LaneMax;
using cpu_math::LaneSum;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Rows per task: enough elements to outweigh the scheduling cost.
int64_t RowGrain(int64_t n) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n)); }

// Turns a row of logits into probabilities in place, one element at a time.
// A row without any finite logit (everything masked) becomes zeros; NaN and
// +inf logits make the row NaN, as in PyTorch.
void NormaliseRowScalar(float* row, int64_t n) {
  const float max = LaneMax(row, n);
  if (max == kNegInf) {
    std::fill(row, row + n, 0.0f);
    return;
  }
  for (int64_t i = 0; i < n; ++i) row[i] = ExpNonPositive(row[i] - max);
  const float inv_sum = 1.0f / LaneSum(n, [&](int64_t i) { return row[i]; });
  for (int64_t i = 0; i < n; ++i) row[i] *= inv_sum;
}

// out = softmax(logits) (the two may be the same row). The vector exp maps NaN
// to 0, so rows holding a NaN or +inf (whose x - max is NaN) take the scalar
// path, which propagates them; so do all-masked rows (max -inf).
void NormaliseRow(const float* logits, float* out, int64_t n) {
  const float max = simd::MaxOrNaN(logits, n);
  if (!std::isfinite(max)) {
    if (out != logits) std::copy(logits, logits + n, out);
    NormaliseRowScalar(out, n);
    return;
  }
  const float sum = simd::ExpShiftedSumTo(logits, out, n, max);
  simd::Scale(out, n, 1.0f / sum);
}

}  // namespace

// Serves softmax (one input) and masked_softmax (x, mask).
absl::Status SoftmaxCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), DType::kF32));
  const int64_t n = x.dim(-1);
  if (n == 0) return absl::OkStatus();
  const int64_t rows = NumRows(x.shape());
  const float* in = x.data<float>();
  float* y = out->data<float>();
  const Tensor* mask = context.num_inputs() == 2 ? &context.input(1) : nullptr;
  const MaskRows mask_rows(x.shape(), mask != nullptr ? mask->shape() : Shape{n});
  context.thread_pool()->ParallelFor(rows, RowGrain(n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = in + r * n;
      float* yr = y + r * n;
      if (mask == nullptr) {
        NormaliseRow(xr, yr, n);
        continue;
      }
      if (mask->dtype() == DType::kF32) {
        const float* mr = mask->data<float>() + mask_rows.Offset(r);
        for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] + mr[i];
      } else {
        const int32_t* mr = mask->data<int32_t>() + mask_rows.Offset(r);
        for (int64_t i = 0; i < n; ++i) yr[i] = mr[i] != 0 ? kNegInf : xr[i];
      }
      NormaliseRow(yr, yr, n);
    }
  });
  return absl::OkStatus();
}

// Each row minus its log-sum-exp. A row of -inf only (every token removed)
// stays -inf; one holding NaN or +inf becomes NaN (x - max), as in PyTorch.
absl::Status LogSoftmaxCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), DType::kF32));
  const int64_t n = x.dim(-1);
  if (n == 0) return absl::OkStatus();
  const float* in = x.data<float>();
  float* y = out->data<float>();
  context.thread_pool()->ParallelFor(
      NumRows(x.shape()), RowGrain(n), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const float* xr = in + r * n;
          float* yr = y + r * n;
          const float max = simd::MaxOrNaN(xr, n);
          if (max == kNegInf) {
            std::fill(yr, yr + n, kNegInf);
            continue;
          }
          const float log_sum =
              std::isfinite(max) ? std::log(simd::SumExpShifted(xr, n, max)) : 0.0f;
          // Vector subtractions round exactly as the scalar (x - max) - log_sum;
          // written out because the compiler leaves this loop scalar (x and y
          // may alias): a beam step's [128, 8000] took 0.31-0.33 ms, now 0.21-0.22.
          const simd::VecF vmax = simd::Set(max), vlog_sum = simd::Set(log_sum);
          simd::ForEachVector(0, n, [&](int64_t i, auto lanes) {
            simd::Store((simd::Load(xr + i, lanes) - vmax) - vlog_sum, yr + i, lanes);
          });
        }
      });
  return absl::OkStatus();
}

absl::Status SoftmaxBackwardCpu(KernelContext& context) {
  const Tensor& dout = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dout.shape(), DType::kF32));
  const int64_t n = dout.dim(-1);
  if (n == 0) return absl::OkStatus();
  const int64_t rows = NumRows(dout.shape());
  const float* dy = dout.data<float>();
  const float* y = context.input(1).data<float>();
  float* out = dx->data<float>();
  context.thread_pool()->ParallelFor(rows, RowGrain(n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* dyr = dy + r * n;
      const float* yr = y + r * n;
      float* dxr = out + r * n;
      const float dot = simd::Dot(dyr, yr, n);
      const simd::VecF vdot = simd::Set(dot);
      simd::ForEachVector(0, n, [&](int64_t i, auto lanes) {
        using simd::Load;
        simd::Store(Load(yr + i, lanes) * (Load(dyr + i, lanes) - vdot), dxr + i, lanes);
      });
    }
  });
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("softmax", DType::kF32, SoftmaxCpu);
TFM_REGISTER_ISA_KERNEL("masked_softmax", DType::kF32, SoftmaxCpu);
TFM_REGISTER_ISA_KERNEL("log_softmax", DType::kF32, LogSoftmaxCpu);
TFM_REGISTER_ISA_KERNEL("softmax_backward", DType::kF32, SoftmaxBackwardCpu);

// CPU kernels of add: a threaded, vectorisable elementwise loop.
#include <algorithm>
#include <cstring>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/add/sum_rows_cpu.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/simd_math.h"

TFM_ISA_BEGIN

absl::Status AddCpu(KernelContext& context) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, a.shape(), DType::kF32));
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float* z = out->data<float>();
  const int64_t period = b.num_elements();  // b repeats every `period` of a.
  if (period == 0) return absl::OkStatus();
  context.thread_pool()->ParallelFor(a.num_elements(), 1 << 15, [&](int64_t begin,
                                                                      int64_t end) {
    // Walk whole or partial periods of b so the inner loop has no modulo.
    int64_t i = begin;
    while (i < end) {
      const int64_t phase = i % period;
      const int64_t stop = std::min(end, i + (period - phase));
      simd::Add(x + i, y + phase, z + i, stop - i);
      i = stop;
    }
  });
  return absl::OkStatus();
}

// db: dout summed over b's broadcast axes, or a copy of it.
absl::Status SumToShapeInto(const Tensor& dout, Tensor* db) {
  if (db->shape() == dout.shape()) {
    std::memcpy(db->raw_data(), dout.raw_data(), dout.nbytes());
    return absl::OkStatus();
  }
  const int64_t cols = db->num_elements();
  ::tfm::SumRowsCpu(dout.data<float>(), cols == 0 ? 0 : dout.num_elements() / cols, cols,
                    db->data<float>());
  return absl::OkStatus();
}

// da = dout and, without broadcasting, db = dout: copies, never dout itself
// (the aliasing rule of OpDef::in_place), so a caller accumulating into da
// cannot change db or the upstream gradient behind its back.
absl::Status AddBackwardCpu(KernelContext& context) {
  const Tensor& dout = context.input(0);
  const Tensor& b = context.input(1);
  TFM_ASSIGN_OR_RETURN(Tensor * da, context.AllocateOutput(0, dout.shape(), DType::kF32));
  std::memcpy(da->raw_data(), dout.raw_data(), dout.nbytes());
  TFM_ASSIGN_OR_RETURN(Tensor * db, context.AllocateOutput(1, b.shape(), DType::kF32));
  return SumToShapeInto(dout, db);
}

absl::Status SumToShapeCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(Tensor * db,
                       context.AllocateOutput(0, context.input(1).shape(), DType::kF32));
  return SumToShapeInto(context.input(0), db);
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("add", DType::kF32, AddCpu);
TFM_REGISTER_ISA_KERNEL("add_backward", DType::kF32, AddBackwardCpu);
TFM_REGISTER_ISA_KERNEL("sum_to_shape", DType::kF32, SumToShapeCpu);

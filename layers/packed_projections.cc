#include "layers/packed_projections.h"

#include <atomic>

#include "core/env_setting.h"
#include "core/status_macros.h"
#include "ops/concat_rows/concat_rows.h"
#include "ops/linear/linear.h"

namespace tfm {

namespace {
std::atomic<bool>& PackedProjectionsSetting() {
  static std::atomic<bool> on{EnvOnUnlessZero("TFM_PACKED_PROJECTIONS")};
  return on;
}
}  // namespace

bool PackedProjectionsOn() { return PackedProjectionsSetting().load(std::memory_order_relaxed); }
void SetPackedProjections(bool on) { PackedProjectionsSetting().store(on); }

absl::StatusOr<Tensor> PackedProjections::Forward(absl::Span<Dense* const> projections,
                                                  const Tensor& x) {
  std::vector<Tensor> weights, biases;
  for (const Dense* projection : projections) {
    TFM_ASSIGN_OR_RETURN(Tensor weight, projection->WeightFor(x.dtype()));
    TFM_ASSIGN_OR_RETURN(Tensor bias, projection->BiasFor(x.dtype()));
    weights.push_back(std::move(weight));
    biases.push_back(std::move(bias));
  }
  TFM_ASSIGN_OR_RETURN(weight_, ConcatRows(weights));
  TFM_ASSIGN_OR_RETURN(const Tensor bias, ConcatRows(biases));
  projections_.assign(projections.begin(), projections.end());
  x_ = x;
  return Linear(x, weight_, bias);
}

absl::StatusOr<Tensor> PackedProjections::Backward(const Tensor& dout, const Tensor* dx_sum) {
  if (!x_.defined()) {
    return absl::FailedPreconditionError("packed projections: backward without a forward");
  }
  TFM_ASSIGN_OR_RETURN(LinearGrads grads, dx_sum != nullptr
                                              ? LinearBackwardAdding(dout, x_, weight_, *dx_sum)
                                              : LinearBackward(dout, x_, weight_));
  // Each projection's rows of dW and entries of db.
  int64_t row = 0;
  for (Dense* projection : projections_) {
    const int64_t rows = projection->weight().dim(0);
    TFM_ASSIGN_OR_RETURN(const Tensor dweight, grads.dweight.Slice(row, row + rows));
    TFM_ASSIGN_OR_RETURN(const Tensor dbias, grads.dbias.Slice(row, row + rows));
    TFM_RETURN_IF_ERROR(projection->AccumulateGrads(dweight, dbias));
    row += rows;
  }
  x_ = weight_ = Tensor();
  projections_.clear();
  return grads.dx;
}

}  // namespace tfm

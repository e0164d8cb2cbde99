#include "core/trainable_model.h"

#include "core/status_macros.h"

namespace tfm {

absl::StatusOr<DeviceLossStats> TrainableModel::ForwardBackwardOnDevice(
    const Batch& batch, const StepContext& context) {
  TFM_ASSIGN_OR_RETURN(const LossStats stats, ForwardBackward(batch, context));
  DeviceLossStats sums;
  TFM_ASSIGN_OR_RETURN(sums.loss,
                       Tensor::FromVector<float>({static_cast<float>(stats.loss)}, Shape()));
  TFM_ASSIGN_OR_RETURN(sums.nll,
                       Tensor::FromVector<float>({static_cast<float>(stats.nll)}, Shape()));
  sums.source_tokens = stats.source_tokens;
  sums.target_tokens = stats.target_tokens;
  return sums;
}

}  // namespace tfm

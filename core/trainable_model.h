// What the trainer needs from a model: its parameters, and one batch's loss
// with gradients accumulated into the parameters. The Transformer (layers/)
// implements it; so can a plugin's model. The trainer owns the loop, the
// optimizer and the schedule, never the model's internals.
#ifndef TFM_CORE_TRAINABLE_MODEL_H_
#define TFM_CORE_TRAINABLE_MODEL_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/data/batch.h"
#include "core/dtype.h"
#include "core/layer_registry.h"
#include "core/tensor.h"

namespace tfm {

// Sums over a batch's real (unpadded) target tokens.
struct LossStats {
  double loss = 0;  // The training objective (label-smoothed cross-entropy), summed.
  double nll = 0;   // Negative log-likelihood of the references, summed.
  int64_t source_tokens = 0;
  int64_t target_tokens = 0;

  LossStats& operator+=(const LossStats& other) {
    loss += other.loss;
    nll += other.nll;
    source_tokens += other.source_tokens;
    target_tokens += other.target_tokens;
    return *this;
  }
};

// One batch's sums left where the model computed them, so that a trainer
// reads them back only when it logs them: a GPU's queue need not drain
// once a batch for two numbers. The token counts are known on the host.
struct DeviceLossStats {
  Tensor loss;  // f32 scalar on the model's device: the objective, summed.
  Tensor nll;   // f32 scalar on the model's device.
  int64_t source_tokens = 0;
  int64_t target_tokens = 0;
};

// Where a forward pass draws its randomness: dropout masks are a pure
// function of (seed, counter), so a resumed run replays them exactly.
struct StepContext {
  bool training = true;
  uint64_t seed = 0;
  uint64_t counter = 0;  // Distinct for every batch of a run.
  // Gradients are those of loss_scale * (summed loss). The trainer sets its
  // dynamic loss scale (1 without one) over the update's target tokens, so
  // each backward forms its share of the mean loss's gradient.
  float loss_scale = 1.0f;
  // The same factor as an f32 scalar on the model's device, when the
  // trainer keeps a dynamic loss scale there and the model takes it
  // (TakesLossScaleOnDevice); it then overrides loss_scale.
  Tensor loss_scale_on_device;
};

class TrainableModel {
 public:
  virtual ~TrainableModel() = default;
  // Parameters with names like PyTorch state_dict keys; stable pointers.
  virtual std::vector<Parameter*> Parameters() = 0;
  // Forward and backward of the summed loss; gradients ADD to each
  // Parameter::grad (the trainer zeroes them once per update).
  virtual absl::StatusOr<LossStats> ForwardBackward(const Batch& batch,
                                                    const StepContext& context) = 0;
  // The same with the sums left on the model's device. A model that
  // computes its sums on the host keeps this default, which gives them as
  // host scalars (rounded to f32).
  virtual absl::StatusOr<DeviceLossStats> ForwardBackwardOnDevice(const Batch& batch,
                                                                  const StepContext& context);
  // Whether ForwardBackward seeds its gradient with
  // StepContext::loss_scale_on_device when it is set: then a trainer's
  // dynamic loss scale never comes back to the host between updates.
  virtual bool TakesLossScaleOnDevice() const { return false; }
  // Whether every gradient the passes write goes through AccumulateGrad
  // (layers/parameter_gradients.h), which takes the first gradient of an
  // undefined Parameter::grad as it is. The trainer then starts each
  // batch's gradients undefined (read: zero) instead of filling them with
  // zeros that the first gradient would be added to: two passes over every
  // gradient (and two kernel launches per parameter on a GPU) fewer a
  // batch. It gives zeros to any the passes did not reach. A model that
  // writes into Parameter::grad itself keeps this default.
  virtual bool AccumulatesThroughAccumulateGrad() const { return false; }
  // The loss without gradients, dropout off.
  virtual absl::StatusOr<LossStats> Evaluate(const Batch& batch) = 0;
  // The dtype the passes compute in (train.dtype): f32, or a lower precision
  // with the parameters and their gradients kept in f32 (mixed precision).
  // A model that computes only in f32 keeps this default.
  virtual absl::Status SetComputeDType(DType dtype) {
    if (dtype == DType::kF32) return absl::OkStatus();
    return absl::UnimplementedError(absl::StrCat(
        "train.dtype ", DTypeName(dtype), ": this model computes in f32 only"));
  }
};

}  // namespace tfm

#endif  // TFM_CORE_TRAINABLE_MODEL_H_

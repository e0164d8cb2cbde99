// Adam over a model's parameters with the paper's schedule (Vaswani et al.
// 2017, 5.3): beta1 0.9, beta2 0.98, eps 1e-9, lr from InverseSqrtSchedule.
// Holds the first and second moments, which checkpoints save and restore.
#ifndef TFM_RUNTIME_TRAIN_ADAM_OPTIMIZER_H_
#define TFM_RUNTIME_TRAIN_ADAM_OPTIMIZER_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "core/layer_registry.h"
#include "runtime/train/lr_schedule.h"

namespace tfm {

class AdamOptimizer {
 public:
  // Zero moments for every parameter, on its device; `parameters` must
  // outlive the optimizer.
  static absl::StatusOr<AdamOptimizer> Create(std::vector<Parameter*> parameters,
                                              const config::AdamConfig& adam,
                                              const InverseSqrtSchedule& schedule);

  // Applies the update numbered `update` (1 for the first: the bias
  // corrections and the schedule count from 1) with the current gradients,
  // at the schedule's rate times `lr_factor` (a cooldown's, see
  // CooldownFactor), the gradients clipped to a global norm of max_norm (0:
  // no clipping). One multi_tensor_adam launch over all parameters, which
  // reads the clip factor from `grad_sum_of_squares` (GradSumOfSquares of
  // the gradients, ops/adam/grad_norm.h) on their device: nothing is read
  // back to the host. The gradients are left as they are.
  // When the sum of squares or `skip_guard` (an f32 scalar on the same
  // device, e.g. the update's loss) is not finite, the step is skipped on
  // the device and nothing changes (MultiTensorAdamUpdate).
  absl::Status Step(int64_t update, double lr_factor, const Tensor& grad_sum_of_squares,
                    double max_norm, const Tensor* skip_guard = nullptr);
  // The same without clipping.
  absl::Status Step(int64_t update, double lr_factor = 1.0) {
    return Step(update, lr_factor, unread_sum_of_squares_, 0.0);
  }

  double LearningRate(int64_t update, double lr_factor = 1.0) const {
    return schedule_.LearningRate(update) * lr_factor;
  }

  // The moments as named tensors ("<param>.exp_avg", "<param>.exp_avg_sq",
  // torch.optim.Adam's names), sharing storage: writing into them (a
  // checkpoint being loaded) restores the optimizer.
  std::vector<std::pair<std::string, Tensor>> State() const;

 private:
  AdamOptimizer(std::vector<Parameter*> parameters, const config::AdamConfig& adam,
                const InverseSqrtSchedule& schedule)
      : parameters_(std::move(parameters)), adam_(adam), schedule_(schedule) {}

  std::vector<Parameter*> parameters_;
  config::AdamConfig adam_;
  InverseSqrtSchedule schedule_;
  std::vector<Tensor> exp_avg_;
  std::vector<Tensor> exp_avg_sq_;
  // A zero on the parameters' device for the unclipped Step: with max_norm
  // 0 multi_tensor_adam never reads its sum of squares, but takes one.
  Tensor unread_sum_of_squares_;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_ADAM_OPTIMIZER_H_

#include "runtime/train/adam_optimizer.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "ops/adam/adam.h"
#include "ops/fill/fill.h"

namespace tfm {

absl::StatusOr<AdamOptimizer> AdamOptimizer::Create(std::vector<Parameter*> parameters,
                                                    const config::AdamConfig& adam,
                                                    const InverseSqrtSchedule& schedule) {
  AdamOptimizer optimizer(std::move(parameters), adam, schedule);
  for (const Parameter* p : optimizer.parameters_) {
    if (p->value.shape() != p->grad.shape()) {
      return absl::InvalidArgumentError(absl::StrCat("parameter ", p->name, ": value ",
                                                     p->value.DebugString(), " but gradient ",
                                                     p->grad.DebugString()));
    }
    // The moments live beside their parameter, so the adam op updates all
    // four tensors on one device.
    TFM_ASSIGN_OR_RETURN(Tensor m,
                         Fill(p->value.shape(), 0.0, p->value.dtype(), p->value.device()));
    TFM_ASSIGN_OR_RETURN(Tensor v,
                         Fill(p->value.shape(), 0.0, p->value.dtype(), p->value.device()));
    optimizer.exp_avg_.push_back(std::move(m));
    optimizer.exp_avg_sq_.push_back(std::move(v));
  }
  const Device device =
      optimizer.parameters_.empty() ? Device::Cpu() : optimizer.parameters_[0]->value.device();
  TFM_ASSIGN_OR_RETURN(optimizer.unread_sum_of_squares_, Fill({}, 0.0, DType::kF32, device));
  return optimizer;
}

absl::Status AdamOptimizer::Step(int64_t update, double lr_factor,
                                 const Tensor& grad_sum_of_squares, double max_norm,
                                 const Tensor* skip_guard) {
  AdamOptions options;
  options.lr = LearningRate(update, lr_factor);
  options.beta1 = adam_.beta1();
  options.beta2 = adam_.beta2();
  options.eps = adam_.epsilon();
  options.weight_decay = adam_.weight_decay();
  options.step = update;
  std::vector<AdamTensors> tensors;
  tensors.reserve(parameters_.size());
  for (size_t i = 0; i < parameters_.size(); ++i) {
    tensors.push_back(
        {parameters_[i]->value, parameters_[i]->grad, exp_avg_[i], exp_avg_sq_[i]});
  }
  return MultiTensorAdamUpdate(tensors, grad_sum_of_squares, max_norm, options, skip_guard);
}

std::vector<std::pair<std::string, Tensor>> AdamOptimizer::State() const {
  std::vector<std::pair<std::string, Tensor>> state;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    state.emplace_back(parameters_[i]->name + ".exp_avg", exp_avg_[i]);
    state.emplace_back(parameters_[i]->name + ".exp_avg_sq", exp_avg_sq_[i]);
  }
  return state;
}

}  // namespace tfm

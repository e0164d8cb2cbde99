// The trainer's gradients start each batch undefined for a model whose
// passes accumulate only through AccumulateGrad (the Transformer): the first
// gradient of a parameter is taken as it is instead of being added to a
// tensor of zeros. These tests hold that to the zero-filled way: the same
// weights, moments and gradients over updates of two accumulated batches,
// exactly two passes per parameter and batch fewer (a fill and an add),
// and zeros for a parameter that no pass reached.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/op_profile.h"
#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "layers/parameter_gradients.h"
#include "layers/transformer.h"
#include "runtime/train/adam_optimizer.h"
#include "runtime/train/lr_schedule.h"
#include "runtime/train/trainer.h"
#include "tests/util/tiny_model.h"

namespace tfm {
namespace {

constexpr int kVocab = 40, kPad = 0, kBos = 1, kEos = 2;

// The Transformer as a model that does not say it accumulates only through
// AccumulateGrad: the trainer fills its gradients with zeros.
class ZeroFilledGradients final : public TrainableModel {
 public:
  explicit ZeroFilledGradients(TrainableModel* model) : model_(model) {}
  std::vector<Parameter*> Parameters() override { return model_->Parameters(); }
  absl::StatusOr<LossStats> ForwardBackward(const Batch& batch,
                                            const StepContext& context) override {
    return model_->ForwardBackward(batch, context);
  }
  absl::StatusOr<DeviceLossStats> ForwardBackwardOnDevice(const Batch& batch,
                                                          const StepContext& context) override {
    return model_->ForwardBackwardOnDevice(batch, context);
  }
  bool TakesLossScaleOnDevice() const override { return model_->TakesLossScaleOnDevice(); }
  absl::StatusOr<LossStats> Evaluate(const Batch& batch) override {
    return model_->Evaluate(batch);
  }
  absl::Status SetComputeDType(DType dtype) override { return model_->SetComputeDType(dtype); }

 private:
  TrainableModel* model_;
};

using ::tfm::testing::ToyBatch;

// A trainer over `model`'s parameters with Adam and two batches an update.
struct TrainingRun {
  std::unique_ptr<AdamOptimizer> optimizer;
  std::unique_ptr<Trainer> trainer;
};

TrainingRun MakeRun(TrainableModel* model) {
  TrainingRun run;
  const InverseSqrtSchedule schedule = *InverseSqrtSchedule::Create(32, 4, 1.0);
  run.optimizer = std::make_unique<AdamOptimizer>(
      *AdamOptimizer::Create(model->Parameters(), config::AdamConfig(), schedule));
  TrainerOptions options;
  options.update_freq = 2;
  options.clip_norm = 0.5;
  options.seed = 5;
  run.trainer = std::make_unique<Trainer>(model, run.optimizer.get(), /*batcher=*/nullptr,
                                          std::vector<Batch>(), options, TrainerHooks());
  return run;
}

std::vector<Batch> UpdateBatches(int64_t update) {
  return {ToyBatch(6, static_cast<int>(update)), ToyBatch(5, static_cast<int>(update) + 3)};
}

// Every element of a against b with == (a zero's sign aside: the zero-filled
// way adds +0 to each first gradient, which turns -0 into +0).
void ExpectEqualValues(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_TRUE(a.defined()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const std::vector<float> x = a.ToVector<float>(), y = b.ToVector<float>();
  int differing = 0;
  for (size_t i = 0; i < x.size(); ++i) differing += x[i] == y[i] ? 0 : 1;
  EXPECT_EQ(differing, 0) << what << ": " << differing << " of " << x.size() << " elements";
}

TEST(GradientAccumulationTest, UndefinedStartsGiveTheZeroFilledUpdatesWithoutFillsOrAdds) {
  config::ModelConfig config;
  config.set_max_positions(64);
  testing::SetTinyModelShape(config);
  std::unique_ptr<Transformer> lazy = *Transformer::Create(
      config, VocabularySpec{kVocab, kPad, kBos, kEos}, Device::Cpu(), 7);
  std::unique_ptr<Transformer> filled_model = *Transformer::Create(
      config, VocabularySpec{kVocab, kPad, kBos, kEos}, Device::Cpu(), 7);
  ASSERT_TRUE(lazy->AccumulatesThroughAccumulateGrad());
  ZeroFilledGradients filled(filled_model.get());
  ASSERT_FALSE(filled.AccumulatesThroughAccumulateGrad());
  TrainingRun lazy_run = MakeRun(lazy.get()), filled_run = MakeRun(&filled);
  const std::vector<Parameter*> lazy_parameters = lazy->Parameters();
  const std::vector<Parameter*> filled_parameters = filled.Parameters();
  const int64_t parameters = static_cast<int64_t>(lazy_parameters.size());

  for (int64_t update = 1; update <= 3; ++update) {
    int64_t fills[2], adds[2];
    TrainingRun* runs[2] = {&lazy_run, &filled_run};
    for (int side = 0; side < 2; ++side) {
      SetOpProfiling(true);
      ResetOpProfile();
      absl::StatusOr<Trainer::Gradients> gradients =
          runs[side]->trainer->ComputeGradients(UpdateBatches(update), 2 * update, update);
      ASSERT_TRUE(gradients.ok()) << gradients.status();
      fills[side] = OpProfileCalls("fill");
      adds[side] = OpProfileCalls("add");
      SetOpProfiling(false);
      EXPECT_TRUE(std::isfinite(gradients->gnorm));
    }
    // Per batch and parameter the zero-filled way fills zeros and adds the
    // first gradient to them; the undefined start does neither.
    EXPECT_EQ(fills[1] - fills[0], 2 * parameters) << "update " << update;
    EXPECT_EQ(adds[1] - adds[0], 2 * parameters) << "update " << update;
    // Left: each batch's seed for the loss's gradient. Every parameter is
    // reached, so none is filled after the passes either.
    EXPECT_EQ(fills[0], 2) << "update " << update;
    for (int64_t k = 0; k < parameters; ++k) {
      ExpectEqualValues(lazy_parameters[k]->grad, filled_parameters[k]->grad,
                        "gradient of " + lazy_parameters[k]->name);
    }
    ASSERT_TRUE(lazy_run.trainer->ApplyUpdate(update).ok());
    ASSERT_TRUE(filled_run.trainer->ApplyUpdate(update).ok());
  }
  for (int64_t k = 0; k < parameters; ++k) {
    ExpectEqualValues(lazy_parameters[k]->value, filled_parameters[k]->value,
                      "weight " + lazy_parameters[k]->name);
  }
  const auto lazy_state = lazy_run.optimizer->State();
  const auto filled_state = filled_run.optimizer->State();
  ASSERT_EQ(lazy_state.size(), filled_state.size());
  for (size_t i = 0; i < lazy_state.size(); ++i) {
    ExpectEqualValues(lazy_state[i].second, filled_state[i].second, lazy_state[i].first);
  }
}

// Two parameters; the passes reach only the first, through AccumulateGrad,
// with the gradient (batch size) at every element.
class HalfReachedModel final : public TrainableModel {
 public:
  HalfReachedModel() {
    for (Parameter* p : {&reached_, &unreached_}) {
      p->value = *Tensor::Zeros({3}, DType::kF32);
      p->grad = *Tensor::Zeros({3}, DType::kF32);
    }
    reached_.name = "reached";
    unreached_.name = "unreached";
  }
  std::vector<Parameter*> Parameters() override { return {&reached_, &unreached_}; }
  absl::StatusOr<LossStats> ForwardBackward(const Batch& batch, const StepContext&) override {
    TFM_ASSIGN_OR_RETURN(Tensor gradient, Tensor::Zeros({3}, DType::kF32));
    for (float& g : gradient.span<float>()) g = static_cast<float>(batch.size);
    TFM_RETURN_IF_ERROR(AccumulateGrad(reached_, gradient));
    return LossStats{1.0, 1.0, 1, batch.target_tokens()};
  }
  absl::StatusOr<LossStats> Evaluate(const Batch& batch) override {
    return LossStats{1.0, 1.0, 1, batch.target_tokens()};
  }
  bool AccumulatesThroughAccumulateGrad() const override { return true; }

 private:
  Parameter reached_, unreached_;
};

TEST(GradientAccumulationTest, AParameterNoPassReachesHasAZeroGradient) {
  HalfReachedModel model;
  TrainingRun run = MakeRun(&model);
  // Stale gradients from an earlier update must not survive into this one.
  for (Parameter* p : model.Parameters()) {
    for (float& g : p->grad.span<float>()) g = 7.0f;
  }
  absl::StatusOr<Trainer::Gradients> gradients =
      run.trainer->ComputeGradients({ToyBatch(4, 0), ToyBatch(2, 1)}, 0, 1);
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  const std::vector<Parameter*> parameters = model.Parameters();
  ASSERT_TRUE(parameters[1]->grad.defined());
  EXPECT_EQ(parameters[0]->grad.ToVector<float>(), (std::vector<float>{6, 6, 6}));
  EXPECT_EQ(parameters[1]->grad.ToVector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_DOUBLE_EQ(gradients->gnorm, std::sqrt(3 * 36.0));
}

}  // namespace
}  // namespace tfm

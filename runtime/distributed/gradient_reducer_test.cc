#include "runtime/distributed/gradient_reducer.h"

#include <condition_variable>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/distributed/local_communicator.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

// Two ranks whose gradients are equal: the sum doubles every value. Records
// what it reduced so that a test can wait for buckets reduced mid-backward.
class DoublingCommunicator : public LocalCommunicator {
 public:
  int size() const override { return 2; }
  absl::Status AllReduceSum(Tensor& tensor, absl::string_view what) override {
    for (float& v : tensor.span<float>()) v *= 2;
    std::lock_guard<std::mutex> lock(mutex);
    reduced.emplace_back(what);
    changed.notify_all();
    return absl::OkStatus();
  }
  // Waits up to 10 s for `count` reductions in all.
  bool WaitFor(size_t count) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10),
                            [&] { return reduced.size() >= count; });
  }

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> reduced;
};

// Four parameters of 100 floats (400 bytes each).
struct Model {
  Model() {
    for (int i = 0; i < 4; ++i) {
      parameters[i].name = absl::StrCat("p", i);
      parameters[i].value = *Tensor::Zeros({100}, DType::kF32);
      parameters[i].grad = *Tensor::Zeros({100}, DType::kF32);
    }
  }
  std::vector<Parameter*> All() { return {&parameters[0], &parameters[1], &parameters[2], &parameters[3]}; }
  // What AccumulateGrad does: add, then call the hook.
  void Accumulate(int i, float value) {
    for (float& g : parameters[i].grad.span<float>()) g += value;
    if (parameters[i].on_grad_accumulated) parameters[i].on_grad_accumulated();
  }
  // A backward pass: parameters finish last to first, p0 twice (a shared table).
  void Backward(float value) {
    for (int i = 3; i >= 0; --i) Accumulate(i, value * (i + 1));
    Accumulate(0, value);
  }
  Parameter parameters[4];
};

TEST(PlanBucketsTest, FillsFromTheLastParameterBackwards) {
  const std::vector<std::vector<int>> plan = PlanBuckets({400, 400, 1000, 400, 400}, 800);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0], (std::vector<int>{4, 3}));
  EXPECT_EQ(plan[1], (std::vector<int>{2}));  // Larger than a bucket: alone.
  EXPECT_EQ(plan[2], (std::vector<int>{1, 0}));
}

TEST(GradientReducerTest, SumsEveryGradientAndReducesFinishedBucketsDuringBackward) {
  Model model;
  DoublingCommunicator communicator;
  auto reducer = GradientReducer::Create(&communicator, model.All(), /*bucket_bytes=*/800);
  ASSERT_TRUE(reducer.ok()) << reducer.status();
  ASSERT_EQ((*reducer)->num_buckets(), 2);

  // Update 1, two passes: the first teaches the reducer how often each
  // gradient is accumulated.
  for (int update = 1; update <= 3; ++update) {
    for (Parameter* p : model.All()) std::fill(p->grad.span<float>().begin(), p->grad.span<float>().end(), 0.f);
    (*reducer)->BeginBackward(update, /*last=*/false);
    model.Backward(1);
    (*reducer)->BeginBackward(update, /*last=*/true);
    model.Backward(1);
    if (update > 1) {
      // Both buckets are reduced before Finish: during backward.
      EXPECT_TRUE(communicator.WaitFor(2 * update)) << communicator.reduced.size();
    }
    ASSERT_TRUE((*reducer)->Finish().ok());
    // Two passes of value (i + 1), plus p0's second accumulation, doubled.
    for (int i = 0; i < 4; ++i) {
      const float expected = 2 * (2 * (i + 1) + (i == 0 ? 2 : 0));
      EXPECT_EQ(model.parameters[i].grad.span<float>()[7], expected) << "p" << i;
    }
  }
  ASSERT_EQ(communicator.reduced.size(), 6u);
  EXPECT_EQ(communicator.reduced[4], "all-reduce of gradient bucket 1 of 2 (update 3)");
  EXPECT_EQ(communicator.reduced[5], "all-reduce of gradient bucket 2 of 2 (update 3)");
}

TEST(GradientReducerTest, AGradientChangedAfterItsBucketWasSummedIsAnError) {
  Model model;
  DoublingCommunicator communicator;
  auto reducer = GradientReducer::Create(&communicator, model.All(), /*bucket_bytes=*/800);
  ASSERT_TRUE(reducer.ok()) << reducer.status();
  (*reducer)->BeginBackward(1, /*last=*/true);
  model.Backward(1);
  ASSERT_TRUE((*reducer)->Finish().ok());
  (*reducer)->BeginBackward(2, /*last=*/true);
  model.Backward(1);
  ASSERT_TRUE(communicator.WaitFor(4));
  model.Accumulate(3, 1);  // Its bucket was reduced already.
  const absl::Status status = (*reducer)->Finish();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("p3's gradient was accumulated again"), std::string::npos)
      << status;
}

TEST(GradientReducerTest, RejectsGradientsItCannotSum) {
  Model model;
  model.parameters[2].grad = *Tensor::Zeros({100}, DType::kI32);
  LocalCommunicator communicator;
  const auto reducer = GradientReducer::Create(&communicator, model.All());
  EXPECT_EQ(reducer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reducer.status().message().find("p2's gradient is i32"), std::string::npos)
      << reducer.status();
}

}  // namespace
}  // namespace tfm

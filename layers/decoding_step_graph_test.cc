// The step graph runner's choices, on a CPU through a stand-in backend whose
// captures run the step and whose launches are counted: a step runs
// eagerly until its layout settles, is captured once it has, is replayed
// while its fingerprint holds (returning the captured outputs without
// running the step), goes back to eager steps when the layout changes, and
// a failed capture turns graphs off. A new capture retires the graph of
// another state (whose temporaries it may reuse).
#include "layers/decoding_step_graph.h"

#include <map>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace tfm {
namespace {

struct FakeCalls {
  int streams = 0, captures_begun = 0, graphs = 0, destroyed_graphs = 0;
  bool fail_next_capture = false;
  bool capturing = false;
  std::map<void*, int> launches;
  int64_t releases = 0;  // The allocator's cache releases (MemoryReleases).
};

class FakeBackend final : public StepGraphBackend {
 public:
  explicit FakeBackend(FakeCalls* calls) : calls_(calls) {}
  absl::StatusOr<void*> CreateStream() override {
    ++calls_->streams;
    return reinterpret_cast<void*>(0x5);
  }
  void DestroyStream(void*) override {}
  absl::Status BeginCapture(void*) override {
    ++calls_->captures_begun;
    calls_->capturing = true;
    return absl::OkStatus();
  }
  absl::StatusOr<void*> EndCapture(void*, bool failed) override {
    calls_->capturing = false;
    if (failed || calls_->fail_next_capture) {
      calls_->fail_next_capture = false;
      return absl::InternalError("the capture broke");
    }
    return reinterpret_cast<void*>(static_cast<intptr_t>(0x100 + ++calls_->graphs));
  }
  absl::Status Launch(void* graph, void*) override {
    ++calls_->launches[graph];
    return absl::OkStatus();
  }
  void DestroyGraph(void*) override { ++calls_->destroyed_graphs; }
  int64_t MemoryReleases() override { return calls_->releases; }

 private:
  FakeCalls* calls_;
};

// A step that counts its runs and returns the count.
struct CountingStep {
  int runs = 0;
  StepGraphRunner::Step Get() {
    return [this]() -> absl::StatusOr<std::vector<Tensor>> {
      ++runs;
      return std::vector<Tensor>{*Tensor::FromVector<int32_t>({runs}, {1})};
    };
  }
};

int Value(const absl::StatusOr<std::vector<Tensor>>& out) {
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0].data<int32_t>()[0] : -1;
}

// A runner over the stand-in backend, its calls, and a counting step.
class StepGraphRunnerTest : public ::testing::Test {
 protected:
  FakeCalls calls;
  StepGraphRunner runner{std::make_unique<FakeBackend>(&calls)};
  CountingStep step;
};

TEST_F(StepGraphRunnerTest, CapturesOnceSettledReplaysWhileTheLayoutHolds) {
  StepGraphSlot slot;
  const std::vector<int64_t> a = {1}, b = {2}, c = {3};
  EXPECT_EQ(Value(runner.Run(slot, a, step.Get())), 1);  // Eager: first step.
  EXPECT_EQ(Value(runner.Run(slot, b, step.Get())), 2);  // Eager: the layout moved.
  EXPECT_EQ(Value(runner.Run(slot, b, step.Get())), 3);  // Captured (ran inside), launched.
  EXPECT_EQ(Value(runner.Run(slot, b, step.Get())), 3);  // Replayed: not run again.
  EXPECT_EQ(step.runs, 3);
  EXPECT_EQ(Value(runner.Run(slot, c, step.Get())), 4);  // Layout changed: eager.
  EXPECT_EQ(calls.destroyed_graphs, 1);
  EXPECT_EQ(Value(runner.Run(slot, c, step.Get())), 5);  // Captured.
  EXPECT_EQ(Value(runner.Run(slot, c, step.Get())), 5);  // Replayed twice.
  EXPECT_EQ(Value(runner.Run(slot, c, step.Get())), 5);
  const StepGraphStats stats = runner.stats();
  EXPECT_EQ(stats.captures, 2);
  EXPECT_EQ(stats.replays, 3);
  EXPECT_EQ(stats.eager_steps, 3);
  EXPECT_FALSE(stats.broken);
  EXPECT_EQ(calls.streams, 1);  // One stream for every capture.
  int launches = 0;
  for (const auto& [graph, count] : calls.launches) launches += count;
  EXPECT_EQ(launches, 5);  // Each capture's first run, and the replays.
}

TEST_F(StepGraphRunnerTest, AFailedCaptureTurnsGraphsOff) {
  StepGraphSlot slot;
  const std::vector<int64_t> a = {1};
  calls.fail_next_capture = true;
  EXPECT_EQ(Value(runner.Run(slot, a, step.Get())), 1);
  // The capture ran the step (2) and failed; the step ran again, eagerly (3).
  EXPECT_EQ(Value(runner.Run(slot, a, step.Get())), 3);
  for (int i = 0; i < 3; ++i) runner.Run(slot, a, step.Get()).IgnoreError();
  EXPECT_EQ(step.runs, 6);
  EXPECT_EQ(calls.captures_begun, 1);
  EXPECT_TRUE(runner.stats().broken);
  EXPECT_EQ(runner.stats().replays, 0);
}

TEST_F(StepGraphRunnerTest, ANewCaptureRetiresAnotherStatesGraph) {
  StepGraphSlot first, second;
  const std::vector<int64_t> a = {1}, b = {2};
  runner.Run(first, a, step.Get()).IgnoreError();
  runner.Run(first, a, step.Get()).IgnoreError();  // first's graph.
  runner.Run(second, b, step.Get()).IgnoreError();
  runner.Run(second, b, step.Get()).IgnoreError();  // second's: first's retires.
  const int before = step.runs;
  // first's layout has not changed, but its graph is retired: captured again.
  runner.Run(first, a, step.Get()).IgnoreError();
  EXPECT_EQ(step.runs, before + 1);
  EXPECT_EQ(runner.stats().captures, 3);
  EXPECT_EQ(runner.stats().replays, 0);
}

// The allocator gave its cached blocks back (the device ran full) after a
// capture: the graph's temporaries may belong to other tensors now, so it
// is dropped and the step captured anew. During a capture: that capture is
// not launched, its step runs eagerly, and the next one captures.
TEST_F(StepGraphRunnerTest, ADeviceThatRanFullDropsItsGraphs) {
  StepGraphSlot slot;
  const std::vector<int64_t> a = {1};
  EXPECT_EQ(Value(runner.Run(slot, a, step.Get())), 1);  // Eager.
  EXPECT_EQ(Value(runner.Run(slot, a, step.Get())), 2);  // Captured.
  EXPECT_EQ(Value(runner.Run(slot, a, step.Get())), 2);  // Replayed.
  calls.releases = 1;
  EXPECT_EQ(Value(runner.Run(slot, a, step.Get())), 3);  // Captured anew, not replayed.
  EXPECT_EQ(calls.destroyed_graphs, 1);
  EXPECT_EQ(Value(runner.Run(slot, a, step.Get())), 3);  // The new graph replays.
  EXPECT_EQ(runner.stats().captures, 2);

  // A release while the step is being captured.
  CountingStep releasing;
  const StepGraphRunner::Step releasing_step = [&]() {
    ++calls.releases;
    return releasing.Get()();
  };
  StepGraphSlot other;
  const std::vector<int64_t> b = {2};
  runner.Run(other, b, releasing.Get()).IgnoreError();  // Eager: first step.
  const int launches_before = calls.launches.size();
  // Captured (run 2), not launched; run eagerly (run 3).
  EXPECT_EQ(Value(runner.Run(other, b, releasing_step)), 3);
  EXPECT_EQ(static_cast<int>(calls.launches.size()), launches_before);
  EXPECT_EQ(runner.stats().captures, 2);
  // Settled and nothing released since: captured (run 4) and launched.
  EXPECT_EQ(Value(runner.Run(other, b, releasing.Get())), 4);
  EXPECT_EQ(Value(runner.Run(other, b, releasing.Get())), 4);  // Replayed.
  EXPECT_EQ(runner.stats().captures, 3);
}

// The device ran full during a capture (the allocator gives nothing back
// then): that step runs eagerly, where it may, and the next settled step
// captures anew; graphs go off only after 3 such captures in a row.
TEST_F(StepGraphRunnerTest, ACaptureOutOfMemoryRetriesAtTheNextStep) {
  int out_of_memory_captures = 1;
  const StepGraphRunner::Step step_short_of_memory = [&]() -> absl::StatusOr<std::vector<Tensor>> {
    if (calls.capturing && out_of_memory_captures > 0) {
      --out_of_memory_captures;
      return absl::ResourceExhaustedError("out of memory on cuda:0");
    }
    return step.Get()();
  };
  StepGraphSlot slot;
  const std::vector<int64_t> a = {1};
  EXPECT_EQ(Value(runner.Run(slot, a, step_short_of_memory)), 1);  // Eager: first step.
  EXPECT_EQ(Value(runner.Run(slot, a, step_short_of_memory)), 2);  // Capture failed: eager.
  EXPECT_FALSE(runner.stats().broken);
  EXPECT_EQ(runner.stats().captures, 0);
  EXPECT_EQ(Value(runner.Run(slot, a, step_short_of_memory)), 3);  // Captured anew.
  EXPECT_EQ(Value(runner.Run(slot, a, step_short_of_memory)), 3);  // Replayed.
  EXPECT_EQ(runner.stats().captures, 1);

  // Three in a row: graphs off.
  out_of_memory_captures = 3;
  StepGraphSlot other;
  const std::vector<int64_t> b = {2};
  EXPECT_EQ(Value(runner.Run(other, b, step_short_of_memory)), 4);  // Eager: first step.
  for (int run = 5; run <= 7; ++run) {
    EXPECT_EQ(Value(runner.Run(other, b, step_short_of_memory)), run);  // Each capture failed.
  }
  EXPECT_TRUE(runner.stats().broken);
  EXPECT_EQ(Value(runner.Run(other, b, step_short_of_memory)), 8);  // Eager from now on.
  EXPECT_EQ(runner.stats().captures, 1);
}

TEST_F(StepGraphRunnerTest, WithoutAGpuEveryStepRunsEagerly) {
  StepGraphRunner cpu_runner(Device::Cpu());
  StepGraphSlot slot;
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(Value(cpu_runner.Run(slot, {7}, step.Get())), i);
  EXPECT_EQ(cpu_runner.stats().eager_steps, 4);
  EXPECT_EQ(cpu_runner.stats().captures + cpu_runner.stats().replays, 0);
}

}  // namespace
}  // namespace tfm

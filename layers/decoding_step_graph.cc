#include "layers/decoding_step_graph.h"

#include <iostream>
#include <utility>

#include "core/cuda/runtime.h"
#include "core/current_stream.h"

namespace tfm {

class CapturedStep {
 public:
  CapturedStep(void* exec, std::vector<int64_t> fingerprint, std::vector<Tensor> outputs)
      : exec_(exec), fingerprint_(std::move(fingerprint)), outputs_(std::move(outputs)) {}
  ~CapturedStep() { cuda::DestroyGraph(exec_); }
  CapturedStep(const CapturedStep&) = delete;
  CapturedStep& operator=(const CapturedStep&) = delete;

  void* exec() const { return exec_; }
  const std::vector<int64_t>& fingerprint() const { return fingerprint_; }
  const std::vector<Tensor>& outputs() const { return outputs_; }
  bool retired = false;  // Guarded by the runner's mutex.

 private:
  void* exec_;
  std::vector<int64_t> fingerprint_;
  std::vector<Tensor> outputs_;
};

StepGraphRunner::StepGraphRunner(Device device) : device_(device) {}

StepGraphRunner::~StepGraphRunner() {
  const absl::MutexLock lock(&mu_);
  cuda::DestroyStream(device_.index, stream_);
}

StepGraphStats StepGraphRunner::stats() const {
  const absl::MutexLock lock(&mu_);
  return stats_;
}

absl::StatusOr<std::vector<Tensor>> StepGraphRunner::Run(StepGraphSlot& slot,
                                                         const std::vector<int64_t>& fingerprint,
                                                         const Step& step) {
  if (!device_.is_cuda()) {
    // Not under the lock: the CPU may search batches side by side.
    {
      const absl::MutexLock lock(&mu_);
      ++stats_.eager_steps;
    }
    return step();
  }
  const absl::MutexLock lock(&mu_);
  if (stats_.broken) {
    ++stats_.eager_steps;
    return step();
  }
  if (slot.graph != nullptr && (slot.graph->retired || slot.graph->fingerprint() != fingerprint)) {
    slot.graph.reset();
  }
  if (slot.graph != nullptr) {
    const absl::Status launched = cuda::LaunchGraph(slot.graph->exec(), stream_);
    if (!launched.ok()) return launched;
    ++stats_.replays;
    return slot.graph->outputs();
  }
  const bool settled = fingerprint == slot.previous_fingerprint;
  slot.previous_fingerprint = fingerprint;
  if (settled) return Capture(slot, fingerprint, step);
  ++stats_.eager_steps;
  return step();
}

absl::StatusOr<std::vector<Tensor>> StepGraphRunner::Capture(
    StepGraphSlot& slot, const std::vector<int64_t>& fingerprint, const Step& step) {
  if (stream_ == nullptr) {
    absl::StatusOr<void*> stream = cuda::CreateStream(device_.index);
    if (!stream.ok()) return stream.status();
    stream_ = *stream;
  }
  // The last graph's temporaries may become this one's.
  if (std::shared_ptr<CapturedStep> live = live_.lock()) live->retired = true;
  absl::StatusOr<std::vector<Tensor>> outputs;
  absl::StatusOr<void*> exec;
  {
    const ScopedStream on_stream(stream_);
    const absl::Status began = cuda::BeginCapture(stream_);
    if (!began.ok()) return began;
    outputs = step();
    exec = cuda::EndCapture(stream_, /*failed=*/!outputs.ok());
  }
  if (!exec.ok()) {
    stats_.broken = true;
    std::cerr << "CUDA graphs off: a decoding step could not be captured ("
              << (outputs.ok() ? exec.status() : outputs.status()).message()
              << "); steps run eagerly\n";
    ++stats_.eager_steps;
    return step();
  }
  auto captured = std::make_shared<CapturedStep>(*exec, fingerprint, *outputs);
  live_ = captured;
  slot.graph = captured;
  ++stats_.captures;
  // Capturing ran nothing: the graph's first launch runs this step.
  const absl::Status launched = cuda::LaunchGraph(captured->exec(), stream_);
  if (!launched.ok()) return launched;
  return captured->outputs();
}

}  // namespace tfm

#include "layers/decoding_step_graph.h"

#include <iostream>
#include <map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/allocator.h"
#include "core/cuda/runtime.h"
#include "core/current_stream.h"

namespace tfm {

namespace {

// Capture streams of runners that have gone, by device, for the next
// runner. A stream's cuBLASLt workspace (32 MiB) and its cached blocks are
// kept under its handle (core/cuda/cublaslt.h, the caching allocator's
// per-stream pools): a destroyed stream would strand them. A runner's stream
// is its own while it lives; a graph it left behind never replays on the
// stream again (only its runner launches it).
class CaptureStreams {
 public:
  absl::StatusOr<void*> Take(int device) {
    {
      const absl::MutexLock lock(&mu_);
      std::vector<void*>& free = free_[device];
      if (!free.empty()) {
        void* stream = free.back();
        free.pop_back();
        return stream;
      }
    }
    return cuda::CreateStream(device);
  }
  void GiveBack(int device, void* stream) {
    const absl::MutexLock lock(&mu_);
    free_[device].push_back(stream);
  }

 private:
  absl::Mutex mu_;
  std::map<int, std::vector<void*>> free_ ABSL_GUARDED_BY(mu_);
};

CaptureStreams& AllCaptureStreams() {
  static CaptureStreams* const streams = new CaptureStreams;
  return *streams;
}

// The CUDA runtime's graph calls on one device.
class CudaGraphBackend final : public StepGraphBackend {
 public:
  explicit CudaGraphBackend(int device) : device_(device) {}
  absl::StatusOr<void*> CreateStream() override { return AllCaptureStreams().Take(device_); }
  void DestroyStream(void* stream) override { AllCaptureStreams().GiveBack(device_, stream); }
  absl::Status BeginCapture(void* stream) override { return cuda::BeginCapture(stream); }
  absl::StatusOr<void*> EndCapture(void* stream, bool failed) override {
    return cuda::EndCapture(stream, failed);
  }
  absl::Status Launch(void* graph, void* stream) override {
    return cuda::LaunchGraph(graph, stream);
  }
  void DestroyGraph(void* graph) override { cuda::DestroyGraph(graph); }
  int64_t MemoryReleases() override {
    absl::StatusOr<Allocator*> allocator = AllocatorFor(Device::Cuda(device_));
    return allocator.ok() ? (*allocator)->stats().num_cache_releases : 0;
  }

 private:
  int device_;
};

}  // namespace

class CapturedStep {
 public:
  CapturedStep(std::shared_ptr<StepGraphBackend> backend, void* exec,
               std::vector<int64_t> fingerprint, std::vector<Tensor> outputs,
               int64_t memory_releases)
      : backend_(std::move(backend)),
        exec_(exec),
        fingerprint_(std::move(fingerprint)),
        outputs_(std::move(outputs)),
        memory_releases_(memory_releases) {}
  ~CapturedStep() { backend_->DestroyGraph(exec_); }
  CapturedStep(const CapturedStep&) = delete;
  CapturedStep& operator=(const CapturedStep&) = delete;

  void* exec() const { return exec_; }
  const std::vector<int64_t>& fingerprint() const { return fingerprint_; }
  const std::vector<Tensor>& outputs() const { return outputs_; }
  // The allocator's releases counted before the capture began.
  int64_t memory_releases() const { return memory_releases_; }
  bool retired = false;  // Guarded by the runner's mutex.

 private:
  // The runner's, shared: a state may keep its graph past the runner.
  std::shared_ptr<StepGraphBackend> backend_;
  void* exec_;
  std::vector<int64_t> fingerprint_;
  std::vector<Tensor> outputs_;
  int64_t memory_releases_;
};

StepGraphRunner::StepGraphRunner(Device device)
    : backend_(device.is_cuda() ? std::make_shared<CudaGraphBackend>(device.index) : nullptr) {}

StepGraphRunner::StepGraphRunner(std::unique_ptr<StepGraphBackend> backend)
    : backend_(std::move(backend)) {}

StepGraphRunner::~StepGraphRunner() {
  const absl::MutexLock lock(&mu_);
  if (backend_ != nullptr && stream_ != nullptr) backend_->DestroyStream(stream_);
}

StepGraphStats StepGraphRunner::stats() const {
  const absl::MutexLock lock(&mu_);
  return stats_;
}

absl::StatusOr<std::vector<Tensor>> StepGraphRunner::Run(StepGraphSlot& slot,
                                                         const std::vector<int64_t>& fingerprint,
                                                         const Step& step) {
  if (backend_ == nullptr) {
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
  if (slot.graph != nullptr &&
      (slot.graph->retired || slot.graph->fingerprint() != fingerprint ||
       slot.graph->memory_releases() != backend_->MemoryReleases())) {
    slot.graph.reset();
  }
  if (slot.graph != nullptr) {
    const absl::Status launched = backend_->Launch(slot.graph->exec(), stream_);
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
    absl::StatusOr<void*> stream = backend_->CreateStream();
    if (!stream.ok()) return stream.status();
    stream_ = *stream;
  }
  // The last graph's temporaries may become this one's.
  if (std::shared_ptr<CapturedStep> live = live_.lock()) live->retired = true;
  absl::StatusOr<std::vector<Tensor>> outputs;
  absl::StatusOr<void*> exec;
  const int64_t releases = backend_->MemoryReleases();
  {
    const ScopedStream on_stream(stream_);
    const absl::Status began = backend_->BeginCapture(stream_);
    if (!began.ok()) return began;
    outputs = step();
    exec = backend_->EndCapture(stream_, /*failed=*/!outputs.ok());
  }
  if (!exec.ok() && !outputs.ok() && absl::IsResourceExhausted(outputs.status()) &&
      ++out_of_memory_captures_ < kOutOfMemoryCaptureTries) {
    // The device ran full during the capture, where the allocator gives no
    // cached block back (core/caching_allocator.h): this step runs eagerly,
    // which may give them back, and the next settled step captures anew.
    ++stats_.eager_steps;
    return step();
  }
  if (!exec.ok()) {
    stats_.broken = true;
    std::cerr << "CUDA graphs off: a decoding step could not be captured ("
              << (outputs.ok() ? exec.status() : outputs.status()).message()
              << "); steps run eagerly\n";
    ++stats_.eager_steps;
    return step();
  }
  auto captured =
      std::make_shared<CapturedStep>(backend_, *exec, fingerprint, *outputs, releases);
  if (releases != backend_->MemoryReleases()) {
    // The device ran full during the capture: blocks the graph used may have
    // gone back to CUDA. This step runs eagerly; the next one captures anew.
    ++stats_.eager_steps;
    return step();
  }
  live_ = captured;
  slot.graph = captured;
  ++stats_.captures;
  out_of_memory_captures_ = 0;
  // Capturing ran nothing: the graph's first launch runs this step.
  const absl::Status launched = backend_->Launch(captured->exec(), stream_);
  if (!launched.ok()) return launched;
  return captured->outputs();
}

}  // namespace tfm

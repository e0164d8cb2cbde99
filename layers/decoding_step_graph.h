// CUDA graphs of decoding steps (decode.cuda_graphs): a step's hundred-odd
// kernels captured once and replayed with one launch while the decoding
// state's layout holds, so that a step at batch 1, whose kernels are too
// small to hide their launches, stops paying for them.
//
// What makes a replay right: the step reads and writes the same device
// addresses at every position. The caller's step reads its position, key
// lengths and tokens from buffers that keep their addresses
// (DecodingCache::set_device_position), and says by a fingerprint of every
// address and shape it uses (DecodingCache::LayoutFingerprint) when that
// holds. The step's temporaries are the graph's: captured on the runner's
// own stream (ScopedStream), they come from blocks the caching allocator
// hands only to that stream, on which nothing but captures allocates.
//
// A graph is also dropped when the caching allocator has given its free
// blocks back to CUDA since the capture (the device ran full): its
// temporaries' memory may have gone to other tensors.
//
// When: a step whose fingerprint is its state's previous step's is
// captured (its layout has settled: a first step makes the cache's entries,
// a beam's widening and a cache's growth move them), then replayed while
// the fingerprint stays; any other step runs eagerly, as without graphs.
// A capture that fails (work that a graph cannot hold) turns graphs off for
// the runner, with one line on stderr; the step then runs eagerly. One that
// ran out of device memory (no cached block is given back during a capture)
// runs its step eagerly, which may give them back, and the next settled step
// captures anew; graphs go off after kOutOfMemoryCaptureTries such failures
// in a row. Replays and eager steps run the same ops on the same inputs: the
// same bits.
#ifndef TFM_LAYERS_DECODING_STEP_GRAPH_H_
#define TFM_LAYERS_DECODING_STEP_GRAPH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/device.h"
#include "core/tensor.h"

namespace tfm {

class CapturedStep;

// What one decoding state keeps between its steps.
struct StepGraphSlot {
  std::shared_ptr<CapturedStep> graph;
  std::vector<int64_t> previous_fingerprint;
};

struct StepGraphStats {
  int64_t captures = 0;
  int64_t replays = 0;
  int64_t eager_steps = 0;
  bool broken = false;  // A capture failed: every step runs eagerly.
};

// What the runner asks of CUDA (core/cuda/runtime.h's graph calls); tests
// give a stand-in that runs a capture's step and counts launches, to check
// the runner's choices on a CPU.
class StepGraphBackend {
 public:
  virtual ~StepGraphBackend() = default;
  // The runner's own stream for captures and replays, and its return when
  // the runner goes (CUDA's backend keeps it for the next runner, with the
  // GEMM workspace and cached blocks that belong to it).
  virtual absl::StatusOr<void*> CreateStream() = 0;
  virtual void DestroyStream(void* stream) = 0;
  virtual absl::Status BeginCapture(void* stream) = 0;
  // The instantiated graph, or an error (the capture failed, or `failed`).
  virtual absl::StatusOr<void*> EndCapture(void* stream, bool failed) = 0;
  virtual absl::Status Launch(void* graph, void* stream) = 0;
  virtual void DestroyGraph(void* graph) = 0;
  // How many times the device's allocator has given its cached blocks back
  // (AllocatorStats::num_cache_releases): a graph captured before the last
  // time may write into memory that is no longer its own, so it is dropped.
  virtual int64_t MemoryReleases() { return 0; }
};

// One per model and device.
class StepGraphRunner {
 public:
  // On a CUDA device, graphs through CUDA; elsewhere every step eagerly.
  explicit StepGraphRunner(Device device);
  // Graphs through `backend` whatever the device (tests).
  explicit StepGraphRunner(std::unique_ptr<StepGraphBackend> backend);
  ~StepGraphRunner();
  StepGraphRunner(const StepGraphRunner&) = delete;
  StepGraphRunner& operator=(const StepGraphRunner&) = delete;

  using Step = std::function<absl::StatusOr<std::vector<Tensor>>()>;
  // The outputs of `step` (which queues a step's work and returns its
  // outputs): replayed, captured and launched, or run as it is (see the top
  // of the file). A replay's outputs are the captured step's tensors, whose
  // values the next replay overwrites: read them before the next step.
  absl::StatusOr<std::vector<Tensor>> Run(StepGraphSlot& slot,
                                          const std::vector<int64_t>& fingerprint,
                                          const Step& step);

  StepGraphStats stats() const;

 private:
  absl::StatusOr<std::vector<Tensor>> Capture(StepGraphSlot& slot,
                                              const std::vector<int64_t>& fingerprint,
                                              const Step& step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Null: no graphs (every step runs eagerly, outside the lock). Shared
  // with the captured graphs, which states may keep past the runner.
  const std::shared_ptr<StepGraphBackend> backend_;
  mutable absl::Mutex mu_;
  void* stream_ ABSL_GUARDED_BY(mu_) = nullptr;  // Made at the first capture.
  // The graph last captured: a new capture may reuse its temporaries'
  // blocks, so it never replays again (retired).
  std::weak_ptr<CapturedStep> live_ ABSL_GUARDED_BY(mu_);
  StepGraphStats stats_ ABSL_GUARDED_BY(mu_);
  // Captures in a row that ran out of device memory.
  static constexpr int kOutOfMemoryCaptureTries = 3;
  int out_of_memory_captures_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tfm

#endif  // TFM_LAYERS_DECODING_STEP_GRAPH_H_

// The CUDA runtime as the engine uses it, behind plain C++ declarations so
// that code compiled without CUDA headers can call it. In builds without CUDA
// (runtime_none.cc) there are zero devices and every call says so.
#ifndef TFM_CORE_CUDA_RUNTIME_H_
#define TFM_CORE_CUDA_RUNTIME_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tfm {
namespace cuda {

// True if this binary contains CUDA code (it may still find no GPU).
bool BuiltWithCuda();

// Number of usable GPUs; 0 without CUDA, without a driver or without GPUs.
int DeviceCount();

// "NVIDIA H100 80GB HBM3 (sm_90)"; an error for a bad ordinal.
absl::StatusOr<std::string> DeviceName(int device);

absl::StatusOr<void*> Malloc(int device, size_t bytes);
void Free(int device, void* ptr);

enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };
// Copies `bytes`; a copy to or from the host returns when it is done (the
// host waits for the device), a device-to-device one is queued in the
// default stream's order without a wait.
absl::Status Memcpy(void* dst, const void* src, size_t bytes, CopyKind kind);

// Copies `bytes` from the host to device memory `dst` in the order of the
// device's default stream (after the work queued there, before the work
// queued after it), without waiting for the device: `src` is copied into
// pinned staging memory first, so the caller may reuse it at once. A copy
// from pageable memory (Memcpy) makes the host wait until the device has run
// everything queued, so each token upload of a decoding step, and each
// batch of a training update, drained the GPU's queue. Copies larger than a
// staging slot (kStagingSlotBytes) wait as Memcpy does.
inline constexpr size_t kStagingSlotBytes = size_t{4} << 20;
// Slots in the ring, each pinned when first used (64 MiB when all are).
inline constexpr int kStagingSlots = 16;
absl::Status CopyHostToDeviceInStreamOrder(int device, void* dst, const void* src,
                                           size_t bytes);
// Copies each of `copies` from device memory to the host, with one wait for
// the device's default stream (through pinned memory) instead of one per
// copy: the values and tokens a decoding step ranked, a pass's loss sums.
// Copies larger together than a staging slot go one by one, as Memcpy.
struct DeviceToHostCopy {
  void* dst;        // Host memory.
  const void* src;  // Device memory.
  size_t bytes;
};
absl::Status CopyDeviceToHostTogether(int device, const DeviceToHostCopy* copies, size_t count);

// Staging slots this process holds (pinned, kStagingSlotBytes each), and the
// copies that have waited for a slot's previous copy to finish: what a test
// or a benchmark reports.
struct StagingStats {
  int slots = 0;
  int64_t staged_copies = 0;
  int64_t waits_for_slot = 0;
  // The machine would not pin memory: copies wait as Memcpy does.
  bool pinning_refused = false;
};
StagingStats GetStagingStats();
absl::Status Synchronize(int device);
// Makes `device` the calling thread's current GPU, where the kernels it
// launches run (a new thread starts on GPU 0: a worker thread of rank r's
// process calls this before it launches on GPU r).
absl::Status SetCurrentDevice(int device);
// How many times this process has waited for a device to finish its queue:
// copies that wait (Memcpy, a read of CopyDeviceToHostTogether, an upload
// too large to stage) and Synchronize. A wait for a staging slot is not one
// (it waits only for an earlier copy: StagingStats::waits_for_slot). Tests
// count them: a training update between log lines makes none.
int64_t HostWaits();

// CUDA graphs: a decoding step's kernels captured once and replayed, so
// that the host launches one graph instead of a hundred kernels (at batch 1
// a step is launch-bound). Handles are opaque (cudaStream_t and
// cudaGraphExec_t).
//
// A stream for capture and replay on `device`, blocking: it waits for the
// work queued before on the default stream, and the default stream's later
// work waits for it, so replays fall in line with eager work on either side.
// Kept for the process (layers/decoding_step_graph.cc hands a runner's back
// for the next runner).
absl::StatusOr<void*> CreateStream(int device);
// Starts capturing `stream` in relaxed mode (the caching allocator may still
// cudaMalloc a new block during the capture). The stream is blocking, so
// work another thread queues on the default stream meanwhile (an upload, a
// read, NCCL's wait) would break the capture: GPU searches run one batch at
// a time, and a broken capture only turns graphs off.
absl::Status BeginCapture(void* stream);
// Ends the capture and returns the instantiated graph; an error if the
// capture broke (work that could not be captured: a copy to the host, a
// synchronisation), or if `failed` (the caller's work failed: the capture is
// ended and thrown away, so the stream is usable again).
absl::StatusOr<void*> EndCapture(void* stream, bool failed = false);
// Whether a capture begun by BeginCapture (in any thread, on any device) has
// not yet been ended: the caching allocator gives no cached block back
// meanwhile. Process-wide, and read before a release starts: a release that
// another thread has begun when a capture starts is not stopped, which the
// note above rules out (one GPU search at a time; the data-parallel
// reducer's thread runs only while training).
bool CaptureUnderWay();
absl::Status LaunchGraph(void* graph, void* stream);
void DestroyGraph(void* graph);

// What a benchmark reports about a GPU and derives its peaks from.
struct DeviceInfo {
  std::string name;             // "NVIDIA H100 80GB HBM3"
  int compute_capability = 0;   // 90 for sm_90
  int sm_count = 0;
  int max_sm_clock_mhz = 0;     // The boost clock the device reports.
  int max_memory_clock_mhz = 0;
  int memory_bus_bits = 0;
  size_t memory_bytes = 0;
  int driver_api_version = 0;   // cudaDriverGetVersion: 13000 is CUDA 13.0.
};
absl::StatusOr<DeviceInfo> GetDeviceInfo(int device);

// Versions of the libraries linked: "CUDA runtime 13000, cuBLAS 130000, ...".
// Loads cuBLASLt to ask it (see CublasLtLoaded).
std::string LibraryVersions();

// Whether libcublasLt is loaded in this process. It is not linked: the
// first cuBLASLt call loads it (cublaslt_shim.cc), so a process that runs no
// GPU product never pays its 150 MiB and 0.1-0.2 s start-up.
bool CublasLtLoaded();

}  // namespace cuda
}  // namespace tfm

#endif  // TFM_CORE_CUDA_RUNTIME_H_

// The CUDA implementation of runtime.h (compiled by nvcc; see BUILD).
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "core/cuda/runtime.h"

namespace tfm {
namespace cuda {
namespace {

// A failed call's error travels in the status; it is also cleared from the
// thread's last error (where the runtime leaves a non-sticky one), or the
// next kernel launcher's cudaGetLastError would report it as its own: a
// failed graph instantiation would fail the eager step that replaces it.
absl::Status ToStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return absl::OkStatus();
  cudaGetLastError();
  return absl::InternalError(std::string(what) + ": " + cudaGetErrorString(error));
}

std::atomic<int64_t>& HostWaitCounter() {
  static std::atomic<int64_t> waits{0};
  return waits;
}

void CountHostWait() { HostWaitCounter().fetch_add(1, std::memory_order_relaxed); }

// CopyHostToDeviceInStreamOrder's pinned slots on one device, taken in turn.
// A slot is written again only after the event recorded behind its last copy
// has passed; with several slots that has almost always happened, so the
// host does not wait.
//
// A machine that will not pin memory (cudaHostAlloc fails: a sandbox, a
// locked-memory limit) gets no staging: Copy and Read return false, and the
// caller copies as Memcpy does.
class Staging {
 public:
  // False: no staging here (nothing was copied).
  absl::StatusOr<bool> Copy(void* dst, const void* src, size_t bytes) {
    const std::lock_guard<std::mutex> lock(mu_);
    if (unavailable_) return false;
    Slot& slot = slots_[next_];
    if (slot.host == nullptr) {
      if (!Pin(&slot.host)) return false;
      absl::Status status = ToStatus(cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming),
                                     "cudaEventCreate (staging)");
      if (!status.ok()) {
        cudaFreeHost(slot.host);
        slot.host = nullptr;
        return status;
      }
      ++stats_.slots;
    } else if (slot.pending) {
      const cudaError_t query = cudaEventQuery(slot.done);
      if (query == cudaErrorNotReady) {
        // The runtime keeps "not ready" as the thread's last error: cleared
        // here, or the next launcher's cudaGetLastError reports it as its own.
        cudaGetLastError();
        ++stats_.waits_for_slot;
        absl::Status status = ToStatus(cudaEventSynchronize(slot.done), "cudaEventSynchronize");
        if (!status.ok()) return status;
      } else if (query != cudaSuccess) {
        return ToStatus(query, "cudaEventQuery (staging)");
      }
    }
    next_ = (next_ + 1) % kSlots;
    std::memcpy(slot.host, src, bytes);
    slot.pending = false;
    absl::Status status = ToStatus(
        cudaMemcpyAsync(dst, slot.host, bytes, cudaMemcpyHostToDevice, cudaStreamLegacy),
        "cudaMemcpyAsync");
    if (!status.ok()) return status;
    ++stats_.staged_copies;
    status = ToStatus(cudaEventRecord(slot.done, cudaStreamLegacy), "cudaEventRecord");
    if (!status.ok()) {
      // The copy is queued but nothing marks its end: wait for it here, or
      // a later copy into this slot could overwrite what it has yet to read.
      cudaStreamSynchronize(cudaStreamLegacy);
      cudaGetLastError();
      return status;
    }
    slot.pending = true;
    return true;
  }

  // The reads of CopyDeviceToHostTogether, through a pinned block of their
  // own (a slot's ring is for uploads, whose copies stay queued).
  absl::StatusOr<bool> Read(const DeviceToHostCopy* copies, size_t count) {
    const std::lock_guard<std::mutex> lock(mu_);
    if (unavailable_) return false;
    if (read_buffer_ == nullptr && !Pin(&read_buffer_)) return false;
    char* at = static_cast<char*>(read_buffer_);
    for (size_t i = 0; i < count; ++i) {
      absl::Status status =
          ToStatus(cudaMemcpyAsync(at, copies[i].src, copies[i].bytes, cudaMemcpyDeviceToHost,
                                   cudaStreamLegacy),
                   "cudaMemcpyAsync");
      if (!status.ok()) return status;
      at += copies[i].bytes;
    }
    CountHostWait();
    absl::Status status =
        ToStatus(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize");
    if (!status.ok()) return status;
    at = static_cast<char*>(read_buffer_);
    for (size_t i = 0; i < count; ++i) {
      std::memcpy(copies[i].dst, at, copies[i].bytes);
      at += copies[i].bytes;
    }
    return true;
  }

  StagingStats stats() {
    const std::lock_guard<std::mutex> lock(mu_);
    StagingStats stats = stats_;
    stats.pinning_refused = unavailable_;
    return stats;
  }

 private:
  // A decoding step uploads a few small tensors, a training update about
  // ten (its batch, and the lists of its multi-tensor ops): with
  // kStagingSlots the oldest copy in the ring is an update or more behind,
  // so the host waits only when it runs more than that ahead of the device.
  static constexpr int kSlots = kStagingSlots;
  struct Slot {
    void* host = nullptr;
    cudaEvent_t done = nullptr;
    bool pending = false;  // An event was recorded behind a copy from it.
  };

  // A pinned block of kStagingSlotBytes into *host; false (and no staging
  // from now on) where the machine refuses.
  bool Pin(void** host) {
    if (cudaHostAlloc(host, kStagingSlotBytes, cudaHostAllocDefault) == cudaSuccess) return true;
    cudaGetLastError();  // Not sticky: the device is fine.
    *host = nullptr;
    unavailable_ = true;
    return false;
  }

  std::mutex mu_;
  Slot slots_[kSlots];
  void* read_buffer_ = nullptr;  // kStagingSlotBytes, pinned.
  bool unavailable_ = false;
  int next_ = 0;
  StagingStats stats_;
};

// Makes `device` current: the staged copies follow its own default stream.
absl::Status UseDevice(int device) {
  int current = 0;
  absl::Status status = ToStatus(cudaGetDevice(&current), "cudaGetDevice");
  if (status.ok() && current != device) status = ToStatus(cudaSetDevice(device), "cudaSetDevice");
  return status;
}

constexpr int kMaxStagingDevices = 64;

// Never destroyed: pinned memory freed after the CUDA context has gone at
// exit would fail; the process's end returns it.
Staging* StagingFor(int device) {
  static Staging* const staging = new Staging[kMaxStagingDevices];
  return device >= 0 && device < kMaxStagingDevices ? &staging[device] : nullptr;
}

}  // namespace

bool BuiltWithCuda() { return true; }

int DeviceCount() {
  int count = 0;
  // No driver or no device is not an error here: it just means zero GPUs.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // Clear the sticky error state.
    return 0;
  }
  return count;
}

absl::StatusOr<std::string> DeviceName(int device) {
  cudaDeviceProp properties;
  absl::Status status = ToStatus(cudaGetDeviceProperties(&properties, device),
                                 "cudaGetDeviceProperties");
  if (!status.ok()) return status;
  return std::string(properties.name) + " (sm_" + std::to_string(properties.major) +
         std::to_string(properties.minor) + ")";
}

absl::StatusOr<void*> Malloc(int device, size_t bytes) {
  absl::Status status = ToStatus(cudaSetDevice(device), "cudaSetDevice");
  if (!status.ok()) return status;
  void* ptr = nullptr;
  status = ToStatus(cudaMalloc(&ptr, bytes), "cudaMalloc");
  if (!status.ok()) return status;
  return ptr;
}

void Free(int device, void* ptr) {
  cudaSetDevice(device);
  cudaFree(ptr);
}

absl::Status Memcpy(void* dst, const void* src, size_t bytes, CopyKind kind) {
  // A copy within the device does not wait for it (CUDA's API sync
  // behaviour): only copies to or from the host count.
  if (kind != CopyKind::kDeviceToDevice) CountHostWait();
  const cudaMemcpyKind cuda_kind = kind == CopyKind::kHostToDevice ? cudaMemcpyHostToDevice
                                   : kind == CopyKind::kDeviceToHost
                                       ? cudaMemcpyDeviceToHost
                                       : cudaMemcpyDeviceToDevice;
  return ToStatus(cudaMemcpy(dst, src, bytes, cuda_kind), "cudaMemcpy");
}

namespace {
// The copy through `device`'s staging ring, on the default stream: false
// (nothing copied) when it is larger than a slot or nothing is pinned here.
absl::StatusOr<bool> Stage(int device, void* dst, const void* src, size_t bytes) {
  Staging* staging = StagingFor(device);
  if (bytes > kStagingSlotBytes || staging == nullptr) return false;
  return staging->Copy(dst, src, bytes);
}
}  // namespace

// ops/cuda_multi_tensor.cuh's list uploads (declared there).
const char* UploadHostList(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return nullptr;
  int device = 0;
  if ((stream == nullptr || stream == cudaStreamLegacy) &&
      cudaGetDevice(&device) == cudaSuccess) {
    const absl::StatusOr<bool> staged = Stage(device, dst, src, bytes);
    if (!staged.ok()) {
      // Kept for the caller, who reads it before this thread's next call.
      thread_local std::string error;
      error = std::string(staged.status().message());
      return error.c_str();
    }
    if (*staged) return nullptr;
  }
  // A copy from pageable memory inside a stream capture would become a
  // graph node that reads `src` again at every replay, long after it died.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (stream != nullptr && stream != cudaStreamLegacy) {
    if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) cudaGetLastError();
    if (capture != cudaStreamCaptureStatusNone) {
      return "a multi-tensor op's list upload inside a CUDA graph capture (not supported)";
    }
  }
  const cudaError_t error = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream);
  if (error == cudaSuccess) return nullptr;
  cudaGetLastError();
  return cudaGetErrorString(error);
}

absl::Status CopyHostToDeviceInStreamOrder(int device, void* dst, const void* src,
                                           size_t bytes) {
  absl::Status status = UseDevice(device);
  if (!status.ok()) return status;
  if (bytes == 0) return absl::OkStatus();
  const absl::StatusOr<bool> staged = Stage(device, dst, src, bytes);
  if (!staged.ok() || *staged) return staged.status();
  // Too large for a slot, or no pinned memory here: a copy that waits.
  return Memcpy(dst, src, bytes, CopyKind::kHostToDevice);
}

absl::Status CopyDeviceToHostTogether(int device, const DeviceToHostCopy* copies,
                                      size_t count) {
  absl::Status status = UseDevice(device);
  if (!status.ok()) return status;
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) total += copies[i].bytes;
  if (total == 0) return absl::OkStatus();
  Staging* staging = StagingFor(device);
  if (total <= kStagingSlotBytes && staging != nullptr) {
    absl::StatusOr<bool> read = staging->Read(copies, count);
    if (!read.ok() || *read) return read.status();
  }
  // Too much for the block, or no pinned memory here: one wait per copy.
  for (size_t i = 0; i < count; ++i) {
    status = Memcpy(copies[i].dst, copies[i].src, copies[i].bytes, CopyKind::kDeviceToHost);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

StagingStats GetStagingStats() {
  StagingStats total;
  const int devices = DeviceCount();
  for (int device = 0; device < devices && device < kMaxStagingDevices; ++device) {
    const StagingStats one = StagingFor(device)->stats();
    total.slots += one.slots;
    total.staged_copies += one.staged_copies;
    total.waits_for_slot += one.waits_for_slot;
    total.pinning_refused |= one.pinning_refused;
  }
  return total;
}

int64_t HostWaits() { return HostWaitCounter().load(std::memory_order_relaxed); }

absl::Status Synchronize(int device) {
  CountHostWait();
  absl::Status status = ToStatus(cudaSetDevice(device), "cudaSetDevice");
  if (!status.ok()) return status;
  return ToStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

absl::Status SetCurrentDevice(int device) { return UseDevice(device); }

absl::StatusOr<void*> CreateStream(int device) {
  absl::Status status = ToStatus(cudaSetDevice(device), "cudaSetDevice");
  if (!status.ok()) return status;
  cudaStream_t stream = nullptr;
  status = ToStatus(cudaStreamCreateWithFlags(&stream, cudaStreamDefault), "cudaStreamCreate");
  if (!status.ok()) return status;
  return static_cast<void*>(stream);
}

namespace {
// Captures begun and not yet ended, in all threads (CaptureUnderWay).
std::atomic<int>& CapturesUnderWay() {
  static std::atomic<int> captures{0};
  return captures;
}
}  // namespace

absl::Status BeginCapture(void* stream) {
  absl::Status status = ToStatus(
      cudaStreamBeginCapture(static_cast<cudaStream_t>(stream), cudaStreamCaptureModeRelaxed),
      "cudaStreamBeginCapture");
  if (status.ok()) CapturesUnderWay().fetch_add(1);
  return status;
}

bool CaptureUnderWay() { return CapturesUnderWay().load() > 0; }

absl::StatusOr<void*> EndCapture(void* stream, bool failed) {
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &graph);
  CapturesUnderWay().fetch_sub(1);
  if (ended != cudaSuccess || failed || graph == nullptr) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();  // A broken capture leaves its error behind.
    if (failed) return absl::AbortedError("the captured work failed");
    return ToStatus(ended != cudaSuccess ? ended : cudaErrorStreamCaptureInvalidated,
                    "cudaStreamEndCapture");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (instantiated != cudaSuccess) return ToStatus(instantiated, "cudaGraphInstantiate");
  return static_cast<void*>(exec);
}

absl::Status LaunchGraph(void* graph, void* stream) {
  return ToStatus(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph),
                                  static_cast<cudaStream_t>(stream)),
                  "cudaGraphLaunch");
}

void DestroyGraph(void* graph) {
  if (graph != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
}

absl::StatusOr<DeviceInfo> GetDeviceInfo(int device) {
  cudaDeviceProp properties;
  absl::Status status = ToStatus(cudaGetDeviceProperties(&properties, device),
                                 "cudaGetDeviceProperties");
  if (!status.ok()) return status;
  DeviceInfo info;
  info.name = properties.name;
  info.compute_capability = 10 * properties.major + properties.minor;
  info.memory_bytes = properties.totalGlobalMem;
  // Clocks through attributes: CUDA 13 dropped them from cudaDeviceProp.
  const std::pair<cudaDeviceAttr, int*> attributes[] = {
      {cudaDevAttrMultiProcessorCount, &info.sm_count},
      {cudaDevAttrClockRate, &info.max_sm_clock_mhz},
      {cudaDevAttrMemoryClockRate, &info.max_memory_clock_mhz},
      {cudaDevAttrGlobalMemoryBusWidth, &info.memory_bus_bits}};
  for (const auto& [attribute, value] : attributes) {
    status = ToStatus(cudaDeviceGetAttribute(value, attribute, device), "cudaDeviceGetAttribute");
    if (!status.ok()) return status;
  }
  info.max_sm_clock_mhz /= 1000;  // Both clocks come in kHz.
  info.max_memory_clock_mhz /= 1000;
  status = ToStatus(cudaDriverGetVersion(&info.driver_api_version), "cudaDriverGetVersion");
  if (!status.ok()) return status;
  return info;
}

std::string LibraryVersions() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  int nccl = 0;
  ncclGetVersion(&nccl);
  // cuBLASLt ships with cuBLAS and carries its version.
  int cublas_major = 0, cublas_minor = 0;
  cublasLtGetProperty(MAJOR_VERSION, &cublas_major);
  cublasLtGetProperty(MINOR_VERSION, &cublas_minor);
  return "CUDA runtime " + std::to_string(runtime) + ", cuBLAS " +
         std::to_string(cublas_major) + "." + std::to_string(cublas_minor) + " (cuBLASLt " +
         std::to_string(static_cast<long long>(cublasLtGetVersion())) + ")" +
         ", cuDNN " + std::to_string(static_cast<long long>(cudnnGetVersion())) +
         ", NCCL " + std::to_string(nccl);
}

}  // namespace cuda
}  // namespace tfm

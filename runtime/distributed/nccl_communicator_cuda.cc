// The NCCL implementation of nccl_communicator.h (compiled by nvcc).
#include <cuda_runtime.h>
#include <nccl.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "runtime/distributed/nccl_communicator.h"

namespace tfm {
namespace {

std::string NcclVersion() {
  int version = 0;
  ncclGetVersion(&version);
  return absl::StrCat("NCCL ", version / 10000, ".", version / 100 % 100, ".", version % 100);
}

}  // namespace

struct NcclCommunicator::State {
  Communicator* bootstrap = nullptr;
  int device = 0;
  absl::Duration timeout;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t queued = nullptr;  // The work before a collective, on the default stream.
  bool failed = false;

  absl::Status Error(absl::string_view what, absl::string_view why) {
    failed = true;
    return absl::InternalError(absl::StrCat("rank ", bootstrap->rank(), ": ", what, ": ", why));
  }

  // Waits until the communicator has no operation in progress, then until
  // `stream` (when given) has run everything queued on it.
  absl::Status Wait(absl::string_view what, int64_t collective, cudaStream_t wait_stream) {
    const absl::Time start = absl::Now();
    while (true) {
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        return Error(what, absl::StrCat(ncclGetErrorString(async), ": ", ncclGetLastError(comm)));
      }
      if (async == ncclSuccess) {
        if (wait_stream == nullptr) return absl::OkStatus();
        const cudaError_t query = cudaStreamQuery(wait_stream);
        if (query == cudaSuccess) return absl::OkStatus();
        if (query != cudaErrorNotReady) return Error(what, cudaGetErrorString(query));
        cudaGetLastError();  // "Not ready" stays the last error otherwise (runtime_cuda.cc).
      }
      const absl::Duration waited = absl::Now() - start;
      if (waited > timeout) {
        ncclCommAbort(comm);
        comm = nullptr;
        const std::string missing = bootstrap->Missing(collective);
        return Error(what, absl::StrCat(
                               "did not complete within ", absl::FormatDuration(timeout), ": ",
                               missing.empty()
                                   ? std::string("every rank reached it, so one died or hangs "
                                                 "inside it")
                                   : absl::StrCat(missing, " never reached it (dead or hung)"),
                               "; train.distributed_timeout_seconds sets the limit"));
      }
      if (waited > absl::Milliseconds(1)) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
};

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(
    Communicator* bootstrap, int device, absl::Duration timeout) {
  auto state = std::make_unique<State>();
  state->bootstrap = bootstrap;
  state->device = device;
  state->timeout = timeout;
  cudaError_t error = cudaSetDevice(device);
  if (error != cudaSuccess) {
    return absl::UnavailableError(absl::StrCat("NCCL on GPU ", device, ": cudaSetDevice: ",
                                               cudaGetErrorString(error)));
  }
  ncclUniqueId id;
  if (bootstrap->rank() == 0) {
    const ncclResult_t result = ncclGetUniqueId(&id);
    if (result != ncclSuccess) {
      return absl::UnavailableError(
          absl::StrCat("ncclGetUniqueId: ", ncclGetErrorString(result)));
    }
  }
  absl::Status status = bootstrap->Broadcast(absl::Span<char>(id.internal, sizeof(id.internal)),
                                             0, "the NCCL unique id", timeout);
  if (!status.ok()) return status;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // So that a missing rank times out instead of hanging here.
  const int64_t collective = bootstrap->Announce();
  const ncclResult_t result =
      ncclCommInitRankConfig(&state->comm, bootstrap->size(), id, bootstrap->rank(), &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    return absl::UnavailableError(
        absl::StrCat("ncclCommInitRankConfig: ", ncclGetErrorString(result)));
  }
  status = state->Wait("NCCL initialisation", collective, nullptr);
  if (!status.ok()) return status;
  error = cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking);
  if (error == cudaSuccess) {
    error = cudaEventCreateWithFlags(&state->queued, cudaEventDisableTiming);
  }
  if (error != cudaSuccess) {
    return absl::UnavailableError(absl::StrCat("NCCL stream: ", cudaGetErrorString(error)));
  }
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(std::move(state)));
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<State> state) : state_(std::move(state)) {}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(state_->device);
  if (state_->comm != nullptr) {
    if (state_->failed) {
      ncclCommAbort(state_->comm);
    } else {
      ncclCommFinalize(state_->comm);
      state_->Wait("NCCL finalisation", state_->bootstrap->Announce(), nullptr).IgnoreError();
      ncclCommDestroy(state_->comm);
    }
  }
  if (state_->queued != nullptr) cudaEventDestroy(state_->queued);
  if (state_->stream != nullptr) cudaStreamDestroy(state_->stream);
}

int NcclCommunicator::rank() const { return state_->bootstrap->rank(); }
int NcclCommunicator::size() const { return state_->bootstrap->size(); }
std::string NcclCommunicator::name() const { return NcclVersion(); }

absl::Status NcclCommunicator::AllReduceSum(Tensor& tensor, absl::string_view what) {
  if (state_->failed) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": an earlier NCCL collective failed on rank ", rank()));
  }
  if (tensor.device() != Device::Cuda(state_->device)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": NCCL on cuda:", state_->device,
                                                   " got a tensor on ",
                                                   tensor.device().ToString()));
  }
  if (tensor.dtype() != DType::kF32) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": all-reduce of ", DTypeName(tensor.dtype()), "; only f32 is summed"));
  }
  cudaSetDevice(state_->device);
  // After the kernels that produced the tensor (legacy default stream).
  cudaError_t error = cudaEventRecord(state_->queued, cudaStreamLegacy);
  if (error == cudaSuccess) error = cudaStreamWaitEvent(state_->stream, state_->queued, 0);
  if (error != cudaSuccess) return state_->Error(what, cudaGetErrorString(error));
  const int64_t collective = state_->bootstrap->Announce();
  const ncclResult_t result = ncclAllReduce(
      tensor.raw_data(), tensor.raw_data(), static_cast<size_t>(tensor.num_elements()),
      ncclFloat32, ncclSum, state_->comm,
      state_->stream);
  if (result != ncclSuccess && result != ncclInProgress) {
    return state_->Error(what, absl::StrCat("ncclAllReduce: ", ncclGetErrorString(result)));
  }
  return state_->Wait(what, collective, state_->stream);
}

absl::Status NcclCommunicator::AllReduceSum(absl::Span<double> values, absl::string_view what) {
  return state_->bootstrap->AllReduceSum(values, what);
}

absl::Status NcclCommunicator::Broadcast(absl::Span<char> bytes, int root, absl::string_view what,
                                         absl::Duration timeout) {
  return state_->bootstrap->Broadcast(bytes, root, what, timeout);
}

int64_t NcclCommunicator::Announce() { return state_->bootstrap->Announce(); }
std::string NcclCommunicator::Missing(int64_t collective) {
  return state_->bootstrap->Missing(collective);
}

void NcclCommunicator::Abort(int exit_code) {
  if (state_->comm != nullptr) ncclCommAbort(state_->comm);
  state_->comm = nullptr;
  state_->bootstrap->Abort(exit_code);
}

}  // namespace tfm

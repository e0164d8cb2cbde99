#include "runtime/distributed/mpi_communicator.h"

#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tfm {
namespace {

// Elements per MPI call: MPI counts are ints.
constexpr int64_t kMaxChunk = int64_t{1} << 30;

std::string MpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

// What each rank tells the others at start-up, for naming it in errors.
struct Identity {
  int pid;
  char host[MPI_MAX_PROCESSOR_NAME];
};

}  // namespace

struct MpiCommunicator::State {
  MPI_Comm comm = MPI_COMM_NULL;      // The collectives.
  MPI_Comm arrivals = MPI_COMM_NULL;  // Arrival messages only, so they never match a collective's.
  int rank = 0;
  int size = 1;
  std::string library;
  std::vector<Identity> identities;
  absl::Duration timeout;
  // MPI is initialised MPI_THREAD_SERIALIZED: the trainer and the gradient
  // reducer's thread take turns, and this lock makes the turns explicit.
  std::mutex mutex;
  bool failed = false;  // A collective failed: the job must be aborted.

  int64_t announced = 0;        // Collectives this rank has reached.
  std::vector<int64_t> reached;  // The latest number each peer announced.
  std::vector<int64_t> incoming;
  std::vector<MPI_Request> receives;
  std::deque<std::pair<MPI_Request, std::unique_ptr<int64_t>>> sends;

  void PostReceive(int peer) {
    MPI_Irecv(&incoming[peer], 1, MPI_INT64_T, peer, 0, arrivals, &receives[peer]);
  }

  void PollArrivals() {
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      int done = 1;
      while (done) {
        MPI_Test(&receives[peer], &done, MPI_STATUS_IGNORE);
        if (done) {
          reached[peer] = std::max(reached[peer], incoming[peer]);
          PostReceive(peer);
        }
      }
    }
    while (!sends.empty()) {
      int done = 0;
      MPI_Test(&sends.front().first, &done, MPI_STATUS_IGNORE);
      if (!done) break;
      sends.pop_front();
    }
  }

  int64_t AnnounceLocked() {
    ++announced;
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      auto number = std::make_unique<int64_t>(announced);
      MPI_Request request;
      MPI_Isend(number.get(), 1, MPI_INT64_T, peer, 0, arrivals, &request);
      sends.emplace_back(request, std::move(number));
    }
    PollArrivals();
    return announced;
  }

  std::string Describe(int peer) const {
    return absl::StrCat("rank ", peer, " (pid ", identities[peer].pid, " on ",
                        identities[peer].host, ")");
  }

  // The other ranks (the first 8), as suspects.
  std::string Peers() const {
    std::vector<std::string> peers;
    for (int peer = 0; peer < size && peers.size() < 8; ++peer) {
      if (peer != rank) peers.push_back(Describe(peer));
    }
    return absl::StrCat(absl::StrJoin(peers, ", "), size > 9 ? ", ..." : "");
  }

  std::string MissingLocked(int64_t collective) {
    PollArrivals();
    std::vector<std::string> missing;
    for (int peer = 0; peer < size; ++peer) {
      if (peer != rank && reached[peer] < collective) missing.push_back(Describe(peer));
    }
    return absl::StrJoin(missing, ", ");
  }

  // Polls `request` until it completes or `limit` passes. MPI moves a large
  // message only while it is polled, so polling yields the core but never
  // sleeps for the first 200 ms (sleeping 100 us between polls made the
  // base model's all-reduce 4x slower: benchmarks/allreduce); past that, a
  // rank is waiting for a slower one and sleeps between polls, leaving the
  // cores to the training threads.
  absl::Status Wait(MPI_Request* request, int64_t collective, absl::string_view what,
                    absl::Duration limit) {
    const absl::Time start = absl::Now();
    for (int64_t polls = 0;; ++polls) {
      int done = 0;
      const int code = MPI_Test(request, &done, MPI_STATUS_IGNORE);
      if (code != MPI_SUCCESS) return Fail(what, MpiError(code));
      if (done) return absl::OkStatus();
      if (polls % 64 == 0) PollArrivals();
      const absl::Duration waited = absl::Now() - start;
      if (waited > limit) {
        const std::string missing = MissingLocked(collective);
        return Fail(what, absl::StrCat(
                              "did not complete within ", absl::FormatDuration(limit), ": ",
                              missing.empty()
                                  ? absl::StrCat("every rank reached it, so one of the others "
                                                 "died or hangs inside it: ",
                                                 Peers())
                                  : absl::StrCat(missing, " never reached it (dead or hung)"),
                              "; train.distributed_timeout_seconds sets the limit"));
      }
      if (waited > absl::Milliseconds(200)) {
        absl::SleepFor(absl::Microseconds(100));
      } else {
        sched_yield();
      }
    }
  }

  // Marks the communicator failed and says so at once on stderr: the job is
  // aborted when the communicator goes away, which may be before the caller
  // prints the error.
  absl::Status Fail(absl::string_view what, absl::string_view why) {
    failed = true;
    const std::string message = absl::StrCat("rank ", rank, ": ", what, ": ", why);
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    return absl::DeadlineExceededError(message);
  }

  // Runs one collective: `start` posts its non-blocking MPI calls, one per
  // chunk, each waited for in turn.
  absl::Status Run(absl::string_view what, absl::Duration limit, int64_t chunks,
                   const std::function<int(int64_t chunk, MPI_Request*)>& start) {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": an earlier collective failed on rank ", rank));
    }
    const int64_t collective = AnnounceLocked();
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      MPI_Request request;
      const int code = start(chunk, &request);
      if (code != MPI_SUCCESS) return Fail(what, MpiError(code));
      absl::Status status = Wait(&request, collective, what, limit);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
};

bool LaunchedByMpi() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(variable) != nullptr) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(
    absl::Duration timeout) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    return absl::FailedPreconditionError(
        "MPI is already initialised: one MpiCommunicator per process");
  }
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    return absl::UnavailableError("MPI_Init_thread failed");
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return absl::UnavailableError(
        "this MPI library does not support MPI_THREAD_SERIALIZED, which the gradient "
        "reducer's thread needs");
  }
  auto state = std::make_unique<State>();
  state->timeout = timeout;
  MPI_Comm_dup(MPI_COMM_WORLD, &state->comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &state->arrivals);
  // Errors come back as codes, which become statuses naming the collective.
  MPI_Comm_set_errhandler(state->comm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(state->arrivals, MPI_ERRORS_RETURN);
  MPI_Comm_rank(state->comm, &state->rank);
  MPI_Comm_size(state->comm, &state->size);

  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  state->library = std::string(version, length);
  state->library = state->library.substr(0, state->library.find(','));

  Identity self{};
  self.pid = static_cast<int>(getpid());
  int host_length = 0;
  MPI_Get_processor_name(self.host, &host_length);
  state->identities.resize(state->size);
  // Blocking: at start-up mpirun itself reports a rank that fails to start.
  const int code = MPI_Allgather(&self, sizeof(Identity), MPI_BYTE, state->identities.data(),
                                 sizeof(Identity), MPI_BYTE, state->comm);
  if (code != MPI_SUCCESS) {
    return absl::UnavailableError(absl::StrCat("MPI_Allgather at start-up: ", MpiError(code)));
  }
  state->reached.assign(state->size, 0);
  state->incoming.assign(state->size, 0);
  state->receives.assign(state->size, MPI_REQUEST_NULL);
  for (int peer = 0; peer < state->size; ++peer) {
    if (peer != state->rank) state->PostReceive(peer);
  }
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(std::move(state)));
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<State> state) : state_(std::move(state)) {}

MpiCommunicator::~MpiCommunicator() {
  if (state_->failed) MPI_Abort(MPI_COMM_WORLD, 1);
  // Every rank got here after the same collectives: the arrival messages
  // still posted are the receives for collectives that will never come.
  for (int peer = 0; peer < state_->size; ++peer) {
    if (peer == state_->rank) continue;
    MPI_Cancel(&state_->receives[peer]);
    MPI_Wait(&state_->receives[peer], MPI_STATUS_IGNORE);
  }
  for (auto& [request, number] : state_->sends) MPI_Wait(&request, MPI_STATUS_IGNORE);
  MPI_Comm_free(&state_->arrivals);
  MPI_Comm_free(&state_->comm);
  MPI_Finalize();
}

int MpiCommunicator::rank() const { return state_->rank; }
int MpiCommunicator::size() const { return state_->size; }
std::string MpiCommunicator::name() const { return state_->library; }
std::string MpiCommunicator::Describe(int rank) const { return state_->Describe(rank); }

absl::Status MpiCommunicator::AllReduceSum(Tensor& tensor, absl::string_view what) {
  if (!tensor.device().is_cpu()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": MPI sums host memory; this tensor is on ",
                                                   tensor.device().ToString(), " (use NCCL)"));
  }
  if (tensor.dtype() != DType::kF32) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": all-reduce of ", DTypeName(tensor.dtype()), "; only f32 is summed"));
  }
  const int64_t count = tensor.num_elements();
  char* data = static_cast<char*>(tensor.raw_data());
  const size_t element = DTypeSize(tensor.dtype());
  return state_->Run(what, state_->timeout, (count + kMaxChunk - 1) / kMaxChunk,
                     [&](int64_t chunk, MPI_Request* request) {
                       const int64_t first = chunk * kMaxChunk;
                       const int n = static_cast<int>(std::min(kMaxChunk, count - first));
                       return MPI_Iallreduce(MPI_IN_PLACE, data + first * element, n,
                                             MPI_FLOAT, MPI_SUM, state_->comm,
                                             request);
                     });
}

absl::Status MpiCommunicator::AllReduceSum(absl::Span<double> values, absl::string_view what) {
  return state_->Run(what, state_->timeout, 1, [&](int64_t, MPI_Request* request) {
    return MPI_Iallreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()),
                          MPI_DOUBLE, MPI_SUM, state_->comm, request);
  });
}

absl::Status MpiCommunicator::Broadcast(absl::Span<char> bytes, int root, absl::string_view what,
                                        absl::Duration timeout) {
  if (root < 0 || root >= state_->size) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": broadcast from rank ", root, " of ", state_->size));
  }
  const int64_t count = static_cast<int64_t>(bytes.size());
  return state_->Run(what, timeout, std::max<int64_t>(1, (count + kMaxChunk - 1) / kMaxChunk),
                     [&](int64_t chunk, MPI_Request* request) {
                       const int64_t first = chunk * kMaxChunk;
                       const int n = static_cast<int>(std::min(kMaxChunk, count - first));
                       return MPI_Ibcast(bytes.data() + first, n, MPI_BYTE, root, state_->comm,
                                         request);
                     });
}

int64_t MpiCommunicator::Announce() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->AnnounceLocked();
}

std::string MpiCommunicator::Missing(int64_t collective) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->MissingLocked(collective);
}

void MpiCommunicator::Abort(int exit_code) { MPI_Abort(MPI_COMM_WORLD, exit_code); }

absl::Status MpiCommunicator::BlockingAllReduceSum(Tensor& tensor) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const int code =
      MPI_Allreduce(MPI_IN_PLACE, tensor.raw_data(), static_cast<int>(tensor.num_elements()),
                    MPI_FLOAT, MPI_SUM, state_->comm);
  if (code != MPI_SUCCESS) return absl::InternalError(MpiError(code));
  return absl::OkStatus();
}

}  // namespace tfm

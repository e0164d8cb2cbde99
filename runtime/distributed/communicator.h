// The collectives data-parallel training needs, behind one interface: MPI
// on host memory (mpi_communicator.h), NCCL on GPU memory
// (nccl_communicator.h), and a single process (local_communicator.h).
//
// Every rank calls the same collectives in the same order. None of them
// blocks forever: a call that has not completed within the communicator's
// timeout (train.distributed_timeout_seconds) fails with an error naming
// the ranks that never reached it, so a dead or hung rank stops the others
// instead of leaving them waiting.
#ifndef TFM_RUNTIME_DISTRIBUTED_COMMUNICATOR_H_
#define TFM_RUNTIME_DISTRIBUTED_COMMUNICATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace tfm {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "Open MPI 4.1.4", "NCCL 2.28.3", "single process".
  virtual std::string name() const = 0;

  // Sums `tensor` over the ranks in place: f32, on the device
  // the communicator serves (host memory for MPI, its GPU for NCCL). `what`
  // names the call in errors ("gradient bucket 3 of 7, update 12").
  virtual absl::Status AllReduceSum(Tensor& tensor, absl::string_view what) = 0;
  // Sums host values over the ranks in place (loss sums, agreed flags).
  virtual absl::Status AllReduceSum(absl::Span<double> values, absl::string_view what) = 0;
  // Copies `bytes` of rank `root` into every other rank's `bytes`, waiting at
  // most `timeout` (work the root does first, such as a validation, counts).
  virtual absl::Status Broadcast(absl::Span<char> bytes, int root, absl::string_view what,
                                 absl::Duration timeout) = 0;

  // Hang detection for collectives that run on another transport over the
  // same ranks (NCCL over MPI's): Announce tells the peers that this rank has
  // reached its next such collective and returns the collective's number;
  // Missing names the ranks that have not announced `collective` yet
  // ("rank 1 (pid 4242 on gpu-b)"), or is empty.
  virtual int64_t Announce() = 0;
  virtual std::string Missing(int64_t collective) = 0;

  // Ends every rank of the job now (MPI_Abort), after an error on this one
  // that the others would otherwise only notice at their timeout. Returns
  // only when this is the only rank.
  virtual void Abort(int exit_code) = 0;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_DISTRIBUTED_COMMUNICATOR_H_

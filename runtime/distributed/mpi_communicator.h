// Collectives over MPI (Open MPI from Debian's packages): the ranks mpirun
// started, host memory. Each collective is non-blocking underneath and
// polled until it completes or the timeout passes; alongside, every rank
// tells each peer the number of each collective it reaches (a few bytes), so
// a timeout names exactly the ranks that never arrived.
//
// One per process: Create initialises MPI, the destructor finalises it, or
// after a failed collective aborts the whole job (MPI_Abort), because a rank
// that hangs would keep MPI_Finalize waiting and mpirun then ends the rest.
#ifndef TFM_RUNTIME_DISTRIBUTED_MPI_COMMUNICATOR_H_
#define TFM_RUNTIME_DISTRIBUTED_MPI_COMMUNICATOR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/distributed/communicator.h"

namespace tfm {

class MpiCommunicator : public Communicator {
 public:
  // `timeout` bounds every collective (Broadcast takes its own).
  static absl::StatusOr<std::unique_ptr<MpiCommunicator>> Create(absl::Duration timeout);
  ~MpiCommunicator() override;

  int rank() const override;
  int size() const override;
  std::string name() const override;
  // "rank 1 (pid 4242 on node-b)".
  std::string Describe(int rank) const;

  absl::Status AllReduceSum(Tensor& tensor, absl::string_view what) override;
  absl::Status AllReduceSum(absl::Span<double> values, absl::string_view what) override;
  absl::Status Broadcast(absl::Span<char> bytes, int root, absl::string_view what,
                         absl::Duration timeout) override;
  int64_t Announce() override;
  std::string Missing(int64_t collective) override;
  void Abort(int exit_code) override;

  // The same all-reduce as MPI_Allreduce itself blocking, without the
  // arrival messages and the timeout: what benchmarks compare against.
  absl::Status BlockingAllReduceSum(Tensor& tensor);

 private:
  struct State;
  explicit MpiCommunicator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// True when this process was started by mpirun (or another MPI launcher):
// then training connects to its peers, else it runs alone.
bool LaunchedByMpi();

}  // namespace tfm

#endif  // TFM_RUNTIME_DISTRIBUTED_MPI_COMMUNICATOR_H_

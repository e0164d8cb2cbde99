// Collectives over NCCL on one GPU per rank: the gradient all-reduce of
// data-parallel training on GPUs. The ranks and the host-side collectives
// (the NCCL unique id's broadcast, loss sums, agreed flags) come from a
// bootstrap communicator: MPI under mpirun, or LocalCommunicator for one
// rank without mpirun.
//
// NCCL runs on the communicator's own stream after the work already queued
// on the device's legacy default stream (where the engine's kernels run),
// and each call returns when the sum is in place. The communicator is
// non-blocking underneath (ncclConfig_t::blocking = 0), so a call that does
// not finish within the timeout aborts it (ncclCommAbort) and fails naming
// the ranks that never arrived (announced through the bootstrap).
//
// Builds without CUDA compile nccl_communicator_none.cc, whose Create says
// that NCCL is not available.
#ifndef TFM_RUNTIME_DISTRIBUTED_NCCL_COMMUNICATOR_H_
#define TFM_RUNTIME_DISTRIBUTED_NCCL_COMMUNICATOR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/distributed/communicator.h"

namespace tfm {

class NcclCommunicator : public Communicator {
 public:
  // Collective: every rank of `bootstrap` (not owned; must outlive the
  // result) calls it with its own GPU `device`.
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>> Create(Communicator* bootstrap,
                                                                  int device,
                                                                  absl::Duration timeout);
  ~NcclCommunicator() override;

  int rank() const override;
  int size() const override;
  std::string name() const override;  // "NCCL 2.28.3"

  // `tensor` must be on this communicator's GPU.
  absl::Status AllReduceSum(Tensor& tensor, absl::string_view what) override;
  // Host memory: through the bootstrap.
  absl::Status AllReduceSum(absl::Span<double> values, absl::string_view what) override;
  absl::Status Broadcast(absl::Span<char> bytes, int root, absl::string_view what,
                         absl::Duration timeout) override;
  int64_t Announce() override;
  std::string Missing(int64_t collective) override;
  void Abort(int exit_code) override;  // ncclCommAbort, then the bootstrap's.

 private:
  struct State;
  explicit NcclCommunicator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_DISTRIBUTED_NCCL_COMMUNICATOR_H_

#include "runtime/distributed/launch.h"

#include "runtime/distributed/local_communicator.h"
#include "runtime/distributed/mpi_communicator.h"

namespace tfm {

absl::StatusOr<std::unique_ptr<Communicator>> ConnectRanks(absl::Duration timeout) {
  if (!LaunchedByMpi()) return std::unique_ptr<Communicator>(new LocalCommunicator());
  absl::StatusOr<std::unique_ptr<MpiCommunicator>> mpi = MpiCommunicator::Create(timeout);
  if (!mpi.ok()) return mpi.status();
  return std::unique_ptr<Communicator>(std::move(*mpi));
}

}  // namespace tfm

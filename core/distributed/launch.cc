#include "core/distributed/launch.h"

#include "core/distributed/local_communicator.h"
#include "core/distributed/mpi_communicator.h"

namespace tfm {

absl::StatusOr<std::unique_ptr<Communicator>> ConnectRanks(absl::Duration timeout) {
  if (!LaunchedByMpi()) return std::unique_ptr<Communicator>(new LocalCommunicator());
  absl::StatusOr<std::unique_ptr<MpiCommunicator>> mpi = MpiCommunicator::Create(timeout);
  if (!mpi.ok()) return mpi.status();
  return std::unique_ptr<Communicator>(std::move(*mpi));
}

}  // namespace tfm

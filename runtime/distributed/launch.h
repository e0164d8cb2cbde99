// How a training process finds its peers: under mpirun (or another MPI
// launcher) it joins them over MPI; started on its own it is the only rank.
#ifndef TFM_RUNTIME_DISTRIBUTED_LAUNCH_H_
#define TFM_RUNTIME_DISTRIBUTED_LAUNCH_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/distributed/communicator.h"

namespace tfm {

// `timeout` bounds each collective (see communicator.h).
absl::StatusOr<std::unique_ptr<Communicator>> ConnectRanks(absl::Duration timeout);

}  // namespace tfm

#endif  // TFM_RUNTIME_DISTRIBUTED_LAUNCH_H_

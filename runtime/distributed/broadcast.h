// Broadcasts of whole objects from one rank, built on Communicator's bytes:
// how rank 0 hands the other ranks what only it reads from the work
// directory (the vocabulary, a checkpoint's weights and state), so that no
// other rank touches those files and the ranks need no shared file system.
#ifndef TFM_RUNTIME_DISTRIBUTED_BROADCAST_H_
#define TFM_RUNTIME_DISTRIBUTED_BROADCAST_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "runtime/distributed/communicator.h"
#include "core/tensor.h"

namespace tfm {

// `text` of rank `root` into every rank's `text` (length first).
absl::Status BroadcastString(Communicator& communicator, int root, absl::string_view what,
                             absl::Duration timeout, std::string* text);

// Each tensor of rank `root` into the same-shaped tensor of every other
// rank (a tensor on a GPU through a host copy).
absl::Status BroadcastTensors(Communicator& communicator, int root, absl::string_view what,
                              absl::Duration timeout, std::vector<Tensor>& tensors);

}  // namespace tfm

#endif  // TFM_RUNTIME_DISTRIBUTED_BROADCAST_H_

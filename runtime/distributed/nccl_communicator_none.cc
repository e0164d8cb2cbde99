// nccl_communicator.h in builds without CUDA: there is no NCCL.
#include "runtime/distributed/nccl_communicator.h"

namespace tfm {

struct NcclCommunicator::State {};

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(Communicator*, int,
                                                                           absl::Duration) {
  return absl::UnavailableError("NCCL: this build has no CUDA (built with --config=nocuda or "
                                "without a CUDA toolkit)");
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<State> state) : state_(std::move(state)) {}
NcclCommunicator::~NcclCommunicator() = default;
int NcclCommunicator::rank() const { return 0; }
int NcclCommunicator::size() const { return 1; }
std::string NcclCommunicator::name() const { return "NCCL (not built)"; }
absl::Status NcclCommunicator::AllReduceSum(Tensor&, absl::string_view) {
  return absl::UnavailableError("NCCL: this build has no CUDA");
}
absl::Status NcclCommunicator::AllReduceSum(absl::Span<double>, absl::string_view) {
  return absl::UnavailableError("NCCL: this build has no CUDA");
}
absl::Status NcclCommunicator::Broadcast(absl::Span<char>, int, absl::string_view,
                                         absl::Duration) {
  return absl::UnavailableError("NCCL: this build has no CUDA");
}
int64_t NcclCommunicator::Announce() { return 0; }
std::string NcclCommunicator::Missing(int64_t) { return ""; }
void NcclCommunicator::Abort(int) {}

}  // namespace tfm

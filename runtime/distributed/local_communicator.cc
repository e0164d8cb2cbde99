#include "runtime/distributed/local_communicator.h"

#include "absl/strings/str_cat.h"

namespace tfm {

absl::Status LocalCommunicator::AllReduceSum(Tensor& tensor, absl::string_view what) {
  // Checked as the other communicators check it, so that a single-process
  // run catches what a multi-process one would reject.
  if (tensor.dtype() != DType::kF32) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": all-reduce of ",
                                                   DTypeName(tensor.dtype()),
                                                   "; only f32 is summed"));
  }
  return absl::OkStatus();
}

absl::Status LocalCommunicator::Broadcast(absl::Span<char>, int root, absl::string_view what,
                                          absl::Duration) {
  if (root != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": broadcast from rank ", root, " in a single process"));
  }
  return absl::OkStatus();
}

}  // namespace tfm

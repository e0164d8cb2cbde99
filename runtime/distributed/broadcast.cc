#include "runtime/distributed/broadcast.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"

namespace tfm {

absl::Status BroadcastString(Communicator& communicator, int root, absl::string_view what,
                             absl::Duration timeout, std::string* text) {
  if (communicator.size() == 1) return absl::OkStatus();
  uint64_t length = text->size();
  TFM_RETURN_IF_ERROR(communicator.Broadcast(
      absl::Span<char>(reinterpret_cast<char*>(&length), sizeof(length)), root,
      absl::StrCat(what, " (length)"), timeout));
  text->resize(length);
  return communicator.Broadcast(absl::Span<char>(text->data(), length), root, what, timeout);
}

absl::Status BroadcastTensors(Communicator& communicator, int root, absl::string_view what,
                              absl::Duration timeout, std::vector<Tensor>& tensors) {
  if (communicator.size() == 1) return absl::OkStatus();
  for (Tensor& tensor : tensors) {
    // A tensor on a GPU goes through a host copy (the bootstrap's bytes are
    // host memory), written back on the receiving ranks.
    Tensor host = tensor;
    if (!tensor.device().is_cpu()) {
      TFM_ASSIGN_OR_RETURN(host, CopyToDevice(tensor, Device::Cpu()));
    }
    TFM_RETURN_IF_ERROR(communicator.Broadcast(
        absl::Span<char>(static_cast<char*>(host.raw_data()), host.nbytes()), root, what,
        timeout));
    if (!tensor.device().is_cpu() && communicator.rank() != root) {
      TFM_RETURN_IF_ERROR(CopyInto(host, tensor));
    }
  }
  return absl::OkStatus();
}

}  // namespace tfm

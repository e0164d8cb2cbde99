#include "runtime/distributed/broadcast.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

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
    if (!tensor.device().is_cpu()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": broadcast of a tensor on ", tensor.device().ToString(),
                       "; only host tensors are broadcast"));
    }
    TFM_RETURN_IF_ERROR(communicator.Broadcast(
        absl::Span<char>(static_cast<char*>(tensor.raw_data()), tensor.nbytes()), root, what,
        timeout));
  }
  return absl::OkStatus();
}

}  // namespace tfm

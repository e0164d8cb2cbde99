#include "ops/attention/attention_backend.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace tfm {

absl::StatusOr<AttentionBackend> ResolveAttentionBackend(absl::string_view setting) {
  const std::string name = absl::AsciiStrToLower(setting);
  // Until the cuDNN back end is wired in, every setting runs the flash kernels.
  if (name.empty() || name == "auto" || name == "flash" || name == "cudnn") {
    return AttentionBackend::kFlash;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("TFM_ATTENTION_BACKEND must be auto, flash or cudnn, not '", setting, "'"));
}

absl::StatusOr<AttentionBackend> AttentionBackendFromEnvironment() {
  static const absl::StatusOr<AttentionBackend> backend = [] {
    const char* setting = std::getenv("TFM_ATTENTION_BACKEND");
    return ResolveAttentionBackend(setting != nullptr ? setting : "");
  }();
  return backend;
}

}  // namespace tfm

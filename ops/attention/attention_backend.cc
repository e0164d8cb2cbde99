#include "ops/attention/attention_backend.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tfm {

absl::StatusOr<AttentionBackend> ResolveAttentionBackend(absl::string_view setting) {
  const std::string name = absl::AsciiStrToLower(setting);
  if (name.empty() || name == "auto") return AttentionBackend::kAuto;
  if (name == "flash") return AttentionBackend::kFlash;
  if (name == "cudnn") return AttentionBackend::kCudnn;
  if (name == "flash_tiles") return AttentionBackend::kFlashTiles;
  return absl::InvalidArgumentError(absl::StrCat(
      "the attention back end (TFM_ATTENTION_BACKEND or the op's backend attribute) must be "
      "auto, flash, cudnn or flash_tiles, not '",
      setting, "'"));
}

absl::StatusOr<AttentionBackend> AttentionBackendFromEnvironment() {
  static const absl::StatusOr<AttentionBackend> backend = [] {
    const char* setting = std::getenv("TFM_ATTENTION_BACKEND");
    return ResolveAttentionBackend(setting != nullptr ? setting : "");
  }();
  return backend;
}

}  // namespace tfm

namespace tfm {

absl::StatusOr<AttentionBackend> AttentionBackendFor(const Attrs& attrs) {
  if (attrs.Has("backend")) {
    TFM_ASSIGN_OR_RETURN(const std::string setting, attrs.Get<std::string>("backend"));
    TFM_ASSIGN_OR_RETURN(AttentionBackend backend, ResolveAttentionBackend(setting));
    if (backend != AttentionBackend::kAuto) return backend;
  }
  return AttentionBackendFromEnvironment();
}

}  // namespace tfm

#include "ops/cuda_launch_status.h"

#include "absl/strings/str_cat.h"

namespace tfm {

absl::Status CudaLaunchStatus(const KernelContext& context, const char* error) {
  if (error == nullptr) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(context.def().name, ": ", error));
}

}  // namespace tfm

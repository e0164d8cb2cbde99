// CPU kernel of concat_rows: each input's bytes after the previous one's.
#include <cstring>

#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ConcatRowsCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, context.dtype()));
  char* to = static_cast<char*>(out->raw_data());
  for (int entry = 0; entry < context.list_size(); ++entry) {
    const Tensor& x = context.list_input(entry, 0);
    if (x.nbytes() > 0) std::memcpy(to, x.raw_data(), x.nbytes());
    to += x.nbytes();
  }
  return absl::OkStatus();
}

// Every dtype: only bytes move.
TFM_REGISTER_KERNELS("concat_rows", DeviceType::kCPU, ConcatRowsCpu, DType::kF32, DType::kF16,
                     DType::kBF16, DType::kI32, DType::kI64, DType::kI8);

}  // namespace
}  // namespace tfm

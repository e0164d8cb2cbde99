// A bad plugin for tests: as if compiled against other engine headers, it
// carries another ABI number. Its op would register fine, so loading must
// fail on the number alone, before the op is registered.
#include "core/op_registry.h"
#include "core/plugin_abi.h"
#include "tasks/plugin_abi_version.h"

TFM_DEFINE_PLUGIN_ABI_VERSION(TFM_PLUGIN_ABI_VERSION + 1);

namespace {

absl::Status Nothing(tfm::KernelContext&) { return absl::OkStatus(); }

TFM_REGISTER_OP(tfm::OpDef{.name = "wrong_abi_op", .outputs = {"out"}});
TFM_REGISTER_KERNEL("wrong_abi_op", tfm::DeviceType::kCPU, tfm::DType::kF32, Nothing);

}  // namespace

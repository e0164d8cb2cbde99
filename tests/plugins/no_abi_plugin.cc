// A bad plugin for tests: built without tfm_plugin, so it carries no ABI
// number. Its op would register fine; loading must fail before it does.
#include "core/op_registry.h"

namespace {

absl::Status Nothing(tfm::KernelContext&) { return absl::OkStatus(); }

TFM_REGISTER_OP(tfm::OpDef{.name = "no_abi_op", .outputs = {"out"}});
TFM_REGISTER_KERNEL("no_abi_op", tfm::DeviceType::kCPU, tfm::DType::kF32, Nothing);

}  // namespace

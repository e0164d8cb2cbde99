// A bad plugin for tests: registers a fresh op, then "fill", which the engine
// already has. Loading must fail and leave no trace of either.
#include "core/op_registry.h"

namespace {

absl::Status Nothing(tfm::KernelContext&) { return absl::OkStatus(); }

TFM_REGISTER_OP(tfm::OpDef{.name = "duplicate_plugin_extra", .outputs = {"out"}});
TFM_REGISTER_OP(tfm::OpDef{.name = "fill", .outputs = {"out"}});
TFM_REGISTER_KERNEL("duplicate_plugin_extra", tfm::DeviceType::kCPU, tfm::DType::kF32, Nothing);

}  // namespace

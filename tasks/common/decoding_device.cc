#include "tasks/common/decoding_device.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/device_setting.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/bf16_linear/bf16_linear.h"
#include "tasks/common/quantized_model.h"

namespace tfm {
namespace {

// A setting and what the user typed to get it, for messages: the flag, else
// the config line of the field.
struct Setting {
  std::string value;
  std::string origin;  // "--device=cuda" or "ende.pbtxt:40: decode.device".
};

Setting ChooseSetting(const TaskContext& context, const std::string& requested,
                      const std::string& flag, const std::string& field,
                      const std::string& configured) {
  if (!requested.empty()) return {requested, absl::StrCat("--", flag, "=", requested)};
  return {configured, absl::StrCat(context.config.sources.Describe(field), ": ", field)};
}

}  // namespace

// The ops a Transformer's 16-bit search runs in the decoding dtype (the
// log-probabilities and their ranking are f32 whatever it is).
const char* const kDecoderOps[] = {"embedding",
                                   "add_positional_encoding",
                                   "linear",
                                   "linear_no_bias",
                                   "split_heads",
                                   "merge_heads",
                                   "scaled_dot_product_attention",
                                   "kv_cache_write",
                                   "kv_cache_gather",
                                   "kv_cache_reorder",
                                   "layer_norm",
                                   "residual_layer_norm",
                                   "add",
                                   "relu",
                                   "tied_projection",
                                   "cast"};

absl::Status CheckDecodingDType(DeviceType device, DType dtype) {
  if (dtype == DType::kF32) return absl::OkStatus();
  if (device == DeviceType::kCPU) {
    if (dtype == DType::kBF16) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        DTypeName(dtype), " decoding on the CPU: the CPU has no ", DTypeName(dtype),
        " products (decode in bf16, whose products round their inputs to bf16, in f32, or "
        "in int8)"));
  }
  std::vector<std::string> missing;
  for (const char* op : kDecoderOps) {
    if (!HasKernel(op, device, dtype)) missing.push_back(op);
  }
  const std::string where = absl::StrCat(DTypeName(dtype), " decoding on ", DeviceTypeName(device));
  if (!missing.empty()) {
    constexpr size_t kNamed = 8;  // Enough to see which; the count says the rest.
    const size_t named = std::min(missing.size(), kNamed);
    return absl::FailedPreconditionError(absl::StrCat(
        where, " is not supported yet: ", missing.size(), " op(s) have no ",
        DeviceTypeName(device), "/", DTypeName(dtype), " kernel (",
        absl::StrJoin(missing.begin(), missing.begin() + named, ", "),
        missing.size() > named ? ", ..." : "", "); decode in f32"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DecodingTarget> ChooseDecodingTarget(const TaskContext& context, std::ostream* log) {
  const config::DecodeConfig& decode = context.config.config.decode();
  const Setting device_setting =
      ChooseSetting(context, context.decode.device, "device", "decode.device", decode.device());
  const Setting dtype_setting =
      ChooseSetting(context, context.decode.dtype, "dtype", "decode.dtype", decode.dtype());
  DecodingTarget target;
  // int8 products have CPU kernels only: `auto` means the CPU then (for
  // --quantize=int8 or an int8 model directory), while a GPU named outright
  // stays an error (trained_model.cc says so).
  const int quantize =
      context.decode.quantize >= 0 ? context.decode.quantize : decode.quantize();
  const bool int8_on_auto =
      IsAutoDevice(device_setting.value) &&
      (quantize == config::DecodeConfig::INT8 || NamesInt8Model(context.decode.model));
  absl::StatusOr<Device> device = ResolveDevice(int8_on_auto ? "cpu" : device_setting.value);
  if (!device.ok()) {
    return absl::Status(device.status().code(),
                        absl::StrCat(device_setting.origin, ": ", device.status().message()));
  }
  target.device = *device;
  absl::StatusOr<DType> dtype = ParseDType(dtype_setting.value);
  if (!dtype.ok()) {
    return absl::Status(dtype.status().code(),
                        absl::StrCat(dtype_setting.origin, ": ", dtype.status().message()));
  }
  target.dtype = *dtype;
  if (absl::Status supported = CheckDecodingDType(target.device.type, target.dtype);
      !supported.ok()) {
    return absl::Status(supported.code(),
                        absl::StrCat(dtype_setting.origin, ": ", supported.message()));
  }
  if (log != nullptr) {
    *log << "decoding on: " << DescribeDevice(target.device, "decode.device", device_setting.value)
         << ", " << DTypeName(target.dtype) << (int8_on_auto ? " (int8 products: the CPU's)" : "");
    if (target.device.is_cpu() && target.dtype == DType::kBF16) {
      *log << " (f32 activations, bf16 products: kernel " << Bf16LinearKernelName() << ")";
    }
    *log << "\n";
  }
  return target;
}

}  // namespace tfm

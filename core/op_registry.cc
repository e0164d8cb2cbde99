#include "core/op_registry.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/check.h"
#include "core/op_profile.h"
#include "core/status_macros.h"

namespace tfm {

std::string KernelName(absl::string_view op, DeviceType device, DType dtype) {
  return absl::StrCat(op, "/", DeviceTypeName(device), "/", DTypeName(dtype));
}

Registry<OpDef>& OpRegistry() {
  static auto* registry = new Registry<OpDef>("op");
  return *registry;
}

Registry<KernelDef>& KernelRegistry() {
  static auto* registry = new Registry<KernelDef>("kernel");
  return *registry;
}

absl::StatusOr<Tensor*> KernelContext::AllocateOutput(int index, const Shape& shape,
                                                      DType dtype) {
  TFM_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Empty(shape, dtype, device_, stream_));
  SetOutput(index, std::move(tensor));
  return &outputs_[index];
}

absl::StatusOr<Tensor*> KernelContext::AllocateOutput(int index, DType dtype) {
  return AllocateOutput(index, output_shape(index), dtype);
}

const Shape& KernelContext::output_shape(int index) const {
  TFM_CHECK(index >= 0 && index < static_cast<int>(output_shapes_.size()),
            "output_shape needs an OpDef with output_shapes that sizes this output");
  return output_shapes_[index];
}

Tensor KernelContext::in_place_input(int i) const {
  const bool declared = std::any_of(def_.in_place.begin(), def_.in_place.end(),
                                    [i](const std::pair<int, int>& pair) { return pair.second == i; });
  TFM_CHECK(declared, "kernel writes an input its OpDef does not declare in-place");
  return inputs_[i];
}

void KernelContext::SetOutput(int index, Tensor tensor) {
  TFM_CHECK(index >= 0 && index < static_cast<int>(outputs_.size()),
            "kernel sets an output its OpDef does not declare");
  outputs_[index] = std::move(tensor);
}

absl::Status KernelContext::Error(absl::string_view message) const {
  std::vector<std::string> shapes;
  for (int i = 0; i < num_inputs(); ++i) {
    const std::string name =
        i < static_cast<int>(def_.inputs.size()) ? def_.inputs[i] : absl::StrCat("#", i);
    shapes.push_back(absl::StrCat(name, "=", inputs_[i].DebugString()));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      def_.name, ": ", message, shapes.empty() ? "" : " (inputs: ",
      absl::StrJoin(shapes, ", "), shapes.empty() ? "" : ")"));
}

namespace {

// The error for an op asked for a (device, dtype) it has no kernel for,
// naming the kernels it has: the kernel table is the one place that says
// what an op supports.
absl::Status NoKernelError(absl::string_view op, DeviceType device, DType dtype) {
  std::vector<std::string> available;
  const std::string prefix = absl::StrCat(op, "/");
  for (const std::string& name : KernelRegistry().Names()) {
    if (absl::StartsWith(name, prefix)) available.push_back(name.substr(prefix.size()));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": no kernel for ", DeviceTypeName(device), "/", DTypeName(dtype), "; ", op,
                   "'s kernels: ", available.empty() ? "(none)" : absl::StrJoin(available, ", ")));
}

absl::Status CheckKernelDTypeInputs(const KernelContext& context) {
  const OpDef& def = context.def();
  for (int i : def.kernel_dtype_inputs) {
    const DType dtype = context.input(i).dtype();
    if (dtype != context.dtype()) {
      return context.Error(absl::StrCat(
          "input '", def.inputs[i], "' is ", DTypeName(dtype), " but the kernel runs in ",
          DTypeName(context.dtype()), "; ",
          absl::StrJoin(def.kernel_dtype_inputs, ", ",
                        [&def](std::string* out, int j) { out->append(def.inputs[j]); }),
          " must share one dtype"));
    }
  }
  return absl::OkStatus();
}

// The aliasing rule of OpDef::in_place, checked after every kernel: a few
// pointer comparisons per call against silent corruption of a caller's
// tensors (an identity gradient handed back as the upstream one, then
// accumulated into).
absl::Status CheckNoUndeclaredAliases(const OpDef& def, absl::Span<const Tensor> inputs,
                                      const std::vector<Tensor>& outputs) {
  for (size_t out = 0; out < outputs.size(); ++out) {
    auto shares = [&](const Tensor& other) { return outputs[out].SharesBufferWith(other); };
    for (size_t in = 0; in < inputs.size(); ++in) {
      const std::pair<int, int> pair(static_cast<int>(out), static_cast<int>(in));
      if (shares(inputs[in]) &&
          std::find(def.in_place.begin(), def.in_place.end(), pair) == def.in_place.end()) {
        return absl::InternalError(absl::StrCat(def.name, ": kernel returned output '",
                                                def.outputs[out], "' sharing memory with input '",
                                                def.inputs[in], "', which the op does not declare in-place"));
      }
    }
    for (size_t other = 0; other < out; ++other) {
      if (shares(outputs[other])) {
        return absl::InternalError(absl::StrCat(def.name, ": kernel returned outputs '",
                                                def.outputs[other], "' and '", def.outputs[out],
                                                "' sharing memory"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> RunOp(absl::string_view op,
                                          absl::Span<const Tensor> inputs,
                                          const Attrs& attrs,
                                          std::optional<OpTarget> target,
                                          StreamHandle stream) {
  const ScopedOpTimer timer(op);
  TFM_ASSIGN_OR_RETURN(std::shared_ptr<const OpDef> def, OpRegistry().Find(op));
  if (inputs.size() != def->inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": expected ", def->inputs.size(),
                                                   " inputs (", absl::StrJoin(def->inputs, ", "),
                                                   "), got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": input '", def->inputs[i], "' is undefined"));
    }
    if (inputs[i].device() != inputs[0].device()) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": input '", def->inputs[i], "' is on ", inputs[i].device().ToString(),
          " but '", def->inputs[0], "' is on ", inputs[0].device().ToString()));
    }
  }
  if (!target.has_value()) {
    if (inputs.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": an op without inputs needs an explicit device and dtype"));
    }
    target = OpTarget{inputs[0].device(), inputs[0].dtype()};
  }
  absl::StatusOr<std::shared_ptr<const KernelDef>> kernel =
      KernelRegistry().Find(KernelName(op, target->device.type, target->dtype));
  // The op exists, so a failed lookup is a dtype or device it lacks.
  if (!kernel.ok()) return NoKernelError(op, target->device.type, target->dtype);
  KernelContext context(*def, inputs, attrs, target->device, target->dtype, stream);
  TFM_RETURN_IF_ERROR(CheckKernelDTypeInputs(context));
  if (def->validate) TFM_RETURN_IF_ERROR(def->validate(context));
  if (def->output_shapes) {
    TFM_ASSIGN_OR_RETURN(std::vector<Shape> shapes, def->output_shapes(context));
    TFM_CHECK(shapes.size() == def->outputs.size(), "output_shapes must size every output");
    context.set_output_shapes(std::move(shapes));
  }
  TFM_RETURN_IF_ERROR((*kernel)->fn(context));
  for (size_t i = 0; i < def->outputs.size(); ++i) {
    if (!context.outputs()[i].defined()) {
      return absl::InternalError(
          absl::StrCat(op, ": kernel did not produce output '", def->outputs[i], "'"));
    }
  }
  TFM_RETURN_IF_ERROR(CheckNoUndeclaredAliases(*def, inputs, context.outputs()));
  return std::move(context.outputs());
}

namespace internal {

OpRegistrar::OpRegistrar(OpDef def) {
  const std::string name = def.name;
  RegisterOrRecordError(OpRegistry(), name, std::move(def));
}

KernelRegistrar::KernelRegistrar(const char* op, DeviceType device, DType dtype,
                                 KernelFn fn) {
  RegisterOrRecordError(KernelRegistry(), KernelName(op, device, dtype),
                        KernelDef{op, device, dtype, std::move(fn)});
}

KernelRegistrar::KernelRegistrar(const char* op, DeviceType device,
                                 std::initializer_list<DType> dtypes, KernelFn fn) {
  for (DType dtype : dtypes) KernelRegistrar(op, device, dtype, fn);
}

}  // namespace internal
}  // namespace tfm

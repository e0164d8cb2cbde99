#include "core/op_registry.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/check.h"
#include "core/cuda/runtime.h"
#include "core/current_stream.h"
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

bool HasKernel(absl::string_view op, DeviceType device, DType dtype) {
  return KernelRegistry().Find(KernelName(op, device, dtype)).ok();
}

absl::StatusOr<OpCallLayout> OpCallLayout::Create(const OpDef& def, size_t num_inputs) {
  const size_t listed = static_cast<size_t>(def.list_inputs);
  const size_t fixed = def.inputs.size() - listed;
  if (listed == 0) {
    if (num_inputs == def.inputs.size()) return OpCallLayout(&def, 0);
    return absl::InvalidArgumentError(absl::StrCat(def.name, ": expected ", def.inputs.size(),
                                                   " inputs (", absl::StrJoin(def.inputs, ", "),
                                                   "), got ", num_inputs));
  }
  if (num_inputs < fixed || (num_inputs - fixed) % listed != 0) {
    const std::vector<std::string> entry(def.inputs.begin(), def.inputs.begin() + listed);
    const std::vector<std::string> rest(def.inputs.begin() + listed, def.inputs.end());
    return absl::InvalidArgumentError(absl::StrCat(
        def.name, ": expected ", listed, " inputs per list entry (", absl::StrJoin(entry, ", "),
        ")", rest.empty() ? "" : absl::StrCat(" followed by ", absl::StrJoin(rest, ", ")),
        "; got ", num_inputs, " inputs"));
  }
  return OpCallLayout(&def, static_cast<int>((num_inputs - fixed) / listed));
}

int OpCallLayout::num_inputs() const {
  return static_cast<int>(def_->inputs.size()) + (list_size_ - 1) * def_->list_inputs;
}

int OpCallLayout::num_outputs() const {
  return static_cast<int>(def_->outputs.size()) + (list_size_ - 1) * def_->list_outputs;
}

namespace {

// The flat index <-> (OpDef index, entry) arithmetic shared by inputs and
// outputs: `listed` members repeat `list_size` times, then the rest.
int FlatIndex(int listed, int list_size, int def_index, int entry) {
  return def_index < listed ? entry * listed + def_index
                            : list_size * listed + (def_index - listed);
}
int DefIndex(int listed, int list_size, int index) {
  return index < list_size * listed ? index % listed : index - list_size * listed + listed;
}
int Entry(int listed, int list_size, int index) {
  return index < list_size * listed ? index / listed : -1;
}

}  // namespace

int OpCallLayout::input(int def_index, int entry) const {
  return FlatIndex(def_->list_inputs, list_size_, def_index, entry);
}
int OpCallLayout::output(int def_index, int entry) const {
  return FlatIndex(def_->list_outputs, list_size_, def_index, entry);
}
int OpCallLayout::input_def_index(int index) const {
  return DefIndex(def_->list_inputs, list_size_, index);
}
int OpCallLayout::output_def_index(int index) const {
  return DefIndex(def_->list_outputs, list_size_, index);
}
int OpCallLayout::input_entry(int index) const {
  return Entry(def_->list_inputs, list_size_, index);
}
int OpCallLayout::output_entry(int index) const {
  return Entry(def_->list_outputs, list_size_, index);
}

std::string OpCallLayout::InputName(int index) const {
  const std::string& name = def_->inputs[input_def_index(index)];
  const int entry = input_entry(index);
  return entry < 0 ? name : absl::StrCat(name, "[", entry, "]");
}

std::string OpCallLayout::OutputName(int index) const {
  const std::string& name = def_->outputs[output_def_index(index)];
  const int entry = output_entry(index);
  return entry < 0 ? name : absl::StrCat(name, "[", entry, "]");
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
  const int def_index = layout_.input_def_index(i);
  const bool declared =
      std::any_of(def_.in_place.begin(), def_.in_place.end(),
                  [def_index](const std::pair<int, int>& pair) { return pair.second == def_index; });
  TFM_CHECK(declared, "kernel writes an input its OpDef does not declare in-place");
  return inputs_[i];
}

void KernelContext::SetOutput(int index, Tensor tensor) {
  TFM_CHECK(index >= 0 && index < static_cast<int>(outputs_.size()),
            "kernel sets an output its OpDef does not declare");
  outputs_[index] = std::move(tensor);
}

namespace {

absl::Status ErrorWithShapes(const KernelContext& context, absl::string_view message,
                             const std::vector<int>& shown, absl::string_view list_note) {
  std::vector<std::string> shapes;
  for (int i : shown) {
    shapes.push_back(
        absl::StrCat(context.layout().InputName(i), "=", context.input(i).DebugString()));
  }
  if (!list_note.empty()) shapes.insert(shapes.begin(), std::string(list_note));
  return absl::InvalidArgumentError(absl::StrCat(
      context.def().name, ": ", message, shapes.empty() ? "" : " (inputs: ",
      absl::StrJoin(shapes, ", "), shapes.empty() ? "" : ")"));
}

}  // namespace

absl::Status KernelContext::Error(absl::string_view message) const {
  std::vector<int> shown;
  for (int i = layout_.list_size() * def_.list_inputs; i < num_inputs(); ++i) shown.push_back(i);
  return ErrorWithShapes(
      *this, message, shown,
      def_.list_inputs > 0 ? absl::StrCat("a list of ", layout_.list_size(), " entries") : "");
}

absl::Status KernelContext::RequireF32Scalar(const Tensor& tensor, absl::string_view name) const {
  if (tensor.dtype() == DType::kF32 && tensor.rank() == 0) return absl::OkStatus();
  return Error(absl::StrCat(name, " must be an f32 scalar"));
}

absl::Status KernelContext::RequireDevicePosition(const Tensor& position, absl::string_view name,
                                                  const Device& device,
                                                  absl::string_view where) const {
  if (position.rank() == 1 && position.dim(0) == 1 && position.dtype() == DType::kI32 &&
      position.device() == device) {
    return absl::OkStatus();
  }
  return Error(absl::StrCat(name, " must be [1] i32 on ", where));
}

absl::Status KernelContext::EntryError(int entry, absl::string_view message) const {
  std::vector<int> shown;
  for (int d = 0; d < def_.list_inputs; ++d) shown.push_back(layout_.input(d, entry));
  return ErrorWithShapes(*this, absl::StrCat("list entry ", entry, ": ", message), shown, "");
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
  if (def.kernel_dtype_inputs.empty()) return absl::OkStatus();
  for (int i = 0; i < context.num_inputs(); ++i) {
    const int def_index = context.layout().input_def_index(i);
    if (std::find(def.kernel_dtype_inputs.begin(), def.kernel_dtype_inputs.end(), def_index) ==
        def.kernel_dtype_inputs.end()) {
      continue;
    }
    const DType dtype = context.input(i).dtype();
    if (dtype != context.dtype()) {
      return context.Error(absl::StrCat(
          "input '", context.layout().InputName(i), "' is ", DTypeName(dtype),
          " but the kernel runs in ",
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
bool Declared(const OpDef& def, const OpCallLayout& layout, int out, int in) {
  const std::pair<int, int> pair(layout.output_def_index(out), layout.input_def_index(in));
  if (std::find(def.in_place.begin(), def.in_place.end(), pair) == def.in_place.end()) {
    return false;
  }
  // A list member's output pairs with the same entry's input.
  const int out_entry = layout.output_entry(out), in_entry = layout.input_entry(in);
  return out_entry < 0 || in_entry < 0 || out_entry == in_entry;
}

// Whether `output` is the very tensor `input` (not merely in its buffer).
bool SameTensor(const Tensor& output, const Tensor& input) {
  return output.SharesBufferWith(input) && output.raw_data() == input.raw_data() &&
         output.nbytes() == input.nbytes();
}

absl::Status CheckNoUndeclaredAliases(const OpDef& def, const OpCallLayout& layout,
                                      absl::Span<const Tensor> inputs,
                                      const std::vector<Tensor>& outputs) {
  for (size_t out = 0; out < outputs.size(); ++out) {
    const int o = static_cast<int>(out);
    // A list entry's output that is its own in-place input, handed back:
    // whatever that tensor shares (views of one flat buffer), the caller
    // made it so. This keeps a multi-tensor update over thousands of
    // tensors linear rather than quadratic.
    if (layout.output_entry(o) >= 0) {
      bool handed_back = false;
      for (const auto& [out_def, in_def] : def.in_place) {
        if (out_def != layout.output_def_index(o)) continue;
        const int in = layout.input(in_def, layout.output_entry(o));
        handed_back = handed_back || SameTensor(outputs[out], inputs[in]);
      }
      if (handed_back) continue;
    }
    auto shares = [&](const Tensor& other) { return outputs[out].SharesBufferWith(other); };
    for (size_t in = 0; in < inputs.size(); ++in) {
      if (shares(inputs[in]) && !Declared(def, layout, o, static_cast<int>(in))) {
        return absl::InternalError(absl::StrCat(
            def.name, ": kernel returned output '", layout.OutputName(o),
            "' sharing memory with input '", layout.InputName(static_cast<int>(in)),
            "', which the op does not declare in-place"));
      }
    }
    for (size_t other = 0; other < out; ++other) {
      if (shares(outputs[other])) {
        return absl::InternalError(absl::StrCat(
            def.name, ": kernel returned outputs '", layout.OutputName(static_cast<int>(other)),
            "' and '", layout.OutputName(o), "' sharing memory"));
      }
    }
  }
  return absl::OkStatus();
}

// Inputs a row by shape lists one by one; a longer call (a variadic op over
// a model's parameters) is summed up instead.
constexpr size_t kProfileRowInputs = 8;

// The profile's row for a call by shape: "linear bf16 27648x1024 4096x1024
// 4096" (the op, the kernel's dtype, each input's dimensions), or for a
// call of more inputs "multi_tensor_adam f32 1017 inputs of 63082498
// elements" (what its time is spent on).
std::string ProfileRowByShape(absl::string_view op, DType dtype, absl::Span<const Tensor> inputs) {
  std::string row = absl::StrCat(op, " ", DTypeName(dtype));
  if (inputs.size() > kProfileRowInputs) {
    int64_t elements = 0;
    for (const Tensor& input : inputs) elements += input.num_elements();
    absl::StrAppend(&row, " ", inputs.size(), " inputs of ", elements, " elements");
    return row;
  }
  for (const Tensor& input : inputs) {
    absl::StrAppend(&row, " ", input.rank() == 0 ? "scalar" : absl::StrJoin(input.shape(), "x"));
  }
  return row;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> RunOp(absl::string_view op,
                                          absl::Span<const Tensor> inputs,
                                          const Attrs& attrs,
                                          std::optional<OpTarget> target,
                                          StreamHandle stream) {
  ScopedOpTimer timer(op);
  if (stream == nullptr) stream = CurrentStream();
  TFM_ASSIGN_OR_RETURN(std::shared_ptr<const OpDef> def, OpRegistry().Find(op));
  TFM_ASSIGN_OR_RETURN(const OpCallLayout layout, OpCallLayout::Create(*def, inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int index = static_cast<int>(i);
    if (!inputs[i].defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": input '", layout.InputName(index), "' is undefined"));
    }
    if (inputs[i].device() != inputs[0].device()) {
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": input '", layout.InputName(index), "' is on ", inputs[i].device().ToString(),
          " but '", layout.InputName(0), "' is on ", inputs[0].device().ToString()));
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
  if (timer.timing() && OpProfilingByShape()) {
    timer.set_row(ProfileRowByShape(op, target->dtype, inputs));
  }
  KernelContext context(*def, layout, inputs, attrs, target->device, target->dtype, stream);
  TFM_RETURN_IF_ERROR(CheckKernelDTypeInputs(context));
  if (def->validate) TFM_RETURN_IF_ERROR(def->validate(context));
  if (def->output_shapes) {
    TFM_ASSIGN_OR_RETURN(std::vector<Shape> shapes, def->output_shapes(context));
    TFM_CHECK(shapes.size() == static_cast<size_t>(layout.num_outputs()),
              "output_shapes must size every output");
    context.set_output_shapes(std::move(shapes));
  }
  TFM_RETURN_IF_ERROR((*kernel)->fn(context));
  for (int i = 0; i < layout.num_outputs(); ++i) {
    if (!context.outputs()[i].defined()) {
      return absl::InternalError(
          absl::StrCat(op, ": kernel did not produce output '", layout.OutputName(i), "'"));
    }
  }
  TFM_RETURN_IF_ERROR(CheckNoUndeclaredAliases(*def, layout, inputs, context.outputs()));
  if (timer.timing() && target->device.type == DeviceType::kCUDA && OpProfilingSynchronizes()) {
    TFM_RETURN_IF_ERROR(cuda::Synchronize(target->device.index));
  }
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

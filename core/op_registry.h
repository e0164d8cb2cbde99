// Ops and their kernels.
//
// An op is defined once (name, inputs, outputs, attributes, a validation
// function shared by all devices). Kernels are registered per
// (op, device type, dtype), so a CUDA kernel is added beside the CPU one
// without touching the op. RunOp validates the call and dispatches.
//
//   TFM_REGISTER_OP(OpDef{.name = "fill", .outputs = {"out"}, ...});
//   TFM_REGISTER_KERNEL("fill", DeviceType::kCPU, DType::kF32, FillCpu<float>);
//
// The kernel table alone says which dtypes a device supports: an op asked
// for a (device, dtype) without a kernel fails naming the kernels it has, so
// an op's validation never restates them.
//
// A variadic op takes a list of any length in one call (one launch over all
// of a model's parameters instead of one per tensor): the first
// OpDef::list_inputs of its inputs repeat once per list entry, followed once
// by the rest. Multi-tensor Adam's inputs are param, grad, m, v of entry 0,
// then of entry 1, ..., then grad_sum_of_squares.
#ifndef TFM_CORE_OP_REGISTRY_H_
#define TFM_CORE_OP_REGISTRY_H_

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/attrs.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/registry.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace tfm {

class KernelContext;

struct OpDef {
  std::string name;
  std::vector<std::string> inputs;   // Names, for messages.
  std::vector<std::string> outputs;  // Names, for messages.
  std::vector<std::string> attrs;    // Attribute names the op reads.
  std::string doc;
  // Checks shapes and attributes before any kernel runs; its errors name the
  // op and the shapes. May be empty.
  std::function<absl::Status(const KernelContext&)> validate;
  // Inputs whose dtype must be the kernel's (the dtype it was found by: the
  // first input's, or the OpTarget's). RunOp checks them before `validate`,
  // which is left with what is particular to the op (ids, masks, f32
  // statistics).
  std::vector<int> kernel_dtype_inputs = {};
  // The outputs' shapes from the inputs and attributes, run after `validate`
  // (TensorFlow's shape functions): computed once for every kernel of the
  // op, which then allocates with AllocateOutput(index, dtype). May be
  // empty, and then each kernel sizes its outputs.
  std::function<absl::StatusOr<std::vector<Shape>>(const KernelContext&)> output_shapes;
  // The aliasing rule: an output is a new tensor, never (a view of) an input,
  // so a caller may accumulate into or overwrite any result without touching
  // the op's inputs or its other results. Only the pairs listed here, for
  // ops documented as in-place, are exempt: {output index, input index}
  // where the output is that input, updated. RunOp enforces the rule.
  std::vector<std::pair<int, int>> in_place = {};
  // A variadic op (see the top of this file): inputs[0, list_inputs) are
  // one list entry's, repeated for every entry of the call, and
  // outputs[0, list_outputs) likewise; the others come once, after the
  // list. kernel_dtype_inputs and in_place index `inputs` and `outputs` as
  // written here, and a list member's rule holds for every entry (an
  // in-place pair of list members pairs an entry's output with the same
  // entry's input). 0: a fixed-arity op.
  int list_inputs = 0;
  int list_outputs = 0;
};

// Where the inputs and outputs of one call sit: for a variadic op, the
// flat positions of each list entry's tensors and their names in messages
// ("grad[3]"); for any other op, the OpDef's own order.
class OpCallLayout {
 public:
  // The layout of a call with `num_inputs` inputs, or InvalidArgument
  // naming the op and the inputs it expects.
  static absl::StatusOr<OpCallLayout> Create(const OpDef& def, size_t num_inputs);

  int list_size() const { return list_size_; }  // 0 for a fixed-arity op.
  int num_inputs() const;
  int num_outputs() const;
  // The flat index of OpDef input `def_index` (of list entry `entry` when
  // it is a list member; `entry` is ignored otherwise), and of an output.
  int input(int def_index, int entry = 0) const;
  int output(int def_index, int entry = 0) const;
  // The OpDef index of flat input or output `index`.
  int input_def_index(int index) const;
  int output_def_index(int index) const;
  // The list entry of a flat input or output, or -1 for one outside the list.
  int input_entry(int index) const;
  int output_entry(int index) const;
  // "grad[3]" for a list member, "total" for another input.
  std::string InputName(int index) const;
  std::string OutputName(int index) const;

 private:
  OpCallLayout(const OpDef* def, int list_size) : def_(def), list_size_(list_size) {}

  const OpDef* def_;
  int list_size_;
};

// Everything a kernel sees: inputs, attributes, where it runs, and the
// outputs it fills in.
class KernelContext {
 public:
  KernelContext(const OpDef& def, const OpCallLayout& layout, absl::Span<const Tensor> inputs,
                const Attrs& attrs, Device device, DType dtype, StreamHandle stream)
      : def_(def), layout_(layout), inputs_(inputs), attrs_(attrs), device_(device),
        dtype_(dtype), stream_(stream), outputs_(layout.num_outputs()) {}

  const OpDef& def() const { return def_; }
  const OpCallLayout& layout() const { return layout_; }
  const Tensor& input(int i) const { return inputs_[i]; }
  // A writable handle to input `i`, which the OpDef must declare in-place.
  Tensor in_place_input(int i) const;
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // A variadic op's list: its length, and OpDef input `def_index` of entry
  // `entry` (input(layout().input(def_index, entry))).
  int list_size() const { return layout_.list_size(); }
  const Tensor& list_input(int entry, int def_index) const {
    return inputs_[layout_.input(def_index, entry)];
  }
  const Attrs& attrs() const { return attrs_; }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }
  StreamHandle stream() const { return stream_; }
  ThreadPool* thread_pool() const { return ThreadPool::Default(); }

  // Allocates output `index` on this kernel's device. The pointer stays
  // valid for the whole kernel (outputs are sized from the OpDef up front).
  absl::StatusOr<Tensor*> AllocateOutput(int index, const Shape& shape, DType dtype);
  // The same, shaped by the OpDef's output_shapes (which the op must have).
  absl::StatusOr<Tensor*> AllocateOutput(int index, DType dtype);
  const Shape& output_shape(int index) const;
  void SetOutput(int index, Tensor tensor);  // index < def().outputs.size()
  std::vector<Tensor>& outputs() { return outputs_; }
  // Set by RunOp from OpDef::output_shapes.
  void set_output_shapes(std::vector<Shape> shapes) { output_shapes_ = std::move(shapes); }

  // InvalidArgument prefixed with the op name and input shapes (of a
  // variadic op: the list's length and the inputs outside the list, as
  // thousands of shapes would bury the message).
  absl::Status Error(absl::string_view message) const;
  // The same about list entry `entry` of a variadic op: names the entry and
  // gives its inputs' shapes.
  absl::Status EntryError(int entry, absl::string_view message) const;
  // Checks validations share: OK, or Error("<name> must be an f32 scalar");
  // OK, or Error("<name> must be [1] i32 on <where>") for a position held on
  // `device` (read there by a kernel that a captured CUDA graph replays).
  absl::Status RequireF32Scalar(const Tensor& tensor, absl::string_view name) const;
  absl::Status RequireDevicePosition(const Tensor& position, absl::string_view name,
                                     const Device& device, absl::string_view where) const;

 private:
  const OpDef& def_;
  const OpCallLayout& layout_;
  absl::Span<const Tensor> inputs_;
  const Attrs& attrs_;
  Device device_;
  DType dtype_;
  StreamHandle stream_;
  std::vector<Tensor> outputs_;
  std::vector<Shape> output_shapes_;  // From OpDef::output_shapes, if it has one.
};

using KernelFn = std::function<absl::Status(KernelContext&)>;

struct KernelDef {
  std::string op;
  DeviceType device;
  DType dtype;
  KernelFn fn;
};

// "layer_norm/CPU/f32": the kernel registry's key.
std::string KernelName(absl::string_view op, DeviceType device, DType dtype);

Registry<OpDef>& OpRegistry();
Registry<KernelDef>& KernelRegistry();

// Whether `op` has a kernel for `device` and `dtype` (an op may run another
// way where it has none: log_softmax_top_k composes two ops on CUDA).
bool HasKernel(absl::string_view op, DeviceType device, DType dtype);

// Where to run an op whose inputs do not say (e.g. a fill with no inputs).
struct OpTarget {
  Device device;
  DType dtype;
};

// Runs `op` on `inputs`. The kernel is chosen by `target` if given, else by
// the device and dtype of the first input; all inputs must be on one device.
// A variadic op's inputs are its list, entry by entry, then the inputs after
// the list; its outputs are ordered the same way.
absl::StatusOr<std::vector<Tensor>> RunOp(absl::string_view op,
                                          absl::Span<const Tensor> inputs,
                                          const Attrs& attrs = {},
                                          std::optional<OpTarget> target = std::nullopt,
                                          StreamHandle stream = nullptr);

namespace internal {
struct OpRegistrar {
  explicit OpRegistrar(OpDef def);
};
struct KernelRegistrar {
  KernelRegistrar(const char* op, DeviceType device, DType dtype, KernelFn fn);
  // One function for every dtype of the list (it reads KernelContext::dtype()).
  KernelRegistrar(const char* op, DeviceType device, std::initializer_list<DType> dtypes,
                  KernelFn fn);
};

template <typename T>
struct TypeTag {
  using type = T;
};

// Registers make(TypeTag<T>{}) for each storage type T under DTypeOf<T>.
template <typename... Ts>
struct TypedKernelRegistrar {
  template <typename MakeKernel>
  TypedKernelRegistrar(const char* op, DeviceType device, MakeKernel make) {
    (KernelRegistrar(op, device, DTypeOf<Ts>::value, make(TypeTag<Ts>{})), ...);
  }
};
}  // namespace internal

#define TFM_REGISTER_OP(...)                              \
  static ::tfm::internal::OpRegistrar TFM_UNIQUE_NAME(    \
      tfm_op_registrar_)(__VA_ARGS__)

#define TFM_REGISTER_KERNEL(op, device, dtype, fn)            \
  static ::tfm::internal::KernelRegistrar TFM_UNIQUE_NAME(    \
      tfm_kernel_registrar_)(op, device, dtype, fn)

// One kernel function for a list of dtypes:
//   TFM_REGISTER_KERNELS("fill", DeviceType::kCUDA, FillCuda, DType::kF32, DType::kI32);
#define TFM_REGISTER_KERNELS(op, device, fn, ...)                                 \
  static ::tfm::internal::KernelRegistrar TFM_UNIQUE_NAME(tfm_kernel_registrar_)( \
      op, device, {__VA_ARGS__}, fn)

// A kernel template instantiated for a list of storage types, each
// registered under its DTypeOf:
//   TFM_REGISTER_TYPED_KERNELS("relu", DeviceType::kCUDA, ReluCuda, float, Half, BFloat16);
#define TFM_REGISTER_TYPED_KERNELS(op, device, fn, ...)                      \
  static ::tfm::internal::TypedKernelRegistrar<__VA_ARGS__> TFM_UNIQUE_NAME( \
      tfm_kernel_registrar_)(                                                \
      op, device, [](auto type) -> ::tfm::KernelFn { return fn<typename decltype(type)::type>; })

}  // namespace tfm

#endif  // TFM_CORE_OP_REGISTRY_H_

// An example plugin: one op with a CPU kernel, and a layer built on it.
// Built as a shared library and loaded at run time with --plugin=...; it
// depends only on //core:plugin_api (headers), the engine provides the code.
#include <memory>
#include <vector>

#include "core/layer_registry.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace example {
namespace {

using ::tfm::Attrs;
using ::tfm::DType;
using ::tfm::KernelContext;
using ::tfm::Tensor;

// scale: y = alpha * x.
absl::Status ScaleCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(double alpha, context.attrs().Get<double>("alpha"));
  TFM_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, x.shape(), DType::kF32));
  const float* in = x.data<float>();
  float* out = y->data<float>();
  for (int64_t i = 0; i < x.num_elements(); ++i) out[i] = static_cast<float>(alpha) * in[i];
  return absl::OkStatus();
}

TFM_REGISTER_OP(tfm::OpDef{
    .name = "example_scale",
    .inputs = {"x"},
    .outputs = {"y"},
    .attrs = {"alpha"},
    .doc = "y = alpha * x (an example plugin op)",
    .validate =
        [](const KernelContext& context) {
          if (!context.attrs().Has("alpha")) return context.Error("needs attribute alpha");
          return absl::OkStatus();
        },
});
TFM_REGISTER_KERNEL("example_scale", tfm::DeviceType::kCPU, DType::kF32, ScaleCpu);

// A parameter-free layer: forward scales by alpha, backward by alpha too.
class ScaleLayer : public tfm::Layer {
 public:
  explicit ScaleLayer(double alpha) : alpha_(alpha) {}

  absl::StatusOr<std::vector<Tensor>> Forward(tfm::ForwardContext&,
                                              absl::Span<const Tensor> inputs) override {
    return tfm::RunOp("example_scale", inputs, Attrs{{"alpha", alpha_}});
  }
  absl::StatusOr<std::vector<Tensor>> Backward(absl::Span<const Tensor> grads) override {
    return tfm::RunOp("example_scale", grads, Attrs{{"alpha", alpha_}});
  }

 private:
  double alpha_;
};

TFM_REGISTER_LAYER(tfm::LayerDef{
    .name = "example_scale",
    .doc = "multiplies its input by attrs.alpha",
    .create = [](const tfm::LayerArgs& args) -> absl::StatusOr<std::unique_ptr<tfm::Layer>> {
      TFM_ASSIGN_OR_RETURN(double alpha, args.attrs.Get<double>("alpha"));
      return std::make_unique<ScaleLayer>(alpha);
    },
});

}  // namespace
}  // namespace example

// feed_forward (section 3.3): FFN(x) = max(0, x W1 + b1) W2 + b2, inner size
// d_ff, with the model's relu_dropout on the hidden activations (0 in the
// paper; tensor2tensor's option). Inputs {x}; backward {dx}. Parameters:
// fc1 [d_ff, d_model] and fc2 [d_model, d_ff] with biases (fairseq's names).
#include <memory>

#include "core/layer_registry.h"
#include "core/status_macros.h"
#include "layers/dense.h"
#include "layers/dropout_site.h"
#include "ops/relu/relu.h"

namespace tfm {
namespace {

class FeedForward : public Layer {
 public:
  static absl::StatusOr<std::unique_ptr<Layer>> Create(const LayerArgs& args) {
    auto layer = std::make_unique<FeedForward>();
    const int64_t d = args.model.d_model(), d_ff = args.model.d_ff();
    TFM_ASSIGN_OR_RETURN(layer->fc1_, Dense::Create(args, "fc1", d, d_ff));
    TFM_ASSIGN_OR_RETURN(layer->fc2_, Dense::Create(args, "fc2", d_ff, d));
    layer->relu_dropout_ = DropoutSite(args.model.relu_dropout());
    return std::unique_ptr<Layer>(std::move(layer));
  }

  absl::StatusOr<std::vector<Tensor>> Forward(ForwardContext& context,
                                              absl::Span<const Tensor> inputs) override {
    if (inputs.size() != 1) return absl::InvalidArgumentError("feed_forward takes {x}");
    // A decoding step, or a search's encoder: no dropout, nothing kept.
    if (DecodingCache* cache = context.cache != nullptr ? context.cache : context.products) {
      TFM_ASSIGN_OR_RETURN(Tensor hidden, fc1_.Step(*cache, inputs[0], /*relu=*/true));
      TFM_ASSIGN_OR_RETURN(Tensor y, fc2_.Step(*cache, hidden));
      return std::vector<Tensor>{y};
    }
    // The ReLU in fc1's product (a GEMM epilogue on CUDA). Only the dropped
    // activations are kept (fc2 keeps them anyway): they mask the backward
    // of both the dropout and the ReLU.
    TFM_ASSIGN_OR_RETURN(Tensor activated, fc1_.ForwardRelu(inputs[0]));
    TFM_ASSIGN_OR_RETURN(dropped_, relu_dropout_.Forward(context, activated));
    TFM_ASSIGN_OR_RETURN(Tensor y, fc2_.Forward(dropped_));
    return std::vector<Tensor>{y};
  }

  absl::StatusOr<std::vector<Tensor>> Backward(absl::Span<const Tensor> output_grads) override {
    return BackwardInto(output_grads, nullptr);
  }

  bool AddsInputGradient() const override { return true; }
  absl::StatusOr<std::vector<Tensor>> BackwardAdding(absl::Span<const Tensor> output_grads,
                                                     const Tensor& input_grad_sum) override {
    return BackwardInto(output_grads, &input_grad_sum);
  }

  std::vector<Parameter*> Parameters() override {
    std::vector<Parameter*> parameters;
    fc1_.AppendParameters(parameters);
    fc2_.AppendParameters(parameters);
    return parameters;
  }

 private:
  // dx made anew, or added into *sum (BackwardAdding) by fc1's GEMM.
  absl::StatusOr<std::vector<Tensor>> BackwardInto(absl::Span<const Tensor> output_grads,
                                                   const Tensor* sum) {
    TFM_ASSIGN_OR_RETURN(Tensor d_dropped, fc2_.Backward(output_grads[0]));
    // The dropout's and the ReLU's backward in one pass (ops/relu/relu.h):
    // a dropped element is 0 in dropped_, as is a negative one.
    TFM_ASSIGN_OR_RETURN(Tensor d_hidden,
                         ReluBackward(d_dropped, dropped_, relu_dropout_.keep_scale()));
    dropped_ = Tensor();
    TFM_ASSIGN_OR_RETURN(Tensor dx, fc1_.Backward(d_hidden, sum));
    return std::vector<Tensor>{dx};
  }

  Dense fc1_, fc2_;
  DropoutSite relu_dropout_;
  Tensor dropped_;  // The ReLU's output after dropout: the backward's mask.
};

TFM_REGISTER_LAYER(LayerDef{
    .name = "feed_forward",
    .doc = "position-wise ReLU feed-forward network (d_model -> d_ff -> d_model)",
    .create = FeedForward::Create,
});

}  // namespace
}  // namespace tfm

// A linear map y = x W^T + b with its parameters ("<name>.weight" [out, in],
// "<name>.bias" [out], as torch.nn.Linear), keeping its input for backward.
// The projections of attention and the feed-forward network are Denses.
#ifndef TFM_LAYERS_DENSE_H_
#define TFM_LAYERS_DENSE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "layers/decoding_cache.h"
#include "core/layer_registry.h"
#include "core/tensor.h"

namespace tfm {

class Dense {
 public:
  static absl::StatusOr<Dense> Create(const LayerArgs& args, absl::string_view name, int64_t in,
                                      int64_t out);

  // x [..., in] -> [..., out]; keeps x (for Backward) if `keep`. ForwardRelu:
  // max(0, that) in one op (Backward then takes the gradient past the ReLU).
  absl::StatusOr<Tensor> Forward(const Tensor& x, bool keep = true);
  absl::StatusOr<Tensor> ForwardRelu(const Tensor& x);
  // The same map in a decoding step (DecodingLinear: the weight packed once
  // per search on the CPU), with `relu` max(0, .) of it; keeps nothing.
  absl::StatusOr<Tensor> Step(DecodingCache& cache, const Tensor& x, bool relu = false) const;
  // Forward, or in a search's whole-sequence pass (ForwardContext::products)
  // Step through that cache.
  absl::StatusOr<Tensor> Project(const ForwardContext& context, const Tensor& x);
  // Adds dW and db into the gradients; returns dx, made anew, or added into
  // *dx_sum (shaped like x, in place, and returned) when given: an input
  // that feeds several projections sums its gradient without an add op.
  absl::StatusOr<Tensor> Backward(const Tensor& dout, const Tensor* dx_sum = nullptr);

  const Tensor& weight() const { return weight_.value; }
  const Tensor& bias() const { return bias_.value; }

  // For a product that computes this map with others (PackedProjections):
  // the weight and bias a pass in `dtype` reads (ValueFor), and adding that
  // product's share of dW and db into the gradients.
  absl::StatusOr<Tensor> WeightFor(DType dtype) const;
  absl::StatusOr<Tensor> BiasFor(DType dtype) const;
  absl::Status AccumulateGrads(const Tensor& dweight, const Tensor& dbias);

  void AppendParameters(std::vector<Parameter*>& out) {
    out.push_back(&weight_);
    out.push_back(&bias_);
  }

 private:
  Parameter weight_;
  Parameter bias_;
  Tensor x_;
};

}  // namespace tfm

#endif  // TFM_LAYERS_DENSE_H_

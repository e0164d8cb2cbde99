// Layer normalisation with its parameters ("<name>.weight" gain and
// "<name>.bias", as torch.nn.LayerNorm), keeping x (or the residual sum) and
// the row statistics for backward. eps is the model's layer_norm_epsilon.
#ifndef TFM_LAYERS_NORM_H_
#define TFM_LAYERS_NORM_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/layer_registry.h"
#include "core/rng.h"
#include "core/tensor.h"

namespace tfm {

class Norm {
 public:
  static absl::StatusOr<Norm> Create(const LayerArgs& args, absl::string_view name);

  // keep: what Backward needs (false in a decoding step).
  absl::StatusOr<Tensor> Forward(const Tensor& x, bool keep = true);
  // Adds the gain and bias gradients; returns dx.
  absl::StatusOr<Tensor> Backward(const Tensor& dout);

  // The post-norm residual LayerNorm(x + Dropout(h)) in one op
  // (ops/residual_layer_norm), the same values as Forward(x + Dropout(h));
  // the dropout (p = 0 for none) is passed again to BackwardResidual.
  absl::StatusOr<Tensor> ForwardResidual(const Tensor& x, const Tensor& h, double p,
                                         const PhiloxState& state, bool keep = true);
  struct ResidualGrads {
    Tensor dx;  // The gradient of x + Dropout(h).
    Tensor dh;  // dx through the dropout mask.
  };
  // Adds the gain and bias gradients.
  absl::StatusOr<ResidualGrads> BackwardResidual(const Tensor& dout, double p,
                                                 const PhiloxState& state);

  void AppendParameters(std::vector<Parameter*>& out) {
    out.push_back(&gain_);
    out.push_back(&bias_);
  }

 private:
  Parameter gain_;
  Parameter bias_;
  double eps_ = 0;
  Tensor x_, mean_, rstd_;
};

}  // namespace tfm

#endif  // TFM_LAYERS_NORM_H_

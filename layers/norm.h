// Layer normalisation with its parameters ("<name>.weight" gain and
// "<name>.bias", as torch.nn.LayerNorm), keeping x and the row statistics
// for backward. eps is the model's layer_norm_epsilon.
#ifndef TFM_LAYERS_NORM_H_
#define TFM_LAYERS_NORM_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/layer_registry.h"
#include "core/tensor.h"

namespace tfm {

class Norm {
 public:
  static absl::StatusOr<Norm> Create(const LayerArgs& args, absl::string_view name);

  absl::StatusOr<Tensor> Forward(const Tensor& x);
  // Adds the gain and bias gradients; returns dx.
  absl::StatusOr<Tensor> Backward(const Tensor& dout);

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

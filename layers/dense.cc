#include "layers/dense.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "layers/parameter_gradients.h"
#include "layers/parameter_init.h"
#include "ops/linear/linear.h"

namespace tfm {

absl::StatusOr<Dense> Dense::Create(const LayerArgs& args, absl::string_view name, int64_t in,
                                    int64_t out) {
  Dense dense;
  TFM_ASSIGN_OR_RETURN(dense.weight_, MakeParameter(args, absl::StrCat(name, ".weight"), {out, in},
                                                    ParameterInit::kXavierUniform));
  TFM_ASSIGN_OR_RETURN(
      dense.bias_, MakeParameter(args, absl::StrCat(name, ".bias"), {out}, ParameterInit::kZeros));
  return dense;
}

absl::StatusOr<Tensor> Dense::Forward(const Tensor& x, bool keep) {
  TFM_ASSIGN_OR_RETURN(const Tensor weight, ValueFor(weight_, x.dtype()));
  TFM_ASSIGN_OR_RETURN(const Tensor bias, ValueFor(bias_, x.dtype()));
  if (keep) x_ = x;
  return Linear(x, weight, bias);
}

absl::StatusOr<Tensor> Dense::ForwardRelu(const Tensor& x) {
  TFM_ASSIGN_OR_RETURN(const Tensor weight, ValueFor(weight_, x.dtype()));
  TFM_ASSIGN_OR_RETURN(const Tensor bias, ValueFor(bias_, x.dtype()));
  x_ = x;
  return LinearRelu(x, weight, bias);
}

absl::StatusOr<Tensor> Dense::Step(DecodingCache& cache, const Tensor& x, bool relu) const {
  if (x.dtype() != weight_.value.dtype()) {
    // A 16-bit search (decode.dtype): the copies rounded for its batch.
    TFM_ASSIGN_OR_RETURN(const Tensor weight, ValueFor(weight_, x.dtype()));
    TFM_ASSIGN_OR_RETURN(const Tensor bias, ValueFor(bias_, x.dtype()));
    return DecodingLinear(cache, &weight_.compute_copy, x, weight, bias, relu);
  }
  return DecodingLinear(cache, &weight_.value, x, weight_.value, bias_.value, relu);
}

absl::StatusOr<Tensor> Dense::Project(const ForwardContext& context, const Tensor& x) {
  if (context.products != nullptr) return Step(*context.products, x);
  return Forward(x);
}

absl::StatusOr<Tensor> Dense::WeightFor(DType dtype) const { return ValueFor(weight_, dtype); }
absl::StatusOr<Tensor> Dense::BiasFor(DType dtype) const { return ValueFor(bias_, dtype); }

absl::Status Dense::AccumulateGrads(const Tensor& dweight, const Tensor& dbias) {
  TFM_RETURN_IF_ERROR(AccumulateGrad(weight_, dweight));
  return AccumulateGrad(bias_, dbias);
}

absl::StatusOr<Tensor> Dense::Backward(const Tensor& dout, const Tensor* dx_sum) {
  TFM_ASSIGN_OR_RETURN(const Tensor weight, ValueFor(weight_, x_.dtype()));
  TFM_ASSIGN_OR_RETURN(LinearGrads grads, dx_sum != nullptr
                                              ? LinearBackwardAdding(dout, x_, weight, *dx_sum)
                                              : LinearBackward(dout, x_, weight));
  TFM_RETURN_IF_ERROR(AccumulateGrads(grads.dweight, grads.dbias));
  x_ = Tensor();
  return grads.dx;
}

}  // namespace tfm

#include "layers/parameter_init.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/shape.h"
#include "core/status_macros.h"
#include "ops/cast/cast.h"
#include "ops/fill/fill.h"
#include "ops/random/random.h"

namespace tfm {
namespace {

absl::StatusOr<Tensor> InitialValue(const LayerArgs& args, const std::string& name,
                                    const Shape& shape, ParameterInit init) {
  switch (init) {
    case ParameterInit::kZeros:
      return Fill(shape, 0.0, DType::kF32, args.device);
    case ParameterInit::kOnes:
      return Fill(shape, 1.0, DType::kF32, args.device);
    case ParameterInit::kXavierUniform:
    case ParameterInit::kScaledNormal:
      break;
  }
  if (args.init_rng == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("parameter ", name, " needs LayerArgs::init_rng for its random init"));
  }
  TFM_CHECK(shape.size() == 2, "random inits are for matrices");
  const PhiloxState state = args.init_rng->Reserve(NumElements(shape));
  if (init == ParameterInit::kXavierUniform) {
    const float bound = std::sqrt(6.0f / static_cast<float>(shape[0] + shape[1]));
    return RandomUniform(shape, state, -bound, bound, args.device);
  }
  return RandomNormal(shape, state, 0.0f, 1.0f / std::sqrt(static_cast<float>(shape[1])),
                      args.device);
}

}  // namespace

absl::StatusOr<Parameter> MakeParameter(const LayerArgs& args, absl::string_view name,
                                        const Shape& shape, ParameterInit init) {
  Parameter parameter;
  parameter.name = absl::StrCat(args.scope, name);
  if (args.load_for_decoding) {  // A checkpoint fills the value; no gradient.
    TFM_ASSIGN_OR_RETURN(parameter.value, Tensor::Empty(shape, DType::kF32, args.device));
    return parameter;
  }
  TFM_ASSIGN_OR_RETURN(parameter.value, InitialValue(args, parameter.name, shape, init));
  TFM_ASSIGN_OR_RETURN(parameter.grad, Fill(shape, 0.0, DType::kF32, args.device));
  return parameter;
}

absl::StatusOr<Tensor> ValueFor(const Parameter& parameter, DType dtype) {
  if (parameter.value.dtype() == dtype) return parameter.value;
  if (parameter.compute_copy.defined() && parameter.compute_copy.dtype() == dtype) {
    return parameter.compute_copy;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "parameter ", parameter.name, " is ", DTypeName(parameter.value.dtype()),
      " and has no ", DTypeName(dtype), " copy for a pass computing in ", DTypeName(dtype),
      " (the model rounds its copies before each pass: RoundComputeCopies)"));
}

absl::Status RoundComputeCopies(absl::Span<Parameter* const> parameters, DType dtype) {
  // One cast over every value to round (one launch on a GPU, not one per
  // parameter); values already in dtype need no copy.
  std::vector<Parameter*> rounded;
  std::vector<Tensor> values;
  for (Parameter* p : parameters) {
    p->compute_copy = Tensor();
    if (p->value.dtype() == dtype) continue;
    rounded.push_back(p);
    values.push_back(p->value);
  }
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> copies, CastAll(values, dtype));
  for (size_t i = 0; i < rounded.size(); ++i) rounded[i]->compute_copy = std::move(copies[i]);
  return absl::OkStatus();
}

}  // namespace tfm

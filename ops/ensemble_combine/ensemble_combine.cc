#include "ops/ensemble_combine/ensemble_combine.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidateMembers(const KernelContext& context) {
  if (context.list_size() == 0) return context.Error("needs at least one member");
  const Tensor& first = context.list_input(0, 0);
  if (first.rank() != 2) {
    return context.Error(
        absl::StrCat("member 0 must be a matrix [rows, n], got ", first.DebugString()));
  }
  for (int entry = 1; entry < context.list_size(); ++entry) {
    const Tensor& member = context.list_input(entry, 0);
    if (member.shape() != first.shape()) {
      return context.Error(absl::StrCat("member ", entry, " (", member.DebugString(),
                                        ") is not shaped as member 0 (", first.DebugString(), ")"));
    }
  }
  if (!context.device().is_cpu() && context.list_size() > kMaxEnsembleMembersCuda) {
    return context.Error(absl::StrCat(context.list_size(), " members: CUDA combines at most ",
                                      kMaxEnsembleMembersCuda));
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "ensemble_combine",
    .inputs = {"log_probs"},
    .outputs = {"combined"},
    .attrs = {"probability_mean"},
    .doc = "an ensemble's step: the members' log-probabilities combined elementwise, "
           "log(mean(exp(l_k))) (probability_mean) or mean(l_k)",
    .validate = ValidateMembers,
    .kernel_dtype_inputs = {0},
    .output_shapes = [](const KernelContext& context) -> absl::StatusOr<std::vector<Shape>> {
      return std::vector<Shape>{context.list_input(0, 0).shape()};
    },
    .list_inputs = 1,
});

}  // namespace

absl::StatusOr<Tensor> EnsembleCombine(absl::Span<const Tensor> members, bool probability_mean) {
  Attrs attrs;
  attrs.Set("probability_mean", probability_mean);
  TFM_ASSIGN_OR_RETURN(
      std::vector<Tensor> out,
      RunOp("ensemble_combine", std::vector<Tensor>(members.begin(), members.end()), attrs));
  return out[0];
}

}  // namespace tfm

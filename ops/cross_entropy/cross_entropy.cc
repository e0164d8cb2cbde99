#include "ops/cross_entropy/cross_entropy.h"

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidateLogitsAndTargets(const KernelContext& context) {
  const Tensor& logits = context.input(0);
  const Tensor& targets = context.input(1);
  if (logits.rank() != 2) return context.Error("logits must be [N, V]");
  if (targets.shape() != Shape{logits.dim(0)} ||
      (targets.dtype() != DType::kI32 && targets.dtype() != DType::kI64)) {
    return context.Error("targets must be i32 or i64 [N]");
  }
  TFM_ASSIGN_OR_RETURN(double epsilon, context.attrs().GetOr<double>("epsilon", 0.1));
  if (!(epsilon >= 0.0 && epsilon <= 1.0)) {
    return context.Error(absl::StrCat("epsilon ", epsilon, " is not in [0, 1]"));
  }
  return context.attrs().GetOr<int64_t>("padding_index", -1).status();
}

TFM_REGISTER_OP(OpDef{
    .name = "label_smoothed_cross_entropy",
    .inputs = {"logits", "targets"},
    .outputs = {"loss", "nll", "count", "lse"},
    .attrs = {"epsilon", "padding_index", "targets_checked"},
    .doc = "sum over tokens of (1 - eps) * nll + eps / V * sum_j -log p_j; padding ignored",
    .validate = ValidateLogitsAndTargets,
});

TFM_REGISTER_OP(OpDef{
    .name = "label_smoothed_cross_entropy_backward",
    .inputs = {"logits", "targets", "lse", "d_loss"},
    .outputs = {"d_logits"},
    .attrs = {"epsilon", "padding_index", "targets_checked"},
    .doc = "d_logits = d_loss * (softmax(logits) - smoothed one-hot(targets))",
    .validate =
        [](const KernelContext& context) {
          TFM_RETURN_IF_ERROR(ValidateLogitsAndTargets(context));
          const Tensor& lse = context.input(2);
          const Tensor& d_loss = context.input(3);
          if (lse.shape() != Shape{context.input(0).dim(0)} || lse.dtype() != DType::kF32) {
            return context.Error("lse must be f32 [N]");
          }
          return context.RequireF32Scalar(d_loss, "d_loss");
        },
});

Attrs CrossEntropyAttrs(const CrossEntropyOptions& options) {
  Attrs attrs;
  attrs.Set("epsilon", static_cast<double>(options.epsilon))
      .Set("padding_index", options.padding_index);
  if (options.targets_checked) attrs.Set("targets_checked", true);
  return attrs;
}

}  // namespace

absl::StatusOr<CrossEntropyOutput> LabelSmoothedCrossEntropy(const Tensor& logits,
                                                             const Tensor& targets,
                                                             const CrossEntropyOptions& options) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("label_smoothed_cross_entropy", {logits, targets},
                             CrossEntropyAttrs(options)));
  return CrossEntropyOutput{out[0], out[1], out[2], out[3]};
}

absl::StatusOr<Tensor> LabelSmoothedCrossEntropyBackward(const Tensor& logits,
                                                         const Tensor& targets, const Tensor& lse,
                                                         const Tensor& d_loss,
                                                         const CrossEntropyOptions& options) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("label_smoothed_cross_entropy_backward",
                             {logits, targets, lse, d_loss}, CrossEntropyAttrs(options)));
  return out[0];
}

}  // namespace tfm

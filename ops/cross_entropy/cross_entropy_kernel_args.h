// What the label_smoothed_cross_entropy kernels of every device read from
// their context, and how they name a bad target.
#ifndef TFM_OPS_CROSS_ENTROPY_CROSS_ENTROPY_KERNEL_ARGS_H_
#define TFM_OPS_CROSS_ENTROPY_CROSS_ENTROPY_KERNEL_ARGS_H_

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {

struct CrossEntropyKernelArgs {
  int64_t rows, vocab, padding_index;
  float epsilon;
  bool targets_checked;  // CrossEntropyOptions::targets_checked.
};

inline absl::StatusOr<CrossEntropyKernelArgs> ReadCrossEntropyKernelArgs(
    const KernelContext& context) {
  CrossEntropyKernelArgs args;
  args.rows = context.input(0).dim(0);
  args.vocab = context.input(0).dim(1);
  TFM_ASSIGN_OR_RETURN(double epsilon, context.attrs().GetOr<double>("epsilon", 0.1));
  args.epsilon = static_cast<float>(epsilon);
  TFM_ASSIGN_OR_RETURN(args.padding_index, context.attrs().GetOr<int64_t>("padding_index", -1));
  TFM_ASSIGN_OR_RETURN(args.targets_checked,
                       context.attrs().GetOr<bool>("targets_checked", false));
  return args;
}

// The error of a target neither in [0, vocab) nor the padding index.
inline absl::Status BadTargetError(const KernelContext& context, const CrossEntropyKernelArgs& args,
                                   int64_t row, int64_t target) {
  return context.Error(absl::StrCat("target ", target, " of row ", row, " is outside [0, ",
                                    args.vocab, ") and is not the padding index ",
                                    args.padding_index));
}

}  // namespace tfm

#endif  // TFM_OPS_CROSS_ENTROPY_CROSS_ENTROPY_KERNEL_ARGS_H_

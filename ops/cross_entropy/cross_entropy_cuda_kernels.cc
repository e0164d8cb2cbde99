// Registers label_smoothed_cross_entropy's CUDA kernels (linked only in
// builds with CUDA): f32, f16 and bf16 logits (and d_logits), i32 or i64 targets;
// the loss terms, the lse and d_loss stay f32.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cross_entropy/cross_entropy_cuda.h"
#include "ops/cross_entropy/cross_entropy_kernel_args.h"
#include "ops/cuda_launch_status.h"

namespace tfm {
namespace {

// The launch's error, else the CPU kernel's error for a bad target.
absl::Status LaunchAndTargetStatus(const KernelContext& context, const CrossEntropyKernelArgs& args,
                                   const char* error, const TargetCheck& check) {
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(context, error));
  if (check.bad_row >= 0) return BadTargetError(context, args, check.bad_row, check.bad_target);
  return absl::OkStatus();
}

// Where the launcher reads its target check back into: nowhere (no wait)
// when the caller checked the targets.
TargetCheck* CheckFor(const CrossEntropyKernelArgs& args, TargetCheck* check) {
  return args.targets_checked ? nullptr : check;
}

CrossEntropyCudaShape CudaShape(const CrossEntropyKernelArgs& args) {
  return CrossEntropyCudaShape{args.rows, args.vocab, args.epsilon, args.padding_index};
}

absl::StatusOr<Tensor> Workspace(const KernelContext& context, int64_t words) {
  return Tensor::Empty({words}, DType::kI64, context.device(), context.stream());
}

template <typename T, typename Target>
absl::Status CrossEntropyCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const CrossEntropyKernelArgs args, ReadCrossEntropyKernelArgs(context));
  TFM_ASSIGN_OR_RETURN(Tensor * loss, context.AllocateOutput(0, {}, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * nll, context.AllocateOutput(1, {}, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * count, context.AllocateOutput(2, {}, DType::kI64));
  TFM_ASSIGN_OR_RETURN(Tensor * lse, context.AllocateOutput(3, {args.rows}, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor workspace, Workspace(context, CrossEntropyWorkspaceWords(args.rows)));
  TargetCheck check;
  const char* error = LaunchCrossEntropy<T, Target>(
      context.input(0).data<T>(), context.input(1).data<Target>(), CudaShape(args),
      loss->data<float>(), nll->data<float>(), count->data<int64_t>(), lse->data<float>(),
      reinterpret_cast<uint64_t*>(workspace.data<int64_t>()), CheckFor(args, &check),
      context.stream());
  return LaunchAndTargetStatus(context, args, error, check);
}

template <typename T, typename Target>
absl::Status CrossEntropyBackwardCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const CrossEntropyKernelArgs args, ReadCrossEntropyKernelArgs(context));
  TFM_ASSIGN_OR_RETURN(Tensor * d_logits,
                       context.AllocateOutput(0, {args.rows, args.vocab}, context.dtype()));
  TFM_ASSIGN_OR_RETURN(Tensor flag, Workspace(context, 1));
  TargetCheck check;
  const char* error = LaunchCrossEntropyBackward<T, Target>(
      context.input(0).data<T>(), context.input(1).data<Target>(), context.input(2).data<float>(),
      context.input(3).data<float>(), CudaShape(args), d_logits->data<T>(),
      reinterpret_cast<uint64_t*>(flag.data<int64_t>()), CheckFor(args, &check),
      context.stream());
  return LaunchAndTargetStatus(context, args, error, check);
}

// Kernels are found by the logits' dtype; the targets' dtype picks the
// instantiation.
template <typename T>
absl::Status CrossEntropyByTargets(KernelContext& context) {
  return context.input(1).dtype() == DType::kI64 ? CrossEntropyCuda<T, int64_t>(context)
                                                 : CrossEntropyCuda<T, int32_t>(context);
}

template <typename T>
absl::Status CrossEntropyBackwardByTargets(KernelContext& context) {
  return context.input(1).dtype() == DType::kI64 ? CrossEntropyBackwardCuda<T, int64_t>(context)
                                                 : CrossEntropyBackwardCuda<T, int32_t>(context);
}

TFM_REGISTER_TYPED_KERNELS("label_smoothed_cross_entropy", DeviceType::kCUDA, CrossEntropyByTargets,
                           float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("label_smoothed_cross_entropy_backward", DeviceType::kCUDA,
                           CrossEntropyBackwardByTargets, float, Half, BFloat16);

}  // namespace
}  // namespace tfm

// Registers label_smoothed_cross_entropy's CUDA kernels (linked only in
// builds with CUDA): f32 and bf16 logits (and d_logits), i32 or i64 targets;
// the loss terms, the lse and d_loss stay f32.
#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cross_entropy/cross_entropy_cuda.h"
#include "ops/cross_entropy/cross_entropy_kernel_args.h"

namespace tfm {
namespace {

// InternalError for a CUDA failure, else the CPU kernel's error for a bad
// target.
absl::Status LaunchStatus(const KernelContext& context, const CrossEntropyKernelArgs& args,
                          const char* error, const TargetCheck& check) {
  if (error != nullptr) return absl::InternalError(absl::StrCat(context.def().name, ": ", error));
  if (check.bad_row >= 0) return BadTargetError(context, args, check.bad_row, check.bad_target);
  return absl::OkStatus();
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
      reinterpret_cast<uint64_t*>(workspace.data<int64_t>()), &check, context.stream());
  return LaunchStatus(context, args, error, check);
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
      reinterpret_cast<uint64_t*>(flag.data<int64_t>()), &check, context.stream());
  return LaunchStatus(context, args, error, check);
}

// Kernels are found by the logits' dtype; the targets' dtype picks the
// instantiation.
template <typename T, template <typename, typename> class Kernel>
absl::Status ByTargetDType(KernelContext& context) {
  return context.input(1).dtype() == DType::kI64 ? Kernel<T, int64_t>::Run(context)
                                                 : Kernel<T, int32_t>::Run(context);
}

template <typename T, typename Target>
struct Forward {
  static absl::Status Run(KernelContext& context) { return CrossEntropyCuda<T, Target>(context); }
};
template <typename T, typename Target>
struct Backward {
  static absl::Status Run(KernelContext& context) {
    return CrossEntropyBackwardCuda<T, Target>(context);
  }
};

#define TFM_REGISTER_CROSS_ENTROPY_CUDA(dtype, T)                                        \
  TFM_REGISTER_KERNEL("label_smoothed_cross_entropy", DeviceType::kCUDA, dtype,          \
                      (ByTargetDType<T, Forward>));                                      \
  TFM_REGISTER_KERNEL("label_smoothed_cross_entropy_backward", DeviceType::kCUDA, dtype, \
                      (ByTargetDType<T, Backward>))
TFM_REGISTER_CROSS_ENTROPY_CUDA(DType::kF32, float);
TFM_REGISTER_CROSS_ENTROPY_CUDA(DType::kBF16, BFloat16);

}  // namespace
}  // namespace tfm

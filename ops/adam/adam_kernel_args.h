// The constants of one Adam step, shared by the kernels of every device
// (the CUDA launchers take them too).
#ifndef TFM_OPS_ADAM_ADAM_KERNEL_ARGS_H_
#define TFM_OPS_ADAM_ADAM_KERNEL_ARGS_H_

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace tfm {

// param = param * decay - step_size * m / (sqrt(v) / correction2_sqrt + eps)
// after the moment updates, with the bias corrections folded into two
// constants; decay is 1 - lr * weight_decay (decoupled weight decay, as
// torch.optim.AdamW), exactly 1 without it, which leaves param's bits alone.
struct AdamStep {
  float decay;
  float step_size;
  float correction2_sqrt;
  float beta1, beta2;
  float one_minus_beta1, one_minus_beta2;
  float eps;
};

// Bias corrections in double, as torch computes them in Python floats.
inline AdamStep MakeAdamStep(double lr, double beta1, double beta2, double eps, int64_t step,
                             double weight_decay) {
  const double t = static_cast<double>(step);
  return AdamStep{
      static_cast<float>(1.0 - lr * weight_decay),
      static_cast<float>(lr / (1.0 - std::pow(beta1, t))),
      static_cast<float>(std::sqrt(1.0 - std::pow(beta2, t))),
      static_cast<float>(beta1),
      static_cast<float>(beta2),
      static_cast<float>(1.0 - beta1),
      static_cast<float>(1.0 - beta2),
      static_cast<float>(eps),
  };
}

// The factor that clips gradients whose squares sum to `sum_of_squares` to
// a global norm of at most max_norm (0: no clipping), exactly as ClipGradNorm
// (ops/adam/grad_norm.h) computes it, torch.nn.utils.clip_grad_norm_'s
// max_norm / (norm + 1e-6) in double, rounded once to f32: the multi-tensor
// update multiplies each gradient by it, as scale_in_place would. A NaN
// norm leaves the gradients alone, as ClipGradNorm does.
TFM_HOST_DEVICE float ClipFactor(float sum_of_squares, double max_norm) {
  if (!(max_norm > 0)) return 1.0f;
  const double norm = sqrt(static_cast<double>(sum_of_squares));
  if (norm != norm) return 1.0f;
  const double coefficient = max_norm / (norm + 1e-6);
  return coefficient < 1.0 ? static_cast<float>(coefficient) : 1.0f;
}

// multi_tensor_adam leaves everything as it was when its gradients' sum of
// squares or its guard (the trainer's loss) is not finite: a non-finite
// update skipped on the device, with no read by the host. Either pointer
// may be nullptr (adam, which has neither).
TFM_HOST_DEVICE bool SkipsUpdate(const float* sum_of_squares, const float* guard) {
  // x - x is NaN exactly when x is infinite or NaN.
  return (sum_of_squares != nullptr && !(*sum_of_squares - *sum_of_squares == 0.0f)) ||
         (guard != nullptr && !(*guard - *guard == 0.0f));
}


}  // namespace tfm

// The readers of a kernel's call need the op registry, which nvcc (compiling
// adam_cuda.cu, which needs only AdamStep) is not given.
#ifndef __CUDACC__
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {

inline absl::StatusOr<AdamStep> ReadAdamStep(const KernelContext& context) {
  const Attrs& attrs = context.attrs();
  TFM_ASSIGN_OR_RETURN(double lr, attrs.Get<double>("lr"));
  TFM_ASSIGN_OR_RETURN(double beta1, attrs.Get<double>("beta1"));
  TFM_ASSIGN_OR_RETURN(double beta2, attrs.Get<double>("beta2"));
  TFM_ASSIGN_OR_RETURN(double eps, attrs.Get<double>("eps"));
  TFM_ASSIGN_OR_RETURN(int64_t step, attrs.Get<int64_t>("step"));
  // Optional: callers from before it get plain Adam.
  TFM_ASSIGN_OR_RETURN(double weight_decay, attrs.GetOr<double>("weight_decay", 0.0));
  return MakeAdamStep(lr, beta1, beta2, eps, step, weight_decay);
}

// One tensor's state as a kernel sees it: `count` elements of each array.
struct AdamEntry {
  float* param;
  const float* grad;
  float* m;
  float* v;
  int64_t count;
};

// The tensors of a call of adam (one) or multi_tensor_adam (its list), and
// the factor each gradient is multiplied by as it is read: multi_tensor_adam
// reads its clip factor (ClipFactor) on the device, so a kernel gets a
// pointer to the gradients' sum of squares (nullptr: a factor of 1), and
// the guard that, with it, decides whether to skip (SkipsUpdate).
struct AdamCall {
  std::vector<AdamEntry> entries;
  const float* grad_sum_of_squares = nullptr;
  const float* skip_guard = nullptr;
  double max_norm = 0;
};

inline absl::StatusOr<AdamCall> ReadAdamCall(const KernelContext& context) {
  const OpCallLayout& layout = context.layout();
  const bool listed = context.def().list_inputs > 0;
  AdamCall call;
  const int entries = listed ? context.list_size() : 1;
  call.entries.reserve(entries);
  for (int entry = 0; entry < entries; ++entry) {
    call.entries.push_back(AdamEntry{
        context.in_place_input(layout.input(0, entry)).data<float>(),
        context.input(layout.input(1, entry)).data<float>(),
        context.in_place_input(layout.input(2, entry)).data<float>(),
        context.in_place_input(layout.input(3, entry)).data<float>(),
        context.input(layout.input(0, entry)).num_elements()});
  }
  if (listed) {
    call.grad_sum_of_squares = context.input(layout.input(4)).data<float>();
    call.skip_guard = context.input(layout.input(5)).data<float>();
    TFM_ASSIGN_OR_RETURN(call.max_norm, context.attrs().Get<double>("max_norm"));
  }
  return call;
}

// In place: the outputs are the updated inputs, param, m and v per entry.
inline void HandBackAdamState(KernelContext& context) {
  const OpCallLayout& layout = context.layout();
  const int entries = context.def().list_inputs > 0 ? context.list_size() : 1;
  for (int entry = 0; entry < entries; ++entry) {
    context.SetOutput(layout.output(0, entry), context.input(layout.input(0, entry)));
    context.SetOutput(layout.output(1, entry), context.input(layout.input(2, entry)));
    context.SetOutput(layout.output(2, entry), context.input(layout.input(3, entry)));
  }
}

}  // namespace tfm
#endif  // __CUDACC__

#endif  // TFM_OPS_ADAM_ADAM_KERNEL_ARGS_H_

#include "ops/adam/grad_norm.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "ops/fill/fill.h"

namespace tfm {
namespace {

// Accumulating, so that a global norm over many tensors costs one read of
// the total (one device synchronisation), not one per tensor: on an H100,
// 64 reads back took 1.76 ms against PyTorch's 0.26 ms for the whole norm.
TFM_REGISTER_OP(OpDef{
    .name = "sum_of_squares",
    .inputs = {"x", "total"},
    .outputs = {"total"},
    .doc = "total += sum of x^2 (total: f32 [] on x's device; each x summed in double), in place",
    .validate =
        [](const KernelContext& context) {
          const Tensor& total = context.input(1);
          if (total.dtype() != DType::kF32 || total.rank() != 0) {
            return context.Error("total must be an f32 scalar");
          }
          if (!(total.device() == context.input(0).device())) {
            return context.Error("total must be on x's device");
          }
          return absl::OkStatus();
        },
    .in_place = {{0, 1}},
});

TFM_REGISTER_OP(OpDef{
    .name = "scale_in_place",
    .inputs = {"x"},
    .outputs = {"x"},
    .attrs = {"factor"},
    .doc = "x *= factor, in place",
    .validate =
        [](const KernelContext& context) {
          TFM_ASSIGN_OR_RETURN(double factor, context.attrs().Get<double>("factor"));
          if (!std::isfinite(factor)) return context.Error("factor must be finite");
          return absl::OkStatus();
        },
    .in_place = {{0, 0}},
});

}  // namespace

absl::StatusOr<double> GlobalGradNorm(absl::Span<const Tensor> grads) {
  double total = 0.0;
  // One running total per run of gradients on the same device, read back
  // (a synchronisation on a GPU) when the device changes and at the end.
  Tensor device_total;
  auto read_back = [&]() -> absl::Status {
    if (!device_total.defined()) return absl::OkStatus();
    TFM_ASSIGN_OR_RETURN(Tensor host, CopyToDevice(device_total, Device::Cpu()));
    total += host.data<float>()[0];
    device_total = Tensor();
    return absl::OkStatus();
  };
  for (const Tensor& grad : grads) {
    if (device_total.defined() && !(device_total.device() == grad.device())) {
      TFM_RETURN_IF_ERROR(read_back());
    }
    if (!device_total.defined()) {
      TFM_ASSIGN_OR_RETURN(device_total, Fill({}, 0.0, DType::kF32, grad.device()));
    }
    TFM_RETURN_IF_ERROR(RunOp("sum_of_squares", {grad, device_total}).status());
  }
  TFM_RETURN_IF_ERROR(read_back());
  return std::sqrt(total);
}

absl::StatusOr<double> ClipGradNorm(absl::Span<const Tensor> grads, double max_norm,
                                    bool error_if_nonfinite) {
  if (!(max_norm > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat("clip_grad_norm: max_norm ", max_norm,
                                                   " must be > 0"));
  }
  TFM_ASSIGN_OR_RETURN(double norm, GlobalGradNorm(grads));
  if (!std::isfinite(norm)) {
    if (error_if_nonfinite) {
      return absl::InvalidArgumentError(
          absl::StrCat("clip_grad_norm: the total norm of ", grads.size(),
                       " gradients is ", norm));
    }
    if (std::isnan(norm)) return norm;
  }
  const double coefficient = max_norm / (norm + 1e-6);
  if (coefficient < 1.0) {
    Attrs attrs;
    attrs.Set("factor", coefficient);
    for (const Tensor& grad : grads) {
      TFM_RETURN_IF_ERROR(RunOp("scale_in_place", {grad}, attrs).status());
    }
  }
  return norm;
}

}  // namespace tfm

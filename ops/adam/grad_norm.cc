#include "ops/adam/grad_norm.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"

namespace tfm {
namespace {

// Over a list, so that a global norm over a model's few hundred gradients
// is one launch and one value on the device, read back (a synchronisation
// on a GPU) only by whoever needs it on the host: on an H100, 64 reads
// back, one per tensor, took 1.76 ms against PyTorch's 0.26 ms for the
// whole norm, and the multi-tensor Adam update reads the sum on the device.
TFM_REGISTER_OP(OpDef{
    .name = "multi_tensor_sum_of_squares",
    .inputs = {"x"},
    .outputs = {"sum_of_squares"},
    .doc = "sum over a list of tensors of every element's square (f32 [] on their device; each "
           "tensor summed in double, the tensors' sums added in list order in f32)",
    .kernel_dtype_inputs = {0},
    .list_inputs = 1,
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

absl::StatusOr<Tensor> GradSumOfSquares(absl::Span<const Tensor> grads) {
  if (grads.empty()) {
    return absl::InvalidArgumentError("GradSumOfSquares: no gradients (its device is unknown)");
  }
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> sum, RunOp("multi_tensor_sum_of_squares", grads));
  return sum[0];
}

absl::StatusOr<double> ReadSumOfSquares(const Tensor& sum_of_squares) {
  TFM_ASSIGN_OR_RETURN(Tensor host, CopyToDevice(sum_of_squares, Device::Cpu()));
  return host.data<float>()[0];
}

absl::StatusOr<double> GlobalGradNorm(absl::Span<const Tensor> grads) {
  double total = 0.0;
  // One launch per run of gradients on the same device, read back (a
  // synchronisation on a GPU) when the device changes and at the end.
  size_t begin = 0;
  while (begin < grads.size()) {
    size_t end = begin + 1;
    while (end < grads.size() && grads[end].device() == grads[begin].device()) ++end;
    TFM_ASSIGN_OR_RETURN(const Tensor sum, GradSumOfSquares(grads.subspan(begin, end - begin)));
    TFM_ASSIGN_OR_RETURN(const double sum_on_host, ReadSumOfSquares(sum));
    total += sum_on_host;
    begin = end;
  }
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
  if (coefficient < 1.0) TFM_RETURN_IF_ERROR(ScaleInPlace(grads, coefficient));
  return norm;
}

absl::Status ScaleInPlace(absl::Span<const Tensor> tensors, double factor) {
  Attrs attrs;
  attrs.Set("factor", factor);
  for (const Tensor& tensor : tensors) {
    TFM_RETURN_IF_ERROR(RunOp("scale_in_place", {tensor}, attrs).status());
  }
  return absl::OkStatus();
}

}  // namespace tfm

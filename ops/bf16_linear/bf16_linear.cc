#include "ops/bf16_linear/bf16_linear.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/cpu_features.h"
#include "core/environment_report.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/matmul/gemm_bf16_cpu.h"

namespace tfm {
namespace {

absl::Status ValidatePack(const KernelContext& context) {
  const Tensor& weight = context.input(0);
  if (weight.rank() != 2) return context.Error("weight must be [out, in]");
  return absl::OkStatus();
}

absl::Status ValidateBf16Linear(const KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& packed = context.input(1);
  TFM_ASSIGN_OR_RETURN(const int64_t out, context.attrs().Get<int64_t>("out_features"));
  TFM_RETURN_IF_ERROR(context.attrs().GetOr<bool>("relu", false).status());
  TFM_ASSIGN_OR_RETURN(const int64_t kernel, context.attrs().GetOr<int64_t>("kernel", -1));
  if (kernel != -1) {
    const std::vector<Bf16LinearKernel> runs = Bf16LinearKernelsThisCpuRuns();
    if (std::find(runs.begin(), runs.end(), static_cast<Bf16LinearKernel>(kernel)) ==
        runs.end()) {
      return context.Error(absl::StrCat("kernel ", kernel, " is not one this CPU runs"));
    }
  }
  if (x.rank() < 1 || x.dtype() != DType::kF32) return context.Error("x must be f32 [..., in]");
  if (packed.rank() != 3 || packed.dtype() != DType::kBF16 ||
      packed.dim(2) != 2 * kBf16WeightPanel) {
    return context.Error("packed must be bf16 [panels, inputs / 2, 32] (pack_bf16_linear_weight)");
  }
  const int64_t in = x.dim(-1);
  if (in < 1 || Bf16PackedWeightInputs(in) != 2 * packed.dim(1)) {
    return context.Error(absl::StrCat("x has ", in, " inputs; the packed weight holds ",
                                      2 * packed.dim(1), " (rounded up to 32)"));
  }
  if (out < 1 || Bf16PackedWeightRows(out) != packed.dim(0) * kBf16WeightPanel) {
    return context.Error(absl::StrCat("out_features ", out, " does not fill ", packed.dim(0),
                                      " panels of ", kBf16WeightPanel,
                                      " columns (rounded up to 32)"));
  }
  if (context.num_inputs() == 3) {
    const Tensor& bias = context.input(2);
    if (bias.rank() != 1 || bias.dim(0) != out || bias.dtype() != DType::kF32) {
      return context.Error("bias must be f32 [out_features]");
    }
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "pack_bf16_linear_weight",
    .inputs = {"weight"},
    .outputs = {"packed"},
    .doc = "weight [out, in] f32 rounded to bf16 in panels of 16 columns of input pairs, "
           "[np / 16, kp / 2, 32], for bf16_linear",
    .validate = ValidatePack,
});

TFM_REGISTER_OP(OpDef{
    .name = "bf16_linear",
    .inputs = {"x", "packed", "bias"},
    .outputs = {"out"},
    .attrs = {"out_features", "relu", "kernel"},
    .doc = "x W^T + b with x and W rounded to bf16 and f32 sums, W packed by "
           "pack_bf16_linear_weight (relu: then max(0, .))",
    .validate = ValidateBf16Linear,
    .kernel_dtype_inputs = {0, 2},
});

TFM_REGISTER_OP(OpDef{
    .name = "bf16_linear_no_bias",
    .inputs = {"x", "packed"},
    .outputs = {"out"},
    .attrs = {"out_features", "relu", "kernel"},
    .doc = "x W^T with x and W rounded to bf16 and f32 sums, W packed by "
           "pack_bf16_linear_weight (relu: then max(0, .))",
    .validate = ValidateBf16Linear,
    .kernel_dtype_inputs = {0},
});

}  // namespace

bool Bf16LinearSupported(const Tensor& weight) {
  return weight.defined() && weight.device().is_cpu() && weight.dtype() == DType::kF32 &&
         weight.rank() == 2;
}

const char* Bf16LinearKernelName(Bf16LinearKernel kernel) {
  switch (kernel) {
    case Bf16LinearKernel::kF32OfPairs:
      return "f32_of_pairs";
    case Bf16LinearKernel::kAvx512Bf16:
      return "avx512_bf16";
    case Bf16LinearKernel::kAmxBf16:
      return "amx_bf16";
  }
  return "unknown";
}

std::vector<Bf16LinearKernel> Bf16LinearKernelsThisCpuRuns() {
  std::vector<Bf16LinearKernel> kernels = {Bf16LinearKernel::kF32OfPairs};
  // TFM_CPU_ISA=avx2 caps our kernels at AVX2: no AVX-512 instructions.
  if (HostCpuFeatures().avx512_bf16 && ActiveCpuIsa() == CpuIsa::kAvx512) {
    kernels.push_back(Bf16LinearKernel::kAvx512Bf16);
  }
  if (Bf16ProductsOnAmx()) kernels.push_back(Bf16LinearKernel::kAmxBf16);
  return kernels;
}

namespace {

// "f32_of_pairs, avx512_bf16, ...": the kernels' names, for messages.
std::string KernelNames(const std::vector<Bf16LinearKernel>& kernels) {
  std::vector<std::string> names;
  for (Bf16LinearKernel kernel : kernels) names.push_back(Bf16LinearKernelName(kernel));
  return absl::StrJoin(names, ", ");
}

// The fastest kernel, or the one TFM_BF16_KERNEL names where this CPU runs
// it (to time one CPU's kernels against each other: the vdpbf16ps kernel
// of a Zen 4 on an AMX Xeon).
Bf16LinearKernel ChooseActiveKernel() {
  const std::vector<Bf16LinearKernel> runs = Bf16LinearKernelsThisCpuRuns();
  const char* asked = std::getenv("TFM_BF16_KERNEL");
  if (asked == nullptr || *asked == '\0') return runs.back();
  for (Bf16LinearKernel kernel : runs) {
    if (absl::AsciiStrToLower(asked) == Bf16LinearKernelName(kernel)) return kernel;
  }
  std::fprintf(stderr, "warning: TFM_BF16_KERNEL=%s is not a bf16 kernel this CPU runs (%s); "
               "using %s\n", asked, KernelNames(runs).c_str(), Bf16LinearKernelName(runs.back()));
  return runs.back();
}

// --list, training logs and benchmarks show which bf16 kernel runs.
const internal::EnvironmentLineRegistrar bf16_line("bf16 decoding kernel", [] {
  return absl::StrCat(Bf16LinearKernelName(), " (this CPU runs ",
                      KernelNames(Bf16LinearKernelsThisCpuRuns()), ")");
});

}  // namespace

Bf16LinearKernel ActiveBf16LinearKernel() {
  static const Bf16LinearKernel active = ChooseActiveKernel();
  return active;
}

const char* Bf16LinearKernelName() { return Bf16LinearKernelName(ActiveBf16LinearKernel()); }

absl::StatusOr<Tensor> PackBf16LinearWeight(const Tensor& weight) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("pack_bf16_linear_weight", {weight}));
  return out[0];
}

absl::StatusOr<Tensor> Bf16Linear(const Tensor& x, const Tensor& packed, int64_t out_features,
                                  const std::optional<Tensor>& bias, bool relu,
                                  std::optional<Bf16LinearKernel> kernel) {
  Attrs attrs;
  attrs.Set("out_features", out_features);
  if (relu) attrs.Set("relu", true);
  if (kernel.has_value()) attrs.Set("kernel", static_cast<int64_t>(*kernel));
  if (bias.has_value()) {
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("bf16_linear", {x, packed, *bias}, attrs));
    return out[0];
  }
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("bf16_linear_no_bias", {x, packed}, attrs));
  return out[0];
}

}  // namespace tfm

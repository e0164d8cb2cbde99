#include "ops/quantized_linear/quantized_linear.h"

#include <atomic>
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
#include "ops/quantized_linear/int8_panels.h"
#include "ops/quantized_linear/int8_product_sample.h"

namespace tfm {
namespace {

// The int32 sums stay exact while 255 x 127 x in < 2^31.
constexpr int64_t kMaxInFeatures = 65536;

constexpr Int8Kernel kAllKernels[] = {Int8Kernel::kScalar, Int8Kernel::kAvx2,
                                      Int8Kernel::kAvxVnni, Int8Kernel::kAvx512Vnni,
                                      Int8Kernel::kAmxInt8};

// The AMX kernel's stand-in for tests (SetInt8AmxStandInForTesting), or
// null.
std::atomic<Int8PanelsFn>& AmxStandIn() {
  static std::atomic<Int8PanelsFn> stand_in{nullptr};
  return stand_in;
}

// The CPU has AMX-INT8, the tiles are ours, and AVX-512 VNNI (the AMX
// kernel's finish and its fallback) runs.
bool HostHasAmx() {
  const CpuFeatures& f = HostCpuFeatures();
  return f.amx_int8 && f.avx512_vnni;
}

bool HostRuns(Int8Kernel kernel) {
  const CpuFeatures& f = HostCpuFeatures();
  switch (kernel) {
    case Int8Kernel::kScalar:
      return true;
    case Int8Kernel::kAvx2:
      return f.avx2;
    case Int8Kernel::kAvxVnni:
      return f.avx_vnni;
    case Int8Kernel::kAvx512Vnni:
      return f.avx512_vnni;
    case Int8Kernel::kAmxInt8:
      return HostHasAmx() || (f.avx512_vnni && AmxStandIn().load() != nullptr);
  }
  return false;
}

// The AMX kernel on a sample product (rows and panels over both tile
// blocks' tails) against the scalar reference; a disagreement is reported
// once and AMX left unused.
bool AmxAgreesWithReference() {
  int64_t row = -1, column = -1;
  if (Int8RowMajorKernelAgrees(Int8PanelsAmx, Int8ProductSample(45, 32, 56, 1), /*relu=*/true,
                               &row, &column)) {
    return true;
  }
  std::fprintf(stderr,
               "warning: the AMX int8 kernel disagreed with the reference at row %lld, column "
               "%lld of its start-up check; int8 products use AVX-512 VNNI instead\n",
               static_cast<long long>(row), static_cast<long long>(column));
  return false;
}

Int8Kernel DetectActiveKernel() {
  const CpuFeatures& f = HostCpuFeatures();
  const char* cap = std::getenv("TFM_CPU_ISA");
  if (cap != nullptr && absl::AsciiStrToLower(cap) == "avx2") return Int8Kernel::kAvx2;
  if (f.avx512_vnni && ActiveCpuIsa() == CpuIsa::kAvx512) {
    // The hardware's tiles only: never a test's stand-in.
    return HostHasAmx() && AmxAgreesWithReference() ? Int8Kernel::kAmxInt8
                                                    : Int8Kernel::kAvx512Vnni;
  }
  if (f.avx_vnni) return Int8Kernel::kAvxVnni;
  // AVX-512 without VNNI (Skylake-SP) too: vpmaddubsw at 256 bits.
  return f.avx2 ? Int8Kernel::kAvx2 : Int8Kernel::kScalar;
}

// --list, training logs and benchmarks show which int8 kernel runs.
const internal::EnvironmentLineRegistrar int8_line("int8 kernel", [] {
  std::vector<std::string> names;
  for (Int8Kernel kernel : HostInt8Kernels()) names.push_back(Int8KernelName(kernel));
  return absl::StrCat(Int8KernelName(ActiveInt8Kernel()), " (this CPU runs ",
                      absl::StrJoin(names, ", "), ")");
});

absl::Status ValidateQuantize(const KernelContext& context) {
  const Tensor& weight = context.input(0);
  if (weight.rank() != 2) return context.Error("weight must be [out, in]");
  if (weight.dim(1) > kMaxInFeatures) {
    return context.Error(absl::StrCat("in features ", weight.dim(1), " exceed ", kMaxInFeatures,
                                      " (int32 sums would overflow)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateQuantizedLinear(const KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& packed = context.input(1);
  const Tensor& scales = context.input(2);
  const Tensor& row_sums = context.input(3);
  if (packed.dtype() != DType::kI8 || packed.rank() != 4 ||
      packed.dim(2) != kInt8PanelColumns || packed.dim(3) != kInt8GroupInputs) {
    return context.Error("packed must be i8 [panels, groups, 16, 4] (quantize_linear_weight)");
  }
  if (x.rank() < 1 || (x.dim(-1) + kInt8GroupInputs - 1) / kInt8GroupInputs != packed.dim(1)) {
    return context.Error(absl::StrCat("x must be [..., in] with ", packed.dim(1),
                                      " groups of 4 inputs (the packed weight's)"));
  }
  const int64_t out = scales.rank() == 1 ? scales.dim(0) : -1;
  if (scales.dtype() != DType::kF32 || row_sums.dtype() != DType::kI32 || out < 1 ||
      row_sums.shape() != scales.shape() ||
      (out + kInt8PanelColumns - 1) / kInt8PanelColumns != packed.dim(0)) {
    return context.Error(absl::StrCat("scales (f32) and row_sums (i32) must be [out] with ",
                                      packed.dim(0), " panels of 16 outputs"));
  }
  if (context.num_inputs() == 5) {
    const Tensor& bias = context.input(4);
    if (bias.dtype() != DType::kF32 || bias.rank() != 1 || bias.dim(0) != out) {
      return context.Error("bias must be f32 [out_features]");
    }
  }
  TFM_RETURN_IF_ERROR(context.attrs().GetOr<bool>("relu", false).status());
  TFM_ASSIGN_OR_RETURN(const std::string name,
                       context.attrs().GetOr<std::string>("kernel", std::string()));
  if (!name.empty()) {
    absl::StatusOr<Int8Kernel> kernel = ParseInt8Kernel(name);
    if (!kernel.ok()) return context.Error(kernel.status().message());
    if (!HostRuns(*kernel)) {
      return context.Error(absl::StrCat("kernel ", name, " does not run on this CPU (",
                                        CpuSummary(), ")"));
    }
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "quantize_linear_weight",
    .inputs = {"weight"},
    .outputs = {"packed", "scales", "row_sums"},
    .doc = "weight [out, in] f32 -> int8 with a scale per output row, packed for quantized_linear",
    .validate = ValidateQuantize,
});

TFM_REGISTER_OP(OpDef{
    .name = "quantized_linear",
    .inputs = {"x", "packed", "scales", "row_sums", "bias"},
    .outputs = {"out"},
    .attrs = {"relu", "kernel"},
    .doc = "x W^T + b with W int8 (quantize_linear_weight), x quantized per row to u8 on the fly",
    .validate = ValidateQuantizedLinear,
    .kernel_dtype_inputs = {0},
});

TFM_REGISTER_OP(OpDef{
    .name = "quantized_linear_no_bias",
    .inputs = {"x", "packed", "scales", "row_sums"},
    .outputs = {"out"},
    .attrs = {"relu", "kernel"},
    .doc = "x W^T with W int8 (quantize_linear_weight), x quantized per row to u8 on the fly",
    .validate = ValidateQuantizedLinear,
    .kernel_dtype_inputs = {0},
});

}  // namespace

const char* Int8KernelName(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kScalar:
      return "scalar";
    case Int8Kernel::kAvx2:
      return "avx2";
    case Int8Kernel::kAvxVnni:
      return "avx_vnni";
    case Int8Kernel::kAvx512Vnni:
      return "avx512_vnni";
    case Int8Kernel::kAmxInt8:
      return "amx_int8";
  }
  return "unknown";
}

absl::StatusOr<Int8Kernel> ParseInt8Kernel(absl::string_view name) {
  std::vector<std::string> known;
  for (Int8Kernel kernel : kAllKernels) {
    if (name == Int8KernelName(kernel)) return kernel;
    known.push_back(Int8KernelName(kernel));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown int8 kernel '", name,
                                                 "'; known: ", absl::StrJoin(known, ", ")));
}

std::vector<Int8Kernel> HostInt8Kernels() {
  std::vector<Int8Kernel> kernels;
  for (Int8Kernel kernel : kAllKernels) {
    if (HostRuns(kernel)) kernels.push_back(kernel);
  }
  return kernels;
}

Int8Kernel ActiveInt8Kernel() {
  static const Int8Kernel kernel = DetectActiveKernel();
  return kernel;
}

void SetInt8AmxStandInForTesting(Int8PanelsFn panels) { AmxStandIn().store(panels); }

Int8PanelsFn Int8AmxPanels() {
  const Int8PanelsFn stand_in = AmxStandIn().load();
  return stand_in != nullptr ? stand_in : Int8PanelsAmx;
}

int Int8ActivationLevels(Int8Kernel kernel) { return kernel == Int8Kernel::kAvx2 ? 127 : 255; }

bool QuantizedLinearSupported(const Tensor& weight) {
  return weight.defined() && weight.device().is_cpu() && weight.dtype() == DType::kF32 &&
         weight.rank() == 2 && weight.dim(1) <= kMaxInFeatures;
}

absl::StatusOr<QuantizedWeight> QuantizeLinearWeight(const Tensor& weight) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("quantize_linear_weight", {weight}));
  return QuantizedWeight{out[0], out[1], out[2]};
}

absl::StatusOr<Tensor> QuantizedLinear(const Tensor& x, const QuantizedWeight& weight,
                                       const std::optional<Tensor>& bias, bool relu,
                                       std::optional<Int8Kernel> kernel) {
  Attrs attrs;
  if (relu) attrs.Set("relu", true);
  if (kernel.has_value()) attrs.Set("kernel", std::string(Int8KernelName(*kernel)));
  if (bias.has_value()) {
    TFM_ASSIGN_OR_RETURN(
        std::vector<Tensor> out,
        RunOp("quantized_linear", {x, weight.packed, weight.scales, weight.row_sums, *bias}, attrs));
    return out[0];
  }
  TFM_ASSIGN_OR_RETURN(
      std::vector<Tensor> out,
      RunOp("quantized_linear_no_bias", {x, weight.packed, weight.scales, weight.row_sums}, attrs));
  return out[0];
}

}  // namespace tfm

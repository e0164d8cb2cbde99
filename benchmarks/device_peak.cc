#include "benchmarks/device_peak.h"

#include <stdio.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"

namespace tfm {
namespace bench {
namespace {

struct StatedPeaks {
  const char* name_part;  // A device whose name holds this...
  const char* except;     // ...and not this (nullptr: no exception).
  const char* source;
  double bf16, tf32, fp32;
};

// NVIDIA's datasheet figures, dense (without 2:4 sparsity). The H200 has the
// H100 SXM5's compute; the PCIe H100 runs fewer SMs at a lower clock.
constexpr StatedPeaks kDatasheet[] = {
    {"H100 80GB HBM3", nullptr, "NVIDIA datasheet, H100 SXM5", 989.4, 494.7, 66.9},
    {"H100 SXM", nullptr, "NVIDIA datasheet, H100 SXM5", 989.4, 494.7, 66.9},
    {"H100 PCIe", nullptr, "NVIDIA datasheet, H100 PCIe", 756.0, 378.0, 51.2},
    {"H200", "NVL", "NVIDIA datasheet, H200 SXM", 989.4, 494.7, 66.9},
};

// Dense FLOPs per SM per clock of sm_90 (Hopper): 4 tensor cores x 512 bf16
// FMAs (x 2 flops), half that for TF32, 128 FP32 lanes x 2.
constexpr double kSm90Bf16PerClock = 4096, kSm90Tf32PerClock = 2048, kSm90Fp32PerClock = 256;

}  // namespace

double DevicePeak::GemmPeakGflops(DType dtype, bool tf32) const {
  // f16 runs on the tensor cores at bf16's rate (f32 accumulation).
  const double tflops = dtype == DType::kBF16 || dtype == DType::kF16 ? bf16_tflops
                        : tf32                                       ? tf32_tflops
                                                                     : fp32_tflops;
  return tflops * 1e3;
}

std::string DevicePeak::Summary() const {
  const std::string peaks = bf16_tflops > 0
                                ? absl::StrFormat(
                                      "bf16 tensor %.1f, tf32 tensor %.1f, fp32 %.1f TFLOP/s "
                                      "dense (stated: %s)",
                                      bf16_tflops, tf32_tflops, fp32_tflops, peak_source)
                                : absl::StrCat("compute peaks unknown (", peak_source, ")");
  return absl::StrFormat(
      "%s; HBM copy %.0f GB/s (measured: cudaMemcpy device to device, 1 GiB, read + write, "
      "best of 5; bus %d bits at %d MHz)",
      peaks, copy_gb_per_s, info.memory_bus_bits, info.max_memory_clock_mhz);
}

absl::StatusOr<DevicePeak> MeasureDevicePeak(int device) {
  DevicePeak peak;
  TFM_ASSIGN_OR_RETURN(peak.info, cuda::GetDeviceInfo(device));
  for (const StatedPeaks& stated : kDatasheet) {
    if (absl::StrContains(peak.info.name, stated.name_part) &&
        (stated.except == nullptr || !absl::StrContains(peak.info.name, stated.except))) {
      peak.bf16_tflops = stated.bf16;
      peak.tf32_tflops = stated.tf32;
      peak.fp32_tflops = stated.fp32;
      peak.peak_source = stated.source;
      break;
    }
  }
  if (peak.peak_source.empty() && peak.info.compute_capability == 90) {
    const double sm_ghz = peak.info.sm_count * peak.info.max_sm_clock_mhz * 1e-3;
    peak.bf16_tflops = sm_ghz * kSm90Bf16PerClock * 1e-3;
    peak.tf32_tflops = sm_ghz * kSm90Tf32PerClock * 1e-3;
    peak.fp32_tflops = sm_ghz * kSm90Fp32PerClock * 1e-3;
    peak.peak_source = absl::StrFormat("computed: %d SMs x %d MHz x sm_90's per-SM rates",
                                       peak.info.sm_count, peak.info.max_sm_clock_mhz);
  }
  if (peak.peak_source.empty()) {
    peak.peak_source = absl::StrCat("no datasheet entry for ", peak.info.name, " nor sm_",
                                    peak.info.compute_capability, " rates");
  }

  constexpr size_t kBytes = size_t{1} << 30;
  TFM_ASSIGN_OR_RETURN(void* from, cuda::Malloc(device, kBytes));
  absl::StatusOr<void*> to = cuda::Malloc(device, kBytes);
  if (!to.ok()) {
    cuda::Free(device, from);
    return to.status();
  }
  absl::Status status;
  double best = 1e30;
  // The first copy warms up (pages mapped, clocks up) and is not counted.
  for (int trial = 0; trial < 6 && status.ok(); ++trial) {
    const auto start = std::chrono::steady_clock::now();
    status = cuda::Memcpy(*to, from, kBytes, cuda::CopyKind::kDeviceToDevice);
    // A device-to-device cudaMemcpy returns before the copy ends (the first
    // H100 run measured 247 TB/s): the copy is timed to its completion.
    if (status.ok()) status = cuda::Synchronize(device);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (trial > 0) best = std::min(best, seconds);
  }
  cuda::Free(device, *to);
  cuda::Free(device, from);
  TFM_RETURN_IF_ERROR(status);
  peak.copy_gb_per_s = 2.0 * kBytes / best / 1e9;
  return peak;
}

std::string NvidiaSmiSummary() {
  FILE* pipe = popen(
      "nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,"
      "clocks.max.mem,power.limit,persistence_mode,temperature.gpu --format=csv 2>/dev/null",
      "r");
  if (pipe == nullptr) return "nvidia-smi: could not run\n";
  std::string text;
  char line[1024];
  while (fgets(line, sizeof(line), pipe) != nullptr) {
    absl::StrAppend(&text, "nvidia-smi: ", absl::StripSuffix(line, "\n"), "\n");
  }
  if (pclose(pipe) != 0 || text.empty()) return "nvidia-smi: not available\n";
  return text;
}

}  // namespace bench
}  // namespace tfm

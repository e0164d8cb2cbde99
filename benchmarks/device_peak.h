// What a GPU can do at most, for the CUDA rows of ops_vs_torch: the HBM
// bandwidth measured in the run (a device-to-device copy) and the dense
// tensor-core and FP32 peaks, stated (NVIDIA's datasheet for the devices we
// know) or computed from SMs x clock x per-SM rates: Summary() says which.
#ifndef TFM_BENCHMARKS_DEVICE_PEAK_H_
#define TFM_BENCHMARKS_DEVICE_PEAK_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/cuda/runtime.h"
#include "core/dtype.h"

namespace tfm {
namespace bench {

struct DevicePeak {
  cuda::DeviceInfo info;
  // cudaMemcpy device to device over 1 GiB, bytes read + written per second,
  // best of 5.
  double copy_gb_per_s = 0;
  // Dense peaks in TFLOP/s; 0 where unknown.
  double bf16_tflops = 0;  // Tensor cores, f32 accumulation.
  double tf32_tflops = 0;  // Tensor cores (TFM_CUDA_TF32=1).
  double fp32_tflops = 0;  // CUDA cores: our exact f32 GEMMs (CUBLAS_COMPUTE_32F).
  std::string peak_source;

  // The peak a GEMM of `dtype` runs against; 0 if unknown.
  double GemmPeakGflops(DType dtype, bool tf32) const;
  std::string Summary() const;
};

// Measures device `device`'s copy bandwidth (about a second) and fills in
// its peaks.
absl::StatusOr<DevicePeak> MeasureDevicePeak(int device);

// nvidia-smi's view of the GPUs (driver release, current and maximum
// clocks, power limit, persistence), one line each, or why there is none.
std::string NvidiaSmiSummary();

}  // namespace bench
}  // namespace tfm

#endif  // TFM_BENCHMARKS_DEVICE_PEAK_H_

// The CUDA implementation of runtime.h (compiled by nvcc; see BUILD).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>
#include <utility>

#include "core/cuda/runtime.h"

namespace tfm {
namespace cuda {
namespace {

absl::Status ToStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(std::string(what) + ": " + cudaGetErrorString(error));
}

}  // namespace

bool BuiltWithCuda() { return true; }

int DeviceCount() {
  int count = 0;
  // No driver or no device is not an error here: it just means zero GPUs.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // Clear the sticky error state.
    return 0;
  }
  return count;
}

absl::StatusOr<std::string> DeviceName(int device) {
  cudaDeviceProp properties;
  absl::Status status = ToStatus(cudaGetDeviceProperties(&properties, device),
                                 "cudaGetDeviceProperties");
  if (!status.ok()) return status;
  return std::string(properties.name) + " (sm_" + std::to_string(properties.major) +
         std::to_string(properties.minor) + ")";
}

absl::StatusOr<void*> Malloc(int device, size_t bytes) {
  absl::Status status = ToStatus(cudaSetDevice(device), "cudaSetDevice");
  if (!status.ok()) return status;
  void* ptr = nullptr;
  status = ToStatus(cudaMalloc(&ptr, bytes), "cudaMalloc");
  if (!status.ok()) return status;
  return ptr;
}

void Free(int device, void* ptr) {
  cudaSetDevice(device);
  cudaFree(ptr);
}

absl::Status Memcpy(void* dst, const void* src, size_t bytes, CopyKind kind) {
  const cudaMemcpyKind cuda_kind = kind == CopyKind::kHostToDevice ? cudaMemcpyHostToDevice
                                   : kind == CopyKind::kDeviceToHost
                                       ? cudaMemcpyDeviceToHost
                                       : cudaMemcpyDeviceToDevice;
  return ToStatus(cudaMemcpy(dst, src, bytes, cuda_kind), "cudaMemcpy");
}

absl::Status Synchronize(int device) {
  absl::Status status = ToStatus(cudaSetDevice(device), "cudaSetDevice");
  if (!status.ok()) return status;
  return ToStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

absl::StatusOr<DeviceInfo> GetDeviceInfo(int device) {
  cudaDeviceProp properties;
  absl::Status status = ToStatus(cudaGetDeviceProperties(&properties, device),
                                 "cudaGetDeviceProperties");
  if (!status.ok()) return status;
  DeviceInfo info;
  info.name = properties.name;
  info.compute_capability = 10 * properties.major + properties.minor;
  info.memory_bytes = properties.totalGlobalMem;
  // Clocks through attributes: CUDA 13 dropped them from cudaDeviceProp.
  const std::pair<cudaDeviceAttr, int*> attributes[] = {
      {cudaDevAttrMultiProcessorCount, &info.sm_count},
      {cudaDevAttrClockRate, &info.max_sm_clock_mhz},
      {cudaDevAttrMemoryClockRate, &info.max_memory_clock_mhz},
      {cudaDevAttrGlobalMemoryBusWidth, &info.memory_bus_bits}};
  for (const auto& [attribute, value] : attributes) {
    status = ToStatus(cudaDeviceGetAttribute(value, attribute, device), "cudaDeviceGetAttribute");
    if (!status.ok()) return status;
  }
  info.max_sm_clock_mhz /= 1000;  // Both clocks come in kHz.
  info.max_memory_clock_mhz /= 1000;
  status = ToStatus(cudaDriverGetVersion(&info.driver_api_version), "cudaDriverGetVersion");
  if (!status.ok()) return status;
  return info;
}

std::string LibraryVersions() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  int nccl = 0;
  ncclGetVersion(&nccl);
  int cublas_major = 0, cublas_minor = 0;
  cublasGetProperty(MAJOR_VERSION, &cublas_major);
  cublasGetProperty(MINOR_VERSION, &cublas_minor);
  return "CUDA runtime " + std::to_string(runtime) + ", cuBLAS " +
         std::to_string(cublas_major) + "." + std::to_string(cublas_minor) + " (cuBLASLt " +
         std::to_string(static_cast<long long>(cublasLtGetVersion())) + ")" +
         ", cuDNN " + std::to_string(static_cast<long long>(cudnnGetVersion())) +
         ", NCCL " + std::to_string(nccl);
}

}  // namespace cuda
}  // namespace tfm

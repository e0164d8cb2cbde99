// The cuBLASLt handle of each GPU and the GEMM workspace, created on first
// use and kept for the life of the process, so that steady-state GEMMs
// allocate nothing. Included only by code compiled with the CUDA headers.
#ifndef TFM_CORE_CUDA_CUBLASLT_H_
#define TFM_CORE_CUDA_CUBLASLT_H_

#include <cublasLt.h>

#include <cstddef>

#include "absl/status/statusor.h"
#include "core/device.h"

namespace tfm {
namespace cuda {

// Bytes of workspace every cuBLASLt GEMM may use (what cuBLAS itself
// recommends on Hopper).
inline constexpr size_t kCublasLtWorkspaceBytes = size_t{32} << 20;

struct CublasLtContext {
  cublasLtHandle_t handle = nullptr;  // One per GPU, shared by all streams.
  // kCublasLtWorkspaceBytes from the caching allocator, one per (GPU, stream):
  // GEMMs on one stream run in order and may share it, GEMMs on two streams
  // may overlap and must not.
  void* workspace = nullptr;
};

// The handle of GPU `device` and the workspace of `stream` on it. Thread-safe.
absl::StatusOr<CublasLtContext> CublasLtFor(int device, StreamHandle stream);

}  // namespace cuda
}  // namespace tfm

#endif  // TFM_CORE_CUDA_CUBLASLT_H_

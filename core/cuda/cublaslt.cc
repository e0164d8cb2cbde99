// The cuBLASLt handles and workspaces of cublaslt.h (compiled by nvcc; see
// BUILD).
#include "core/cuda/cublaslt.h"

#include <cuda_runtime.h>

#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/allocator.h"

namespace tfm {
namespace cuda {
namespace {

struct Contexts {
  absl::Mutex mutex;
  std::map<int, cublasLtHandle_t> handles ABSL_GUARDED_BY(mutex);
  std::map<std::pair<int, StreamHandle>, void*> workspaces ABSL_GUARDED_BY(mutex);
};

// Never destroyed: GEMMs may still run while static destructors do.
Contexts& AllContexts() {
  static Contexts* contexts = new Contexts;
  return *contexts;
}

absl::StatusOr<cublasLtHandle_t> HandleOf(int device, Contexts& contexts)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(contexts.mutex) {
  auto found = contexts.handles.find(device);
  if (found != contexts.handles.end()) return found->second;
  // The handle belongs to the device current when it is created.
  const cudaError_t error = cudaSetDevice(device);
  if (error != cudaSuccess) {
    return absl::InternalError(std::string("cudaSetDevice: ") + cudaGetErrorString(error));
  }
  cublasLtHandle_t handle = nullptr;
  const cublasStatus_t status = cublasLtCreate(&handle);
  if (status != CUBLAS_STATUS_SUCCESS) {
    return absl::InternalError(std::string("cublasLtCreate: ") + cublasLtGetStatusName(status));
  }
  contexts.handles.emplace(device, handle);
  return handle;
}

absl::StatusOr<void*> WorkspaceOf(int device, StreamHandle stream, Contexts& contexts)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(contexts.mutex) {
  auto found = contexts.workspaces.find({device, stream});
  if (found != contexts.workspaces.end()) return found->second;
  absl::StatusOr<Allocator*> allocator = AllocatorFor(Device::Cuda(device));
  if (!allocator.ok()) return allocator.status();
  // Kept for the process: the caching allocator would hand the block to
  // another tensor otherwise, and the next GEMM would have to ask again.
  absl::StatusOr<void*> workspace = (*allocator)->Allocate(kCublasLtWorkspaceBytes, stream);
  if (!workspace.ok()) return workspace.status();
  contexts.workspaces.emplace(std::make_pair(device, stream), *workspace);
  return *workspace;
}

}  // namespace

absl::StatusOr<CublasLtContext> CublasLtFor(int device, StreamHandle stream) {
  Contexts& contexts = AllContexts();
  absl::MutexLock lock(&contexts.mutex);
  CublasLtContext context;
  absl::StatusOr<cublasLtHandle_t> handle = HandleOf(device, contexts);
  if (!handle.ok()) return handle.status();
  context.handle = *handle;
  absl::StatusOr<void*> workspace = WorkspaceOf(device, stream, contexts);
  if (!workspace.ok()) return workspace.status();
  context.workspace = *workspace;
  return context;
}

}  // namespace cuda
}  // namespace tfm

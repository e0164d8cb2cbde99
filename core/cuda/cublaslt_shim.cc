// cuBLASLt's entry points that our GEMMs call, defined here and forwarded to
// libcublasLt, which is loaded on the first call (compiled by nvcc; see
// BUILD).
//
// Why not link it: libcublasLt's initialisers run in every process that
// links it, GPU or not, before main: 150 MiB resident and 0.1-0.2 s at
// every start (a program linking it and doing nothing else, 2026-11-29).
// Every CPU command, test and decode paid that for a library only GPU
// products call. Loaded here by its soname (LD_LIBRARY_PATH, the linker's
// cache), else from the directory of the CUDA runtime this process linked
// (the toolkit's lib64, which the binaries' rpath names).
//
// Each function below has the header's exact signature (a mismatch does not
// compile). The header's inline *Init wrappers call the *_internal entry
// points, defined here too. A symbol not defined here fails at link time,
// not at run time. Where the library cannot be loaded, every call returns
// CUBLAS_STATUS_NOT_INITIALIZED and cublasLtGetStatusName says why.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "core/cuda/runtime.h"

namespace tfm {
namespace cuda {
namespace {

#define TFM_STRINGIFY_INNER(x) #x
#define TFM_STRINGIFY(x) TFM_STRINGIFY_INNER(x)
// The soname of the major version whose header this is compiled against.
constexpr char kSoname[] = "libcublasLt.so." TFM_STRINGIFY(CUBLAS_VER_MAJOR);

// The directory of the libcudart this process runs, with a trailing '/', or
// empty if unknown.
std::string CudaRuntimeDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&cudaRuntimeGetVersion), &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// Every entry point defined below: a library that lacks one is refused at
// load, not at the call that needs it.
constexpr const char* kEntryPoints[] = {
    "cublasLtCreate",
    "cublasLtGetVersion",
    "cublasLtGetProperty",
    "cublasLtGetStatusName",
    "cublasLtMatmul",
    "cublasLtMatmulAlgoGetHeuristic",
    "cublasLtMatmulDescInit_internal",
    "cublasLtMatmulDescSetAttribute",
    "cublasLtMatrixLayoutInit_internal",
    "cublasLtMatrixLayoutSetAttribute",
    "cublasLtMatmulPreferenceInit_internal",
    "cublasLtMatmulPreferenceSetAttribute",
};

void* Open(std::string* errors) {
  void* handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) return handle;
  *errors = dlerror();
  const std::string directory = CudaRuntimeDirectory();
  if (directory.empty()) return nullptr;
  handle = dlopen((directory + kSoname).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) *errors += std::string("; ") + dlerror();
  return handle;
}

}  // namespace

// For the forwarders below (outside the namespace, as the header declares
// them): the library, loaded on the first call.
struct Library {
  void* handle = nullptr;
  std::string error;  // Why it did not load; empty when it did.
};

const Library& LoadedLibrary() {
  static Library* library = [] {
    auto* loaded = new Library;  // Never destroyed: GEMMs may run during exit.
    std::string errors;
    loaded->handle = Open(&errors);
    if (loaded->handle == nullptr) {
      loaded->error = std::string("cannot load ") + kSoname + " (" + errors + ")";
      return loaded;
    }
    for (const char* name : kEntryPoints) {
      if (dlsym(loaded->handle, name) == nullptr) {
        loaded->error = std::string(kSoname) + " has no " + name + ": another version's library";
        loaded->handle = nullptr;  // Left mapped: closing it buys nothing.
        break;
      }
    }
    return loaded;
  }();
  return *library;
}

// `name`'s address in the library, or null where it did not load.
void* Symbol(const char* name) {
  const Library& library = LoadedLibrary();
  return library.handle == nullptr ? nullptr : dlsym(library.handle, name);
}

bool CublasLtLoaded() {
  void* handle = dlopen(kSoname, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  dlclose(handle);  // Drops the reference NOLOAD took; the library stays.
  return true;
}

}  // namespace cuda
}  // namespace tfm

// Defines `name` (returning `type`) to call the library's, resolved once;
// where the library did not load, the call returns `failed`.
#define TFM_FORWARD(type, name, failed, params, args)                                        \
  extern "C" type CUBLASWINAPI name params {                                                 \
    static const auto real = reinterpret_cast<decltype(&name)>(tfm::cuda::Symbol(#name));    \
    if (real == nullptr) return failed;                                                      \
    return real args;                                                                        \
  }

TFM_FORWARD(cublasStatus_t, cublasLtCreate, CUBLAS_STATUS_NOT_INITIALIZED, (cublasLtHandle_t * handle), (handle))
TFM_FORWARD(size_t, cublasLtGetVersion, size_t{0}, (), ())
TFM_FORWARD(cublasStatus_t, cublasLtGetProperty, CUBLAS_STATUS_NOT_INITIALIZED,
            (libraryPropertyType type, int* value), (type, value))
TFM_FORWARD(cublasStatus_t, cublasLtMatmul, CUBLAS_STATUS_NOT_INITIALIZED,
            (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
             cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
             const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
             cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
             size_t workspace_bytes, cudaStream_t stream),
            (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
             workspace_bytes, stream))
TFM_FORWARD(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic, CUBLAS_STATUS_NOT_INITIALIZED,
            (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
             cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
             cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference,
             int requested, cublasLtMatmulHeuristicResult_t heuristic_results[], int* returned),
            (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, preference, requested, heuristic_results,
             returned))
TFM_FORWARD(cublasStatus_t, cublasLtMatmulDescInit_internal, CUBLAS_STATUS_NOT_INITIALIZED,
            (cublasLtMatmulDesc_t desc, size_t size, cublasComputeType_t compute,
             cudaDataType_t scale),
            (desc, size, compute, scale))
TFM_FORWARD(cublasStatus_t, cublasLtMatmulDescSetAttribute, CUBLAS_STATUS_NOT_INITIALIZED,
            (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const void* buf,
             size_t size),
            (desc, attribute, buf, size))
TFM_FORWARD(cublasStatus_t, cublasLtMatrixLayoutInit_internal, CUBLAS_STATUS_NOT_INITIALIZED,
            (cublasLtMatrixLayout_t layout, size_t size, cudaDataType type, uint64_t rows,
             uint64_t cols, int64_t ld),
            (layout, size, type, rows, cols, ld))
TFM_FORWARD(cublasStatus_t, cublasLtMatrixLayoutSetAttribute, CUBLAS_STATUS_NOT_INITIALIZED,
            (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attribute,
             const void* buf, size_t size),
            (layout, attribute, buf, size))
TFM_FORWARD(cublasStatus_t, cublasLtMatmulPreferenceInit_internal, CUBLAS_STATUS_NOT_INITIALIZED,
            (cublasLtMatmulPreference_t preference, size_t size), (preference, size))
TFM_FORWARD(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute, CUBLAS_STATUS_NOT_INITIALIZED,
            (cublasLtMatmulPreference_t preference, cublasLtMatmulPreferenceAttributes_t attribute,
             const void* buf, size_t size),
            (preference, attribute, buf, size))

// The status's name from the library; where it could not load, why.
extern "C" const char* CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t status) {
  static const auto real =
      reinterpret_cast<decltype(&cublasLtGetStatusName)>(tfm::cuda::Symbol("cublasLtGetStatusName"));
  if (real != nullptr) return real(status);
  const std::string& error = tfm::cuda::LoadedLibrary().error;
  return error.empty() ? "CUBLAS_STATUS_NOT_INITIALIZED" : error.c_str();
}

// GemmCuda through cuBLASLt (compiled by nvcc; see BUILD).
//
// cuBLASLt is column-major and our tensors are row-major. A row-major
// [r, c] matrix is the column-major [c, r] matrix with the same bytes, so
// C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T: cuBLASLt's A is our
// B, its B our A, its m our n and its n our m, and the transposes stay as
// they are.
#include "ops/matmul/gemm_cuda.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/cuda/cublaslt.h"
#include "core/deterministic.h"
#include "core/env_setting.h"

namespace tfm {
namespace {

// TFM_CUDA_TF32=1 trades f32's exactness for TF32 tensor cores.
bool UseTf32() {
  static const bool tf32 = EnvIs("TFM_CUDA_TF32", "1");
  return tf32;
}

// TFM_GEMM_EPILOGUES: "all" (the default), "bias" (no fused ReLU) or "none"
// (every bias, ReLU and bias gradient by linear's own kernels): to measure
// what each fused epilogue costs or saves, since cuBLASLt may pick another
// algorithm for a problem with one.
bool EpilogueAllowed(GemmCudaEpilogue epilogue) {
  static const int level = [] {
    if (std::getenv("TFM_GEMM_EPILOGUES") == nullptr || EnvIs("TFM_GEMM_EPILOGUES", "all")) {
      return 2;
    }
    return EnvIs("TFM_GEMM_EPILOGUES", "bias") ? 1 : 0;
  }();
  if (epilogue == GemmCudaEpilogue::kNone) return true;
  return epilogue == GemmCudaEpilogue::kBiasRelu ? level >= 2 : level >= 1;
}

// TFM_GEMM_AUTOTUNE=1: the first time a problem's plan is made, time up to
// kAutotuneCandidates of the heuristic's algorithms on the problem itself
// and keep the fastest (PyTorch's TunableOp), instead of the heuristic's
// first. Off by default, and in deterministic mode (the choice follows
// timings, so another process could pick another algorithm: other sums).
std::atomic<int>& AutotuneSetting() {  // -1: TFM_GEMM_AUTOTUNE decides.
  static std::atomic<int> setting{-1};
  return setting;
}

bool Autotune() {
  static const bool from_environment = EnvIs("TFM_GEMM_AUTOTUNE", "1");
  const int setting = AutotuneSetting().load(std::memory_order_relaxed);
  return (setting < 0 ? from_environment : setting == 1) && !DeterministicKernels();
}
constexpr int kAutotuneCandidates = 8;
constexpr int kAutotuneRuns = 3;

size_t ElementBytes(DType dtype) { return dtype == DType::kBF16 || dtype == DType::kF16 ? 2 : 4; }

size_t CBytes(const GemmCudaProblem& p) { return p.c_f32 ? 4 : ElementBytes(p.dtype); }

// The alignment cuBLASLt may assume for a matrix: the largest power of two
// (at most 256, cuBLASLt's largest requirement) dividing its address, its
// leading dimension and its batch stride in bytes. Heuristics given a
// smaller one pick only algorithms that cope with it.
uint32_t AlignmentOf(const void* data, int64_t ld_bytes, int64_t stride_bytes) {
  const uint64_t bits = reinterpret_cast<uintptr_t>(data) | static_cast<uint64_t>(ld_bytes) |
                        static_cast<uint64_t>(stride_bytes) | uint64_t{256};
  return static_cast<uint32_t>(bits & (~bits + 1));
}

// Everything the choice of algorithm depends on.
struct PlanKey {
  int device;
  DType dtype;
  bool tf32;
  bool c_f32;
  bool trans_a, trans_b;
  int64_t m, n, k, batch, stride_a, stride_b;
  GemmCudaEpilogue epilogue;
  uint32_t align_a, align_b, align_c, align_bias;

  friend bool operator==(const PlanKey& x, const PlanKey& y) {
    return x.device == y.device && x.dtype == y.dtype && x.tf32 == y.tf32 && x.c_f32 == y.c_f32 &&
           x.trans_a == y.trans_a && x.trans_b == y.trans_b && x.m == y.m && x.n == y.n &&
           x.k == y.k && x.batch == y.batch && x.stride_a == y.stride_a &&
           x.stride_b == y.stride_b && x.epilogue == y.epilogue && x.align_a == y.align_a &&
           x.align_b == y.align_b && x.align_c == y.align_c && x.align_bias == y.align_bias;
  }
  template <typename H>
  friend H AbslHashValue(H state, const PlanKey& key) {
    return H::combine(std::move(state), key.device, key.dtype, key.tf32, key.c_f32, key.trans_a,
                      key.trans_b, key.m, key.n, key.k, key.batch, key.stride_a, key.stride_b,
                      key.epilogue, key.align_a, key.align_b, key.align_c, key.align_bias);
  }
};

// The algorithm chosen for each problem seen, or nullopt where cuBLASLt had
// none (an epilogue it cannot fuse there), so neither is asked twice.
class PlanCache {
 public:
  static PlanCache& Get() {
    static PlanCache* cache = new PlanCache;  // Never destroyed (see cublaslt.cc).
    return *cache;
  }
  bool Find(const PlanKey& key, std::optional<cublasLtMatmulAlgo_t>* algo) {
    absl::MutexLock lock(&mutex_);
    auto found = plans_.find(key);
    if (found == plans_.end()) return false;
    *algo = found->second;
    return true;
  }
  void Set(const PlanKey& key, const std::optional<cublasLtMatmulAlgo_t>& algo) {
    absl::MutexLock lock(&mutex_);
    plans_.insert_or_assign(key, algo);
  }

 private:
  absl::Mutex mutex_;
  absl::flat_hash_map<PlanKey, std::optional<cublasLtMatmulAlgo_t>> plans_ ABSL_GUARDED_BY(mutex_);
};

std::string Describe(const GemmCudaProblem& p) {
  return absl::StrCat(p.op, ": ", DTypeName(p.dtype), p.c_f32 ? " (f32 C)" : "", " GEMM m=", p.m,
                      " n=", p.n, " k=", p.k, " batch=", p.batch, p.trans_a ? " A^T" : "",
                      p.trans_b ? " B^T" : "");
}

absl::Status CublasError(const char* call, cublasStatus_t status, const GemmCudaProblem& p) {
  return absl::InternalError(
      absl::StrCat(Describe(p), ": ", call, ": ", cublasLtGetStatusName(status)));
}

absl::Status CudaError(const char* call, cudaError_t error, const GemmCudaProblem& p) {
  return absl::InternalError(
      absl::StrCat(Describe(p), ": ", call, ": ", cudaGetErrorString(error)));
}

// The descriptors of one call, initialised in place: no allocation.
struct Descriptors {
  cublasLtMatmulDescOpaque_t matmul;
  cublasLtMatrixLayoutOpaque_t a, b, c;  // cuBLASLt's A (our B), B (our A), C = D.
};

// Describes a row-major [rows, cols] matrix (per batch entry) to cuBLASLt,
// that is the column-major [cols, rows] one.
cublasStatus_t InitLayout(cublasLtMatrixLayoutOpaque_t* layout, cudaDataType type, int64_t rows,
                          int64_t cols, int64_t batch, int64_t stride) {
  cublasStatus_t status = cublasLtMatrixLayoutInit(layout, type, cols, rows, cols);
  if (status != CUBLAS_STATUS_SUCCESS || batch == 1) return status;
  const int32_t count = static_cast<int32_t>(batch);
  status = cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                            sizeof(count));
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  return cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                          &stride, sizeof(stride));
}

template <typename T>
cublasStatus_t SetMatmulAttribute(Descriptors& d, cublasLtMatmulDescAttributes_t attribute,
                                  const T& value) {
  return cublasLtMatmulDescSetAttribute(&d.matmul, attribute, &value, sizeof(value));
}

// The vector of the epilogue, read or written.
const void* BiasPointerOf(const GemmCudaProblem& p) {
  return p.epilogue == GemmCudaEpilogue::kBias || p.epilogue == GemmCudaEpilogue::kBiasRelu
             ? p.bias
             : p.bias_gradient;
}

absl::Status InitDescriptors(const GemmCudaProblem& p, Descriptors& d) {
  const cudaDataType type = p.dtype == DType::kBF16  ? CUDA_R_16BF
                            : p.dtype == DType::kF16 ? CUDA_R_16F
                                                     : CUDA_R_32F;
  const cublasComputeType_t compute =
      p.dtype == DType::kF32 && UseTf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasStatus_t status = cublasLtMatmulDescInit(&d.matmul, compute, CUDA_R_32F);
  if (status != CUBLAS_STATUS_SUCCESS) return CublasError("cublasLtMatmulDescInit", status, p);
  const cublasOperation_t trans_lt_a = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t trans_lt_b = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (p.epilogue == GemmCudaEpilogue::kBias) {
    // cuBLASLt's bias has one entry per row of its D, that is per our column.
    epilogue = CUBLASLT_EPILOGUE_BIAS;
  } else if (p.epilogue == GemmCudaEpilogue::kBiasRelu) {
    epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
  } else if (p.epilogue == GemmCudaEpilogue::kBiasGradientOfA) {
    // Our op(A) is cuBLASLt's op(B), whose sum over k has one entry per
    // column of its D, that is per our row.
    epilogue = CUBLASLT_EPILOGUE_BGRADB;
  }
  if ((status = SetMatmulAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, trans_lt_a)) !=
          CUBLAS_STATUS_SUCCESS ||
      (status = SetMatmulAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, trans_lt_b)) !=
          CUBLAS_STATUS_SUCCESS ||
      (status = SetMatmulAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue)) !=
          CUBLAS_STATUS_SUCCESS) {
    return CublasError("cublasLtMatmulDescSetAttribute", status, p);
  }
  if (p.epilogue != GemmCudaEpilogue::kNone) {
    // Its element type defaults to D's, ours. The heuristic reads the
    // pointer's alignment, so it is set before the heuristic too.
    status = SetMatmulAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, BiasPointerOf(p));
    if (status != CUBLAS_STATUS_SUCCESS) {
      return CublasError("cublasLtMatmulDescSetAttribute(BIAS_POINTER)", status, p);
    }
  }
  // Stored shapes: B is [k, n] ([n, k] if trans_b), A [m, k] ([k, m]).
  if ((status = InitLayout(&d.a, type, p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n, p.batch,
                           p.stride_b)) != CUBLAS_STATUS_SUCCESS ||
      (status = InitLayout(&d.b, type, p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k, p.batch,
                           p.stride_a)) != CUBLAS_STATUS_SUCCESS ||
      (status = InitLayout(&d.c, p.c_f32 ? CUDA_R_32F : type, p.m, p.n, p.batch, p.m * p.n)) !=
          CUBLAS_STATUS_SUCCESS) {
    return CublasError("cublasLtMatrixLayoutInit", status, p);
  }
  return absl::OkStatus();
}

PlanKey KeyOf(const GemmCudaProblem& p) {
  const int64_t bytes = static_cast<int64_t>(ElementBytes(p.dtype));
  const bool batched = p.batch > 1;
  return PlanKey{
      .device = p.device,
      .dtype = p.dtype,
      .tf32 = p.dtype == DType::kF32 && UseTf32(),
      .c_f32 = p.c_f32,
      .trans_a = p.trans_a,
      .trans_b = p.trans_b,
      .m = p.m,
      .n = p.n,
      .k = p.k,
      .batch = p.batch,
      .stride_a = p.stride_a,
      .stride_b = p.stride_b,
      .epilogue = p.epilogue,
      .align_a =
          AlignmentOf(p.a, (p.trans_a ? p.m : p.k) * bytes, batched ? p.stride_a * bytes : 0),
      .align_b =
          AlignmentOf(p.b, (p.trans_b ? p.k : p.n) * bytes, batched ? p.stride_b * bytes : 0),
      .align_c = AlignmentOf(p.c, p.n * static_cast<int64_t>(CBytes(p)),
                             batched ? p.m * p.n * static_cast<int64_t>(CBytes(p)) : 0),
      .align_bias =
          p.epilogue == GemmCudaEpilogue::kNone ? 256u : AlignmentOf(BiasPointerOf(p), 0, 0),
  };
}

// Asks cuBLASLt's heuristic for its best `candidates` (<= kAutotuneCandidates)
// algorithms, best first; none if it has none.
absl::StatusOr<std::vector<cublasLtMatmulAlgo_t>> HeuristicAlgorithms(const GemmCudaProblem& p,
                                                                      const PlanKey& key,
                                                                      Descriptors& d,
                                                                      cublasLtHandle_t handle,
                                                                      int candidates) {
  cublasLtMatmulPreferenceOpaque_t preference;
  cublasStatus_t status = cublasLtMatmulPreferenceInit(&preference);
  if (status != CUBLAS_STATUS_SUCCESS) {
    return CublasError("cublasLtMatmulPreferenceInit", status, p);
  }
  const uint64_t workspace_bytes = cuda::kCublasLtWorkspaceBytes;
  // cuBLASLt's A is our B and its B our A.
  const struct {
    cublasLtMatmulPreferenceAttributes_t attribute;
    uint32_t bytes;
  } alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_c},
  };
  status =
      cublasLtMatmulPreferenceSetAttribute(&preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &workspace_bytes, sizeof(workspace_bytes));
  for (const auto& alignment : alignments) {
    if (status != CUBLAS_STATUS_SUCCESS) break;
    status = cublasLtMatmulPreferenceSetAttribute(&preference, alignment.attribute,
                                                  &alignment.bytes, sizeof(alignment.bytes));
  }
  if (status != CUBLAS_STATUS_SUCCESS) {
    return CublasError("cublasLtMatmulPreferenceSetAttribute", status, p);
  }
  cublasLtMatmulHeuristicResult_t results[kAutotuneCandidates];
  int found = 0;
  status = cublasLtMatmulAlgoGetHeuristic(handle, &d.matmul, &d.a, &d.b, &d.c, &d.c, &preference,
                                          candidates, results, &found);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found == 0)) {
    return std::vector<cublasLtMatmulAlgo_t>();
  }
  if (status != CUBLAS_STATUS_SUCCESS) {
    return CublasError("cublasLtMatmulAlgoGetHeuristic", status, p);
  }
  if (results[0].state != CUBLAS_STATUS_SUCCESS) {
    return CublasError("cublasLtMatmulAlgoGetHeuristic result", results[0].state, p);
  }
  std::vector<cublasLtMatmulAlgo_t> algos;
  for (int i = 0; i < found; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS) algos.push_back(results[i].algo);
  }
  return algos;
}

bool FitsInt32(int64_t value) { return value <= std::numeric_limits<int32_t>::max(); }

// The candidate whose runs on `p` itself (kAutotuneRuns each, after one
// untimed) take the least time; candidates that fail are passed over, and
// the first (the heuristic's) stands if timing fails. The runs write p.c
// (and the bias gradient), which the real product then overwrites.
cublasLtMatmulAlgo_t FastestAlgorithm(const GemmCudaProblem& p, Descriptors& d,
                                      const cuda::CublasLtContext& context,
                                      const std::vector<cublasLtMatmulAlgo_t>& candidates,
                                      cudaStream_t stream) {
  cudaEvent_t start = nullptr, stop = nullptr;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) {
    if (start != nullptr) cudaEventDestroy(start);
    cudaGetLastError();
    return candidates[0];
  }
  const float alpha = 1.0f, beta = 0.0f;
  const auto run = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(context.handle, &d.matmul, &alpha, p.b, &d.a, p.a, &d.b, &beta, p.c,
                          &d.c, p.c, &d.c, &algo, context.workspace,
                          cuda::kCublasLtWorkspaceBytes, stream);
  };
  cublasLtMatmulAlgo_t best = candidates[0];
  float best_ms = std::numeric_limits<float>::infinity();
  for (const cublasLtMatmulAlgo_t& algo : candidates) {
    if (run(algo) != CUBLAS_STATUS_SUCCESS) {
      cudaGetLastError();  // A failed candidate's launch error is not the product's.
      continue;
    }
    cudaEventRecord(start, stream);
    bool ok = true;
    for (int i = 0; i < kAutotuneRuns && ok; ++i) ok = run(algo) == CUBLAS_STATUS_SUCCESS;
    cudaEventRecord(stop, stream);
    float ms = 0.0f;
    if (!ok || cudaEventSynchronize(stop) != cudaSuccess ||
        cudaEventElapsedTime(&ms, start, stop) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (ms < best_ms) {
      best_ms = ms;
      best = algo;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

}  // namespace

void SetGemmAutotune(bool on) { AutotuneSetting().store(on ? 1 : 0, std::memory_order_relaxed); }

absl::StatusOr<bool> GemmCuda(const GemmCudaProblem& p, StreamHandle stream) {
  const bool empty = p.m == 0 || p.n == 0 || p.k == 0 || p.batch == 0;
  if (empty && p.epilogue != GemmCudaEpilogue::kNone) return false;
  if (!EpilogueAllowed(p.epilogue)) return false;
  if (p.m == 0 || p.n == 0 || p.batch == 0) return true;
  if (p.dtype != DType::kF32 && p.dtype != DType::kBF16 && p.dtype != DType::kF16) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(p), ": unsupported dtype"));
  }
  if (p.c_f32 && p.epilogue != GemmCudaEpilogue::kNone) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(p), ": an f32 C takes no epilogue"));
  }
  // cuBLASLt takes 64-bit extents but documents only 32-bit ones as working.
  if (!FitsInt32(p.m) || !FitsInt32(p.n) || !FitsInt32(p.k) || !FitsInt32(p.batch)) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(p), ": extents beyond 2^31 - 1"));
  }
  cudaError_t error = cudaSetDevice(p.device);
  if (error != cudaSuccess) return CudaError("cudaSetDevice", error, p);
  if (p.k == 0) {  // An empty sum: C = 0 (+ C).
    if (p.accumulate) return true;
    error = cudaMemsetAsync(p.c, 0, p.batch * p.m * p.n * CBytes(p),
                            static_cast<cudaStream_t>(stream));
    if (error != cudaSuccess) return CudaError("cudaMemsetAsync", error, p);
    return true;
  }
  absl::StatusOr<cuda::CublasLtContext> context = cuda::CublasLtFor(p.device, stream);
  if (!context.ok()) return context.status();
  Descriptors descriptors;
  absl::Status status = InitDescriptors(p, descriptors);
  if (!status.ok()) return status;
  const PlanKey key = KeyOf(p);
  std::optional<cublasLtMatmulAlgo_t> algo;
  if (!PlanCache::Get().Find(key, &algo)) {
    // Timing runs write C: not for a product that accumulates onto it, nor
    // while a CUDA graph captures the stream (the timing waits).
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capturing);
    const bool tune = Autotune() && !p.accumulate && capturing == cudaStreamCaptureStatusNone;
    absl::StatusOr<std::vector<cublasLtMatmulAlgo_t>> candidates = HeuristicAlgorithms(
        p, key, descriptors, context->handle, tune ? kAutotuneCandidates : 1);
    if (!candidates.ok()) return candidates.status();
    if (!candidates->empty()) {
      algo = (*candidates)[0];
      if (tune && candidates->size() > 1) {
        algo = FastestAlgorithm(p, descriptors, *context, *candidates,
                                static_cast<cudaStream_t>(stream));
      }
    }
    PlanCache::Get().Set(key, algo);
  }
  if (!algo.has_value()) {
    if (p.epilogue != GemmCudaEpilogue::kNone) return false;
    return absl::InternalError(absl::StrCat(Describe(p), ": cuBLASLt has no algorithm"));
  }
  const float alpha = 1.0f;
  const float beta = p.accumulate ? 1.0f : 0.0f;
  const cublasStatus_t lt_status = cublasLtMatmul(
      context->handle, &descriptors.matmul, &alpha, p.b, &descriptors.a, p.a, &descriptors.b, &beta,
      p.c, &descriptors.c, p.c, &descriptors.c, &*algo, context->workspace,
      cuda::kCublasLtWorkspaceBytes, static_cast<cudaStream_t>(stream));
  if (lt_status == CUBLAS_STATUS_NOT_SUPPORTED && p.epilogue != GemmCudaEpilogue::kNone) {
    // The heuristic offered what the GEMM then refused: do without the
    // epilogue, from now on without asking again.
    PlanCache::Get().Set(key, std::nullopt);
    return false;
  }
  if (lt_status != CUBLAS_STATUS_SUCCESS) return CublasError("cublasLtMatmul", lt_status, p);
  error = cudaGetLastError();
  if (error != cudaSuccess) return CudaError("cublasLtMatmul", error, p);
  return true;
}

}  // namespace tfm

// cuDNN fused flash attention through the backend graph API (see
// cudnn_sdpa.h).
//
// cuDNN has no "attention" call in its C API before 9.13: its fused SDPA
// engines recognise a graph of matmuls, pointwise operations and reductions,
// namely the graph NVIDIA's cudnn_frontend builds for its SDPA nodes. We
// build that same graph with the C backend API (cudnn_frontend is a C++
// header library we do not carry):
//
//   forward:  S = (Q K^T) * scale, padding and causal masks (-> -inf),
//             M = max_j S, E = exp(S - M), Z = sum_j E,
//             stats = M + log Z (the natural-log lse), O = (E / Z) V
//   backward: D = rowsum(dO * O), S as above minus stats, P = exp(S),
//             dV = P^T dO, dS = P * (dO V^T - D) * scale,
//             dK = dS^T Q, dQ = dS K (accumulated in f32, then cast)
//
// The engine's pattern matcher is strict, so the graph keeps the frontend's
// operation order, data types (f32 intermediates, P and dS in the io type
// before their matmuls) and workspace tensors (D and the f32 dQ accumulator
// in backward).
#include "ops/attention/cudnn_sdpa.h"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/cuda/runtime.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "core/tensor_copy.h"

namespace tfm {
namespace {

using Dims = std::vector<int64_t>;

// cuDNN's status, with its own explanation of the last error, as a Status
// naming the call. "Not supported" becomes Unimplemented so that callers can
// tell a missing engine from a failure.
absl::Status CudnnStatus(cudnnStatus_t status, absl::string_view call) {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  char detail[2048] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  std::string message = absl::StrCat("cuDNN ", call, ": ", cudnnGetErrorString(status));
  if (detail[0] != '\0') absl::StrAppend(&message, " (", detail, ")");
  if (status / 1000 == CUDNN_STATUS_NOT_SUPPORTED / 1000) {
    return absl::UnimplementedError(message);
  }
  return absl::InternalError(message);
}

absl::Status CudaStatus(cudaError_t error, absl::string_view call) {
  if (error == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("CUDA ", call, ": ", cudaGetErrorString(error)));
}

// Owns one cuDNN backend descriptor.
class Descriptor {
 public:
  static absl::StatusOr<Descriptor> Create(cudnnBackendDescriptorType_t type) {
    cudnnBackendDescriptor_t raw = nullptr;
    TFM_RETURN_IF_ERROR(CudnnStatus(cudnnBackendCreateDescriptor(type, &raw),
                                    absl::StrCat("cudnnBackendCreateDescriptor(type ", type, ")")));
    return Descriptor(type, raw);
  }

  cudnnBackendDescriptor_t get() const { return raw_.get(); }

  absl::Status Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                   int64_t count, const void* values) {
    return CudnnStatus(cudnnBackendSetAttribute(get(), name, type, count, values),
                       absl::StrCat("cudnnBackendSetAttribute(descriptor type ", type_,
                                    ", attribute ", name, ")"));
  }
  absl::Status SetDescriptor(cudnnBackendAttributeName_t name, cudnnBackendDescriptor_t value) {
    return Set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
  }
  absl::Status SetDataType(cudnnBackendAttributeName_t name, cudnnDataType_t value) {
    return Set(name, CUDNN_TYPE_DATA_TYPE, 1, &value);
  }
  absl::Status Finalize() {
    return CudnnStatus(cudnnBackendFinalize(get()),
                       absl::StrCat("cudnnBackendFinalize(descriptor type ", type_, ")"));
  }

 private:
  struct Destroy {
    void operator()(void* raw) const { cudnnBackendDestroyDescriptor(raw); }
  };
  Descriptor(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t raw)
      : type_(type), raw_(raw) {}

  cudnnBackendDescriptorType_t type_;
  std::unique_ptr<void, Destroy> raw_;
};

Dims DenseStrides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

// A tensor of the graph under construction.
struct TensorRef {
  cudnnBackendDescriptor_t desc = nullptr;
  Dims dims;
};

// Which rows of a matmul's operands hold data (the per-batch sequence
// lengths, with key lengths), and what the product holds elsewhere.
struct MatmulExtent {
  TensorRef m, n, k;  // Each optional ([batch, 1, 1, 1] int32).
  std::optional<double> padding_value;
};

// A value bound by value at execution: by-value tensors read it from host
// memory when the plan is launched.
struct ScalarConstant {
  int64_t uid;
  alignas(8) unsigned char bytes[8];
};

// Builds a cuDNN operation graph. Errors are sticky: after the first failure
// every call returns an empty TensorRef and Finalize reports that failure, so
// that graph code reads as a straight sequence of operations.
class GraphBuilder {
 public:
  static constexpr int64_t kFirstInternalUid = 1000;

  // A tensor bound to memory at execution under `uid`.
  TensorRef Tensor(int64_t uid, Dims dims, Dims strides, cudnnDataType_t type) {
    return AddTensor(uid, std::move(dims), std::move(strides), type, /*is_virtual=*/false,
                     /*by_value=*/false);
  }
  // A scalar passed by value at each execution under `uid`.
  TensorRef PerCallScalar(int64_t uid, cudnnDataType_t type) {
    return AddTensor(uid, {1, 1, 1, 1}, {1, 1, 1, 1}, type, false, /*by_value=*/true);
  }
  // A scalar fixed for the graph's lifetime (bound from constants()).
  TensorRef Constant(float value) { return AddConstant(&value, sizeof(value), CUDNN_DATA_FLOAT); }
  TensorRef Constant(int32_t value) { return AddConstant(&value, sizeof(value), CUDNN_DATA_INT32); }

  // Pointwise operations on f32 data.
  TensorRef Unary(cudnnPointwiseMode_t mode, const TensorRef& x) {
    return PointwiseTo(mode, CUDNN_DATA_FLOAT, x, {}, {}, CUDNN_DATA_FLOAT);
  }
  TensorRef Binary(cudnnPointwiseMode_t mode, const TensorRef& x, const TensorRef& b,
                   cudnnDataType_t out_type = CUDNN_DATA_FLOAT) {
    return PointwiseTo(mode, CUDNN_DATA_FLOAT, x, b, {}, out_type);
  }
  // Index arithmetic and comparisons.
  TensorRef IntBinary(cudnnPointwiseMode_t mode, const TensorRef& x, const TensorRef& b) {
    return PointwiseTo(mode, CUDNN_DATA_INT32, x, b, {}, CUDNN_DATA_INT32);
  }
  TensorRef Logical(cudnnPointwiseMode_t mode, const TensorRef& x, const TensorRef& b) {
    return PointwiseTo(mode, CUDNN_DATA_BOOLEAN, x, b, {}, CUDNN_DATA_BOOLEAN);
  }
  // x where `condition`, else `otherwise`.
  TensorRef Select(const TensorRef& x, const TensorRef& otherwise, const TensorRef& condition) {
    return PointwiseTo(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, x, otherwise, condition,
                       CUDNN_DATA_FLOAT);
  }
  // The index along `axis` of every element of x (int32).
  TensorRef Index(const TensorRef& x, int64_t axis, cudnnDataType_t compute_type) {
    if (!status_.ok()) return {};
    TensorRef y = Virtual(x.dims, CUDNN_DATA_INT32);
    AddPointwise(CUDNN_POINTWISE_GEN_INDEX, compute_type, axis, x, {}, {}, y);
    return y;
  }
  // Writes a pointwise result into an existing (bound) tensor.
  void PointwiseInto(cudnnPointwiseMode_t mode, const TensorRef& x, const TensorRef& b,
                     const TensorRef& y) {
    AddPointwise(mode, CUDNN_DATA_FLOAT, std::nullopt, x, b, {}, y);
  }

  // Batched a [.., m, k] @ b [.., k, n] in f32.
  TensorRef Matmul(const TensorRef& a, const TensorRef& b, const MatmulExtent& extent) {
    if (!status_.ok()) return {};
    TensorRef c = Virtual({a.dims[0], a.dims[1], a.dims[2], b.dims[3]}, CUDNN_DATA_FLOAT);
    MatmulInto(a, b, c, extent);
    return c;
  }
  void MatmulInto(const TensorRef& a, const TensorRef& b, const TensorRef& c,
                  const MatmulExtent& extent);

  // Reduces the last axis: [b, h, s, n] -> [b, h, s, 1] (f32).
  TensorRef Reduce(cudnnReduceTensorOp_t op, const TensorRef& x) {
    if (!status_.ok()) return {};
    TensorRef y = Virtual({x.dims[0], x.dims[1], x.dims[2], 1}, CUDNN_DATA_FLOAT);
    AddReduction(op, x, y);
    return y;
  }

  // The same elements seen with other dims and strides (a transpose here).
  TensorRef Reshape(const TensorRef& x, Dims dims, Dims strides, cudnnDataType_t type);

  // The finalised operation graph.
  absl::StatusOr<Descriptor> Finalize(cudnnHandle_t handle);

  const std::vector<ScalarConstant>& constants() const { return constants_; }
  // Every descriptor the graph refers to; the plan keeps them alive.
  std::deque<Descriptor> TakeDescriptors() { return std::move(descriptors_); }

 private:
  TensorRef AddTensor(int64_t uid, Dims dims, Dims strides, cudnnDataType_t type, bool is_virtual,
                      bool by_value);
  TensorRef Virtual(Dims dims, cudnnDataType_t type) {
    Dims strides = DenseStrides(dims);
    return AddTensor(next_uid_++, std::move(dims), std::move(strides), type, true, false);
  }
  TensorRef AddConstant(const void* value, size_t bytes, cudnnDataType_t type);
  TensorRef PointwiseTo(cudnnPointwiseMode_t mode, cudnnDataType_t compute_type, const TensorRef& x,
                        const TensorRef& b, const TensorRef& t, cudnnDataType_t out_type);
  void AddPointwise(cudnnPointwiseMode_t mode, cudnnDataType_t compute_type,
                    std::optional<int64_t> axis, const TensorRef& x, const TensorRef& b,
                    const TensorRef& t, const TensorRef& y);
  void AddReduction(cudnnReduceTensorOp_t op, const TensorRef& x, const TensorRef& y);

  // Records the first failure; true while everything succeeded.
  bool Ok(const absl::Status& status) {
    if (status_.ok() && !status.ok()) status_ = status;
    return status_.ok();
  }
  // A new descriptor kept by the builder, or nullptr after a failure.
  Descriptor* New(cudnnBackendDescriptorType_t type) {
    if (!status_.ok()) return nullptr;
    absl::StatusOr<Descriptor> created = Descriptor::Create(type);
    if (!Ok(created.status())) return nullptr;
    descriptors_.push_back(std::move(created).value());
    return &descriptors_.back();
  }
  // Finalises an operation and adds it to the graph.
  void AddOperation(Descriptor* op) {
    if (op != nullptr && Ok(op->Finalize())) operations_.push_back(op->get());
  }

  absl::Status status_;
  int64_t next_uid_ = kFirstInternalUid;
  std::deque<Descriptor> descriptors_;  // A deque keeps their addresses.
  std::vector<cudnnBackendDescriptor_t> operations_;
  std::vector<ScalarConstant> constants_;
};

TensorRef GraphBuilder::AddTensor(int64_t uid, Dims dims, Dims strides, cudnnDataType_t type,
                                  bool is_virtual, bool by_value) {
  Descriptor* tensor = New(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  if (tensor == nullptr) return {};
  const int64_t alignment = 16;
  const bool ok =
      Ok(tensor->SetDataType(CUDNN_ATTR_TENSOR_DATA_TYPE, type)) &&
      Ok(tensor->Set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.size(), dims.data())) &&
      Ok(tensor->Set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.size(),
                     strides.data())) &&
      Ok(tensor->Set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid)) &&
      Ok(tensor->Set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment)) &&
      // Flags are set only when true, as cudnn_frontend does.
      (!is_virtual ||
       Ok(tensor->Set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual))) &&
      (!by_value ||
       Ok(tensor->Set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value))) &&
      Ok(tensor->Finalize());
  if (!ok) return {};
  return TensorRef{tensor->get(), std::move(dims)};
}

TensorRef GraphBuilder::AddConstant(const void* value, size_t bytes, cudnnDataType_t type) {
  const int64_t uid = next_uid_++;
  TensorRef tensor = PerCallScalar(uid, type);
  if (!status_.ok()) return {};
  ScalarConstant constant{uid, {}};
  std::memcpy(constant.bytes, value, bytes);
  constants_.push_back(constant);
  return tensor;
}

TensorRef GraphBuilder::PointwiseTo(cudnnPointwiseMode_t mode, cudnnDataType_t compute_type,
                                    const TensorRef& x, const TensorRef& b, const TensorRef& t,
                                    cudnnDataType_t out_type) {
  if (!status_.ok()) return {};
  // Broadcast: every operand has rank 4; scalars and [b, h, s, 1] rows
  // stretch to the other operand's extent.
  Dims dims = x.dims;
  for (const TensorRef* other : {&b, &t}) {
    if (other->desc == nullptr) continue;
    for (size_t i = 0; i < dims.size(); ++i) dims[i] = std::max(dims[i], other->dims[i]);
  }
  TensorRef y = Virtual(std::move(dims), out_type);
  AddPointwise(mode, compute_type, std::nullopt, x, b, t, y);
  return y;
}

void GraphBuilder::AddPointwise(cudnnPointwiseMode_t mode, cudnnDataType_t compute_type,
                                std::optional<int64_t> axis, const TensorRef& x, const TensorRef& b,
                                const TensorRef& t, const TensorRef& y) {
  Descriptor* pointwise = New(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  if (pointwise == nullptr) return;
  if (!Ok(pointwise->Set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)) ||
      !Ok(pointwise->SetDataType(CUDNN_ATTR_POINTWISE_MATH_PREC, compute_type))) {
    return;
  }
  if (axis.has_value() &&
      !Ok(pointwise->Set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &*axis))) {
    return;
  }
  if (!Ok(pointwise->Finalize())) return;
  Descriptor* op = New(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  if (op == nullptr) return;
  bool ok = Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pointwise->get())) &&
            Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x.desc)) &&
            Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y.desc));
  if (ok && b.desc != nullptr) {
    ok = Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b.desc));
  }
  if (ok && t.desc != nullptr) {
    ok = Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t.desc));
  }
  if (ok) AddOperation(op);
}

void GraphBuilder::MatmulInto(const TensorRef& a, const TensorRef& b, const TensorRef& c,
                              const MatmulExtent& extent) {
  Descriptor* matmul = New(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  if (matmul == nullptr) return;
  if (!Ok(matmul->SetDataType(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT))) return;
  if (extent.padding_value.has_value() &&
      !Ok(matmul->Set(CUDNN_ATTR_MATMUL_PADDING_VALUE, CUDNN_TYPE_DOUBLE, 1,
                      &*extent.padding_value))) {
    return;
  }
  if (!Ok(matmul->Finalize())) return;
  Descriptor* op = New(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  if (op == nullptr) return;
  bool ok = Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a.desc)) &&
            Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b.desc)) &&
            Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c.desc)) &&
            Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_MATMUL_DESC, matmul->get()));
  const std::pair<cudnnBackendAttributeName_t, const TensorRef*> overrides[] = {
      {CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, &extent.m},
      {CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, &extent.n},
      {CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, &extent.k},
  };
  for (const auto& [name, tensor] : overrides) {
    if (ok && tensor->desc != nullptr) ok = Ok(op->SetDescriptor(name, tensor->desc));
  }
  if (ok) AddOperation(op);
}

void GraphBuilder::AddReduction(cudnnReduceTensorOp_t op_type, const TensorRef& x,
                                const TensorRef& y) {
  Descriptor* reduction = New(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  if (reduction == nullptr) return;
  if (!Ok(reduction->Set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1,
                         &op_type)) ||
      !Ok(reduction->SetDataType(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT)) ||
      !Ok(reduction->Finalize())) {
    return;
  }
  Descriptor* op = New(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  if (op == nullptr) return;
  if (Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x.desc)) &&
      Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y.desc)) &&
      Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_REDUCTION_DESC, reduction->get()))) {
    AddOperation(op);
  }
}

TensorRef GraphBuilder::Reshape(const TensorRef& x, Dims dims, Dims strides, cudnnDataType_t type) {
  if (!status_.ok()) return {};
  TensorRef y = AddTensor(next_uid_++, std::move(dims), std::move(strides), type, true, false);
  Descriptor* op = New(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  if (op == nullptr) return {};
  if (Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x.desc)) &&
      Ok(op->SetDescriptor(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y.desc))) {
    AddOperation(op);
  }
  return status_.ok() ? y : TensorRef{};
}

absl::StatusOr<Descriptor> GraphBuilder::Finalize(cudnnHandle_t handle) {
  TFM_RETURN_IF_ERROR(status_);
  TFM_ASSIGN_OR_RETURN(Descriptor graph,
                       Descriptor::Create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  TFM_RETURN_IF_ERROR(graph.Set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
  TFM_RETURN_IF_ERROR(graph.Set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                operations_.size(), operations_.data()));
  TFM_RETURN_IF_ERROR(graph.Finalize());
  return graph;
}

// ---------------------------------------------------------------------------
// The attention graphs.

// Tensors the caller binds, by unique id; the graph's internal tensors get
// ids from GraphBuilder::kFirstInternalUid on.
enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kOut,
  kStats,
  kDOut,
  kDq,
  kDk,
  kDv,
  kScale,
  kSeqLenQ,
  kSeqLenKv,
  kRowSumDOutOut,  // Backward's D = rowsum(dO * O), in the workspace.
  kDqAccumulator,  // Backward's f32 dQ, in the workspace.
};

struct GraphKey {
  int device;
  bool backward;
  int batch, heads, q_len, k_len, head_dim;
  bool bf16, causal;
  // Mask keys by per-batch sequence lengths: the caller's key lengths, or
  // all k_len where a cuDNN needs the padding pattern to be correct (see
  // NeedsSequenceLengths).
  bool sequence_lengths;

  auto Tie() const {
    return std::tie(device, backward, batch, heads, q_len, k_len, head_dim, bf16, causal,
                    sequence_lengths);
  }
  bool operator<(const GraphKey& other) const { return Tie() < other.Tie(); }
};

int CudnnVersion() { return static_cast<int>(cudnnGetVersion()); }

// What a masked score becomes: -inf, except that cuDNN before 9.10 wants the
// lowest finite float (as cudnn_frontend does).
float MaskedScore() {
  return CudnnVersion() < 91000 ? std::numeric_limits<float>::lowest()
                                : -std::numeric_limits<float>::infinity();
}

// The operands shared by both graphs.
struct AttentionTensors {
  TensorRef q, k_transposed, scale;
  TensorRef seq_len_q, seq_len_kv;  // With sequence lengths only.
};

AttentionTensors DeclareInputs(GraphBuilder& g, const GraphKey& key, cudnnDataType_t io_type) {
  const int64_t b = key.batch, h = key.heads, sq = key.q_len, skv = key.k_len, d = key.head_dim;
  AttentionTensors t;
  t.q = g.Tensor(kQ, {b, h, sq, d}, DenseStrides({b, h, sq, d}), io_type);
  // K^T: K's memory seen as [b, h, d, skv].
  t.k_transposed = g.Tensor(kK, {b, h, d, skv}, {h * skv * d, skv * d, 1, d}, io_type);
  t.scale = g.PerCallScalar(kScale, CUDNN_DATA_FLOAT);
  if (key.sequence_lengths) {
    t.seq_len_q = g.Tensor(kSeqLenQ, {b, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_INT32);
    t.seq_len_kv = g.Tensor(kSeqLenKv, {b, 1, 1, 1}, {1, 1, 1, 1}, CUDNN_DATA_INT32);
  }
  return t;
}

// Scores at or past a batch's sequence lengths become MaskedScore().
TensorRef MaskPadding(GraphBuilder& g, const TensorRef& scores, const AttentionTensors& t) {
  TensorRef row = g.Index(scores, 2, CUDNN_DATA_INT32);
  TensorRef col = g.Index(scores, 3, CUDNN_DATA_INT32);
  TensorRef keep =
      g.Logical(CUDNN_POINTWISE_LOGICAL_AND, g.Logical(CUDNN_POINTWISE_CMP_LT, row, t.seq_len_q),
                g.Logical(CUDNN_POINTWISE_CMP_LT, col, t.seq_len_kv));
  return g.Select(scores, g.Constant(MaskedScore()), keep);
}

// Query i sees keys j <= i + k_len - q_len (attention.h's bottom-right
// alignment; the usual triangle when the lengths are equal).
TensorRef MaskFuture(GraphBuilder& g, const TensorRef& scores, const GraphKey& key) {
  TensorRef row = g.Index(scores, 2, CUDNN_DATA_FLOAT);
  TensorRef col = g.Index(scores, 3, CUDNN_DATA_FLOAT);
  if (key.q_len != key.k_len) {
    row = g.IntBinary(CUDNN_POINTWISE_ADD, row, g.Constant(static_cast<int32_t>(key.k_len)));
    row = g.IntBinary(CUDNN_POINTWISE_SUB, row, g.Constant(static_cast<int32_t>(key.q_len)));
  }
  TensorRef keep = g.Logical(CUDNN_POINTWISE_CMP_GE, row, col);
  return g.Select(scores, g.Constant(MaskedScore()), keep);
}

// (Q K^T) * scale with the padding mask: [b, h, q_len, k_len] f32.
TensorRef ScaledScores(GraphBuilder& g, const AttentionTensors& t, const GraphKey& key,
                       bool pad_product) {
  MatmulExtent extent{t.seq_len_q, t.seq_len_kv, {}, std::nullopt};
  if (key.sequence_lengths && pad_product) extent.padding_value = 0.0;
  TensorRef scores = g.Binary(CUDNN_POINTWISE_MUL, g.Matmul(t.q, t.k_transposed, extent), t.scale);
  return key.sequence_lengths ? MaskPadding(g, scores, t) : scores;
}

void BuildForward(GraphBuilder& g, const GraphKey& key, cudnnDataType_t io_type) {
  const int64_t b = key.batch, h = key.heads, sq = key.q_len, skv = key.k_len, d = key.head_dim;
  const AttentionTensors t = DeclareInputs(g, key, io_type);
  TensorRef v = g.Tensor(kV, {b, h, skv, d}, DenseStrides({b, h, skv, d}), io_type);
  TensorRef out = g.Tensor(kOut, {b, h, sq, d}, DenseStrides({b, h, sq, d}), io_type);
  TensorRef stats = g.Tensor(kStats, {b, h, sq, 1}, {h * sq, sq, 1, 1}, CUDNN_DATA_FLOAT);

  TensorRef scores = ScaledScores(g, t, key, /*pad_product=*/true);
  if (key.causal) scores = MaskFuture(g, scores, key);
  TensorRef row_max = g.Reduce(CUDNN_REDUCE_TENSOR_MAX, scores);
  TensorRef exp_scores =
      g.Unary(CUDNN_POINTWISE_EXP, g.Binary(CUDNN_POINTWISE_SUB, scores, row_max));
  TensorRef row_sum = g.Reduce(CUDNN_REDUCE_TENSOR_ADD, exp_scores);
  g.PointwiseInto(CUDNN_POINTWISE_ADD, row_max, g.Unary(CUDNN_POINTWISE_LOG, row_sum), stats);
  // The probabilities enter the second matmul in the io type.
  TensorRef probs = g.Binary(CUDNN_POINTWISE_DIV, exp_scores, row_sum, io_type);
  g.MatmulInto(probs, v, out, MatmulExtent{t.seq_len_q, {}, t.seq_len_kv, std::nullopt});
}

void BuildBackward(GraphBuilder& g, const GraphKey& key, cudnnDataType_t io_type) {
  const int64_t b = key.batch, h = key.heads, sq = key.q_len, skv = key.k_len, d = key.head_dim;
  const AttentionTensors t = DeclareInputs(g, key, io_type);
  TensorRef v_transposed = g.Tensor(kV, {b, h, d, skv}, {h * skv * d, skv * d, 1, d}, io_type);
  TensorRef out = g.Tensor(kOut, {b, h, sq, d}, DenseStrides({b, h, sq, d}), io_type);
  TensorRef d_out = g.Tensor(kDOut, {b, h, sq, d}, DenseStrides({b, h, sq, d}), io_type);
  TensorRef stats = g.Tensor(kStats, {b, h, sq, 1}, {h * sq, sq, 1, 1}, CUDNN_DATA_FLOAT);
  TensorRef dq = g.Tensor(kDq, {b, h, sq, d}, DenseStrides({b, h, sq, d}), io_type);
  TensorRef dk = g.Tensor(kDk, {b, h, skv, d}, DenseStrides({b, h, skv, d}), io_type);
  TensorRef dv = g.Tensor(kDv, {b, h, skv, d}, DenseStrides({b, h, skv, d}), io_type);
  TensorRef row_sum_d_out_out =
      g.Tensor(kRowSumDOutOut, {b, h, sq, 1}, {h * sq, sq, 1, 1}, CUDNN_DATA_FLOAT);
  TensorRef dq_accumulator =
      g.Tensor(kDqAccumulator, {b, h, sq, d}, DenseStrides({b, h, sq, d}), CUDNN_DATA_FLOAT);
  const Dims transposed_dims = {b, h, skv, sq};
  const Dims transposed_strides = {h * sq * skv, sq * skv, 1, skv};

  // D = rowsum(dO * O) (times 1, the dropout scale slot of the pattern).
  g.PointwiseInto(CUDNN_POINTWISE_MUL,
                  g.Reduce(CUDNN_REDUCE_TENSOR_ADD, g.Binary(CUDNN_POINTWISE_MUL, d_out, out)),
                  g.Constant(1.0f), row_sum_d_out_out);

  // P = exp(S - lse), recomputed.
  TensorRef scores = g.Binary(CUDNN_POINTWISE_SUB, ScaledScores(g, t, key, false), stats);
  if (key.sequence_lengths && CudnnVersion() >= 90000 && CudnnVersion() < 91000) {
    // cuDNN 9.0-9.9 needs the padding mask again after the stats (the
    // frontend's workaround for its bug 4475073).
    scores = MaskPadding(g, scores, t);
  }
  if (key.causal) scores = MaskFuture(g, scores, key);
  TensorRef probs = g.Unary(CUDNN_POINTWISE_EXP, scores);

  // dV = P^T dO.
  g.MatmulInto(g.Reshape(probs, transposed_dims, transposed_strides, io_type), d_out, dv,
               MatmulExtent{t.seq_len_kv, {}, t.seq_len_q, std::nullopt});

  // dS = P * (dO V^T - D) * scale.
  TensorRef d_probs =
      g.Matmul(d_out, v_transposed, MatmulExtent{t.seq_len_q, t.seq_len_kv, {}, std::nullopt});
  TensorRef d_scores =
      g.Binary(CUDNN_POINTWISE_MUL,
               g.Binary(CUDNN_POINTWISE_MUL,
                        g.Binary(CUDNN_POINTWISE_SUB, d_probs, row_sum_d_out_out), probs),
               t.scale);

  // dK = dS^T Q.
  g.MatmulInto(g.Reshape(d_scores, transposed_dims, transposed_strides, io_type), t.q, dk,
               MatmulExtent{t.seq_len_kv, {}, t.seq_len_q, std::nullopt});

  // dQ = dS K, accumulated in f32 and then cast.
  TensorRef k =
      g.Reshape(t.k_transposed, {b, h, skv, d}, DenseStrides({b, h, skv, d}), CUDNN_DATA_FLOAT);
  g.MatmulInto(d_scores, k, dq_accumulator,
               MatmulExtent{t.seq_len_q, {}, t.seq_len_kv, std::nullopt});
  g.PointwiseInto(CUDNN_POINTWISE_IDENTITY, dq_accumulator, {}, dq);
}

// ---------------------------------------------------------------------------
// Plans and their cache.

constexpr int64_t kWorkspaceAlignment = 256;

int64_t AlignUp(int64_t bytes) {
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
}

// A finalised execution plan and what executing it needs besides the
// caller's tensors.
struct CachedPlan {
  std::deque<Descriptor> graph_descriptors;  // Kept alive for the plan.
  Descriptor graph;
  Descriptor engine_config;
  Descriptor plan;
  int64_t plan_workspace_bytes = 0;
  // Graph tensors that live in the workspace, after the plan's own part.
  std::vector<std::pair<int64_t, int64_t>> workspace_tensors;  // (uid, byte offset)
  int64_t workspace_bytes = 0;
  std::vector<ScalarConstant> constants;
  // With sequence lengths: [batch] int32 all q_len (queries are never
  // padded), and all k_len (bound when the caller gives no key lengths).
  Tensor seq_len_q, seq_len_kv;
};

// The engine configs cuDNN's heuristics (`mode`) suggest for `graph`, best
// first.
absl::StatusOr<std::vector<Descriptor>> EngineConfigs(cudnnBackendDescriptor_t graph,
                                                      cudnnBackendHeurMode_t mode) {
  TFM_ASSIGN_OR_RETURN(Descriptor heuristics,
                       Descriptor::Create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
  TFM_RETURN_IF_ERROR(heuristics.SetDescriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph));
  TFM_RETURN_IF_ERROR(heuristics.Set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
  TFM_RETURN_IF_ERROR(heuristics.Finalize());
  int64_t count = 0;
  TFM_RETURN_IF_ERROR(
      CudnnStatus(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                  "cudnnBackendGetAttribute(ENGINEHEUR_RESULTS count)"));
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    TFM_ASSIGN_OR_RETURN(Descriptor config, Descriptor::Create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(config.get());
    configs.push_back(std::move(config));
  }
  int64_t returned = 0;
  if (count > 0) {
    TFM_RETURN_IF_ERROR(CudnnStatus(
        cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data()),
        "cudnnBackendGetAttribute(ENGINEHEUR_RESULTS)"));
  }
  const int64_t kept = std::clamp<int64_t>(returned, 0, count);
  configs.erase(configs.begin() + kept, configs.end());
  return configs;
}

absl::StatusOr<Descriptor> ExecutionPlan(cudnnHandle_t handle, cudnnBackendDescriptor_t config) {
  TFM_ASSIGN_OR_RETURN(Descriptor plan,
                       Descriptor::Create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
  TFM_RETURN_IF_ERROR(plan.Set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
  TFM_RETURN_IF_ERROR(plan.SetDescriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config));
  TFM_RETURN_IF_ERROR(plan.Finalize());
  return plan;
}

// Builds the graph for `key` and the first plan that cuDNN's heuristics
// (mode A, then the fallback list) can finalise for it.
absl::StatusOr<std::unique_ptr<CachedPlan>> BuildPlan(cudnnHandle_t handle, const GraphKey& key) {
  const cudnnDataType_t io_type = key.bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  GraphBuilder builder;
  if (key.backward) {
    BuildBackward(builder, key, io_type);
  } else {
    BuildForward(builder, key, io_type);
  }
  TFM_ASSIGN_OR_RETURN(Descriptor graph, builder.Finalize(handle));

  std::string failures;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    absl::StatusOr<std::vector<Descriptor>> configs = EngineConfigs(graph.get(), mode);
    if (!configs.ok()) {
      absl::StrAppend(&failures, "\n  heuristics mode ", mode, ": ", configs.status().message());
      continue;
    }
    if (configs->empty()) absl::StrAppend(&failures, "\n  heuristics mode ", mode, ": no engine");
    for (Descriptor& config : *configs) {
      absl::StatusOr<Descriptor> plan = ExecutionPlan(handle, config.get());
      if (!plan.ok()) {
        absl::StrAppend(&failures, "\n  heuristics mode ", mode, ": ", plan.status().message());
        continue;
      }
      auto cached = std::make_unique<CachedPlan>(CachedPlan{
          builder.TakeDescriptors(), std::move(graph), std::move(config), std::move(*plan)});
      int64_t returned = 0;
      TFM_RETURN_IF_ERROR(CudnnStatus(
          cudnnBackendGetAttribute(cached->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                   CUDNN_TYPE_INT64, 1, &returned, &cached->plan_workspace_bytes),
          "cudnnBackendGetAttribute(EXECUTION_PLAN_WORKSPACE_SIZE)"));
      cached->constants = builder.constants();
      int64_t offset = AlignUp(cached->plan_workspace_bytes);
      if (key.backward) {
        const int64_t rows = int64_t{key.batch} * key.heads * key.q_len;
        cached->workspace_tensors.push_back({kRowSumDOutOut, offset});
        offset += AlignUp(rows * sizeof(float));
        cached->workspace_tensors.push_back({kDqAccumulator, offset});
        offset += AlignUp(rows * key.head_dim * sizeof(float));
      }
      cached->workspace_bytes = offset;
      if (key.sequence_lengths) {
        const Device device = Device::Cuda(key.device);
        TFM_ASSIGN_OR_RETURN(
            cached->seq_len_q,
            Int32OnDevice(std::vector<int32_t>(key.batch, key.q_len), Shape{key.batch}, device));
        TFM_ASSIGN_OR_RETURN(
            cached->seq_len_kv,
            Int32OnDevice(std::vector<int32_t>(key.batch, key.k_len), Shape{key.batch}, device));
      }
      return cached;
    }
  }
  return absl::UnimplementedError(absl::StrCat(
      "cuDNN has no engine for this attention graph (", key.backward ? "backward" : "forward",
      ", batch ", key.batch, ", heads ", key.heads, ", q_len ", key.q_len, ", k_len ", key.k_len,
      ", head_dim ", key.head_dim, key.causal ? ", causal" : "",
      key.sequence_lengths ? ", sequence lengths" : "", "):", failures));
}

// One cuDNN handle per device and the plans built on it. A handle is not
// safe to use from two threads at once (cudnnSetStream + execute), so every
// use holds the mutex; executing only enqueues work, so this is brief.
class PlanCache {
 public:
  static PlanCache& Get() {
    static PlanCache* const cache = new PlanCache();  // Never destroyed.
    return *cache;
  }

  absl::Mutex& mutex() { return mu_; }

  absl::StatusOr<cudnnHandle_t> Handle(int device) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto found = handles_.find(device);
    if (found != handles_.end()) return found->second;
    cudnnHandle_t handle = nullptr;
    TFM_RETURN_IF_ERROR(CudnnStatus(cudnnCreate(&handle), "cudnnCreate"));
    handles_.emplace(device, handle);  // Kept for the process's lifetime.
    return handle;
  }

  absl::StatusOr<const CachedPlan*> Plan(const GraphKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto found = plans_.find(key);
    if (found != plans_.end()) return found->second.get();
    TFM_ASSIGN_OR_RETURN(cudnnHandle_t handle, Handle(key.device));
    TFM_ASSIGN_OR_RETURN(std::unique_ptr<CachedPlan> plan, BuildPlan(handle, key));
    return plans_.emplace(key, std::move(plan)).first->second.get();
  }

 private:
  absl::Mutex mu_;
  std::map<int, cudnnHandle_t> handles_ ABSL_GUARDED_BY(mu_);
  std::map<GraphKey, std::unique_ptr<CachedPlan>> plans_ ABSL_GUARDED_BY(mu_);
};

// ---------------------------------------------------------------------------
// Entry points.

absl::StatusOr<int> CurrentDevice() {
  int device = 0;
  TFM_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  return device;
}

absl::StatusOr<int> ComputeCapabilityMajor(int device) {
  int major = 0;
  TFM_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                 "cudaDeviceGetAttribute(compute capability)"));
  return major;
}

// cuDNN up to 9.15 computes a wrong backward for k_len not a multiple of 128
// unless the graph has the padding pattern (cudnn_frontend's workaround).
bool NeedsSequenceLengths(const CudnnSdpaProblem& p, bool backward) {
  return p.key_lengths_device != nullptr ||
         (backward && p.k_len % 128 != 0 && CudnnVersion() <= 91500);
}

absl::Status Validate(const CudnnSdpaProblem& p, bool backward) {
  if (p.batch < 1 || p.heads < 1 || p.q_len < 1 || p.k_len < 1 || p.head_dim < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuDNN SDPA: batch, heads, q_len, k_len and head_dim must be positive, got ",
                     p.batch, ", ", p.heads, ", ", p.q_len, ", ", p.k_len, ", ", p.head_dim));
  }
  if (!std::isfinite(p.scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuDNN SDPA: scale must be finite, got ", p.scale));
  }
  // The fused engines' limits on every GPU we target (cudnn_frontend's
  // support checks); larger heads work only on newer GPUs and cuDNNs.
  if (p.head_dim % 8 != 0 || p.head_dim > 128) {
    return absl::UnimplementedError(
        absl::StrCat("cuDNN SDPA: head_dim must be a multiple of 8 up to 128, got ", p.head_dim));
  }
  if (p.causal && p.q_len > p.k_len) {
    return absl::UnimplementedError(absl::StrCat("cuDNN SDPA: causal attention with q_len ",
                                                 p.q_len, " > k_len ", p.k_len,
                                                 " leaves queries without keys"));
  }
  if (p.causal && p.q_len != p.k_len && CudnnVersion() < 90600) {
    return absl::UnimplementedError(
        "cuDNN SDPA: causal attention with q_len != k_len needs cuDNN 9.6 or newer");
  }
  if (CudnnVersion() == 91000 || CudnnVersion() == 91001) {
    return absl::UnimplementedError("cuDNN SDPA: cuDNN 9.10.0 and 9.10.1 have known SDPA bugs");
  }
  // Measured on an H100 (cuDNN 9, 2026-11-23): with key lengths, a
  // sentence shorter than k_len gets wrong outputs and gradients when causal
  // queries are offset (q_len != k_len): cuDNN's padding shifts the
  // diagonal by the actual length. The caller falls back to our own kernel.
  if (p.causal && p.q_len != p.k_len && p.key_lengths_device != nullptr) {
    return absl::UnimplementedError(
        "cuDNN SDPA: no offset causal attention (q_len != k_len) with key lengths");
  }
  if (backward && p.q_len == 1 && p.k_len == 1) {
    return absl::UnimplementedError("cuDNN SDPA: no backward for q_len = k_len = 1");
  }
  return absl::OkStatus();
}

absl::Status CheckPointers(std::initializer_list<const void*> pointers) {
  for (const void* pointer : pointers) {
    if (pointer == nullptr) return absl::InvalidArgumentError("cuDNN SDPA: null tensor pointer");
    // The graph declares 16-byte aligned tensors.
    if (reinterpret_cast<uintptr_t>(pointer) % 16 != 0) {
      return absl::InvalidArgumentError("cuDNN SDPA: tensor pointers must be 16-byte aligned");
    }
  }
  return absl::OkStatus();
}

// A device buffer of `bytes` to clear before the launch.
struct ZeroFirst {
  void* data;
  size_t bytes;
};

// Runs the cached plan for `problem` with the caller's tensors.
absl::Status Execute(const CudnnSdpaProblem& problem, bool backward,
                     std::vector<std::pair<int64_t, void*>> bindings,
                     std::vector<ZeroFirst> zero_first, void* stream) {
  TFM_RETURN_IF_ERROR(Validate(problem, backward));
  TFM_ASSIGN_OR_RETURN(int device, CurrentDevice());
  TFM_ASSIGN_OR_RETURN(int major, ComputeCapabilityMajor(device));
  if (major < 8) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuDNN SDPA needs sm_80 or newer; device ", device, " is sm_", major, "x"));
  }
  const GraphKey key{device,           backward,
                     problem.batch,    problem.heads,
                     problem.q_len,    problem.k_len,
                     problem.head_dim, problem.bf16,
                     problem.causal,   NeedsSequenceLengths(problem, backward)};
  cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);

  PlanCache& cache = PlanCache::Get();
  absl::MutexLock lock(&cache.mutex());
  TFM_ASSIGN_OR_RETURN(cudnnHandle_t handle, cache.Handle(device));
  TFM_ASSIGN_OR_RETURN(const CachedPlan* plan, cache.Plan(key));

  // The workspace comes from the caching allocator on this stream, so it is
  // free again for the stream's next user once this launch is queued.
  Tensor workspace;
  if (plan->workspace_bytes > 0) {
    TFM_ASSIGN_OR_RETURN(workspace, Tensor::Empty(Shape{(plan->workspace_bytes + 3) / 4},
                                                  DType::kF32, Device::Cuda(device), stream));
  }
  char* workspace_base = static_cast<char*>(workspace.raw_data());
  for (const auto& [uid, offset] : plan->workspace_tensors) {
    bindings.push_back({uid, workspace_base + offset});
  }
  if (backward && CudnnVersion() < 90600) {
    // Older cuDNNs accumulate dQ into the workspace without clearing it.
    const int64_t offset = plan->workspace_tensors.back().second;
    zero_first.push_back(
        {workspace_base + offset, static_cast<size_t>(plan->workspace_bytes - offset)});
  }
  for (const ZeroFirst& buffer : zero_first) {
    TFM_RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(buffer.data, 0, buffer.bytes, cuda_stream), "cudaMemsetAsync"));
  }
  float scale = problem.scale;
  bindings.push_back({kScale, &scale});
  if (key.sequence_lengths) {
    bindings.push_back({kSeqLenQ, const_cast<void*>(plan->seq_len_q.raw_data())});
    bindings.push_back({kSeqLenKv, problem.key_lengths_device != nullptr
                                       ? const_cast<int32_t*>(problem.key_lengths_device)
                                       : const_cast<void*>(plan->seq_len_kv.raw_data())});
  }
  for (const ScalarConstant& constant : plan->constants) {
    bindings.push_back({constant.uid, const_cast<unsigned char*>(constant.bytes)});
  }

  std::vector<int64_t> uids;
  std::vector<void*> pointers;
  for (const auto& [uid, pointer] : bindings) {
    uids.push_back(uid);
    pointers.push_back(pointer);
  }
  TFM_ASSIGN_OR_RETURN(Descriptor pack, Descriptor::Create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  TFM_RETURN_IF_ERROR(
      pack.Set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.size(), uids.data()));
  TFM_RETURN_IF_ERROR(pack.Set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                               pointers.size(), pointers.data()));
  void* plan_workspace = plan->plan_workspace_bytes > 0 ? workspace_base : nullptr;
  TFM_RETURN_IF_ERROR(
      pack.Set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &plan_workspace));
  TFM_RETURN_IF_ERROR(pack.Finalize());
  TFM_RETURN_IF_ERROR(CudnnStatus(cudnnSetStream(handle, cuda_stream), "cudnnSetStream"));
  return CudnnStatus(cudnnBackendExecute(handle, plan->plan.get(), pack.get()),
                     "cudnnBackendExecute");
}

}  // namespace

absl::Status CudnnSdpaForward(const CudnnSdpaProblem& problem, const void* q, const void* k,
                              const void* v, void* out, float* lse, void* stream) {
  TFM_RETURN_IF_ERROR(CheckPointers({q, k, v, out, lse}));
  // cuDNN takes every operand as void*; it only reads the inputs.
  return Execute(problem, /*backward=*/false,
                 {{kQ, const_cast<void*>(q)},
                  {kK, const_cast<void*>(k)},
                  {kV, const_cast<void*>(v)},
                  {kOut, out},
                  {kStats, lse}},
                 /*zero_first=*/{}, stream);
}

absl::Status CudnnSdpaBackward(const CudnnSdpaProblem& problem, const void* q, const void* k,
                               const void* v, const void* out, const float* lse, const void* d_out,
                               void* dq, void* dk, void* dv, void* stream) {
  TFM_RETURN_IF_ERROR(CheckPointers({q, k, v, out, lse, d_out, dq, dk, dv}));
  std::vector<ZeroFirst> zero_first;
  if (problem.key_lengths_device != nullptr) {
    // With key lengths cuDNN may leave the rows of padded keys unwritten;
    // their gradient is zero. (2 bytes per bf16 or fp16 element.)
    const size_t bytes =
        size_t{2} * problem.batch * problem.heads * problem.k_len * problem.head_dim;
    zero_first = {{dk, bytes}, {dv, bytes}};
  }
  return Execute(problem, /*backward=*/true,
                 {{kQ, const_cast<void*>(q)},
                  {kK, const_cast<void*>(k)},
                  {kV, const_cast<void*>(v)},
                  {kOut, const_cast<void*>(out)},
                  {kStats, const_cast<float*>(lse)},
                  {kDOut, const_cast<void*>(d_out)},
                  {kDq, dq},
                  {kDk, dk},
                  {kDv, dv}},
                 std::move(zero_first), stream);
}

bool CudnnSdpaAvailable() {
  if (cuda::DeviceCount() == 0 || CudnnVersion() < 90000) return false;
  absl::StatusOr<int> device = CurrentDevice();
  if (!device.ok()) return false;
  absl::StatusOr<int> major = ComputeCapabilityMajor(*device);
  if (!major.ok() || *major < 8) return false;
  PlanCache& cache = PlanCache::Get();
  absl::MutexLock lock(&cache.mutex());
  return cache.Handle(*device).ok();
}

}  // namespace tfm

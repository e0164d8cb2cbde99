// The ops benchmarked at the base model's shapes, shared by the Google
// Benchmark target (ops_cpu) and the PyTorch comparison (ops_vs_torch), so
// both time exactly the same calls on exactly the same shapes.
//
// A case prepares its named inputs (running the forward first when it times
// a backward) and returns them with a closure that runs the timed call and
// returns its outputs. Its torch_spec tells benchmarks/torch_ops.py how to
// build the same computation in PyTorch from the same inputs.
#ifndef TFM_BENCHMARKS_OP_CASES_H_
#define TFM_BENCHMARKS_OP_CASES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "benchmarks/peer_table.h"
#include "core/tensor.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace bench {

// Base model (Vaswani et al. 2017, table 3): d_model 512, d_ff 2048, h 8.
inline constexpr int64_t kDModel = 512;
inline constexpr int64_t kDFF = 2048;
inline constexpr int64_t kHeads = 8;
inline constexpr int64_t kDHead = kDModel / kHeads;
// A training batch holds about 4096 tokens (the paper's 25000 per step are
// spread over 8 GPUs; 4k is what one device sees).
inline constexpr int64_t kTokens = 4096;
// Decoder rows of a batched beam search step: 32 sentences x beam 4.
inline constexpr int64_t kBeamRows = 128;
// A decoding batch's encoder pass: 32 sentences of 24 positions.
inline constexpr int64_t kEncoderRows = 32 * 24;
// The paper's P_drop for the base model.
inline constexpr double kDropoutP = 0.1;

struct CaseOptions {
  // The paper's shared EN-DE BPE vocabulary has about 37000 entries.
  int64_t vocab = 37000;
  // Sequence lengths of the attention cases; batch = kTokens / n.
  std::vector<int64_t> attention_lengths = {64, 256, 1024};
  // Also a causal (decoder self-attention) case at this length; 0 = none.
  int64_t causal_attention_length = 256;
  // Sentences per batch for the per-token ops (batch x length = kTokens).
  int64_t batch = 32;
  // Cached keys of the batch-1 decoding step's single-query attention rows.
  std::vector<int64_t> decode_cache_lengths = {64, 256, 1024};
  // Where our side runs and the dtype of the floating inputs (bf16 only on
  // CUDA; then the cases without a bf16 kernel, Adam, are left out). The
  // peer gets the same values on the same kind of device.
  Device device = Device::Cpu();
  DType dtype = DType::kF32;
  // Adds the gradient norm and clipping rows.
  bool grad_norm_cases = false;
};

struct NamedTensor {
  std::string name;  // As torch_ops.py reads it.
  Tensor tensor;
};

// The timed call; returns what is compared with PyTorch's outputs, in the
// order torch_ops.py returns them.
using Run = std::function<absl::StatusOr<std::vector<Tensor>>()>;

struct Prepared {
  std::vector<NamedTensor> inputs;  // Exactly what the PyTorch side gets too.
  Run run;
};

// How our outputs are compared with PyTorch's before any timing.
enum class Check {
  kValues,  // Element-wise, with `tolerance`.
  // Different random streams: each side's output must be 0 or
  // input / (1 - p) element-wise, dropping a fraction p (+-0.01) of them.
  kDropoutPattern,
};

struct OpCase {
  std::string op;     // "linear_fwd", "attention_fwdbwd", ...
  std::string shape;  // Human-readable extents.
  // Work of one call for rate counters; 0 where not meaningful.
  double flops = 0;
  double bytes = 0;  // Minimal memory traffic: each operand read or written once.
  int64_t tokens = 0;
  Bound bound = Bound::kOther;
  RowGroup group = RowGroup::kTraining;
  // JSON object: {"op": ..., ...} understood by torch_ops.py; empty for a
  // row PyTorch has no counterpart of (then `own_baseline` is set).
  std::string torch_spec;
  // For a row that does different work than PyTorch's: "op shape" of our
  // own row it is compared with instead, outside the ratio table.
  std::string own_baseline;
  Check check = Check::kValues;
  // The unit tests' bar for this op's f32 outputs (see
  // tests/util/torch_parity.h); output_check.cc widens it for bf16 as the
  // CUDA unit tests do.
  testing::Tolerance tolerance;
  DType dtype = DType::kF32;  // Of the floating inputs and outputs.
  // Makes the inputs (the same values on every call); returns them and the
  // call to time.
  std::function<absl::StatusOr<Prepared>()> prepare;
};

// Training rows at the base model's shapes, then the batch-1 decoding rows.
std::vector<OpCase> BaseModelCases(const CaseOptions& options);

// The sgemm that dominates a Transformer layer (4096 x 512 times 512 x 2048,
// the first FFN matmul) straight through GemmCpu, for BLAS GFLOP/s.
inline constexpr int64_t kSgemmM = 4096, kSgemmK = 512, kSgemmN = 2048;
OpCase SgemmCase();

// The GPU's counterpart: a square 8192 GEMM through MatMul on `options`'
// device and dtype (cuBLASLt), against torch.mm: what a large GEMM reaches.
inline constexpr int64_t kDeviceGemmSize = 8192;
OpCase DeviceGemmCase(const CaseOptions& options);

}  // namespace bench
}  // namespace tfm

#endif  // TFM_BENCHMARKS_OP_CASES_H_

#include "benchmarks/op_cases.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/rng.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "core/tensor_copy.h"
#include "ops/adam/adam.h"
#include "ops/adam/grad_norm.h"
#include "ops/add/add.h"
#include "ops/attention/attention.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/dropout/dropout.h"
#include "ops/embedding/embedding.h"
#include "ops/embedding/tied_projection.h"
#include "ops/layer_norm/layer_norm.h"
#include "ops/linear/linear.h"
#include "ops/packed_linear/packed_linear.h"
#include "ops/matmul/gemm_cpu.h"
#include "ops/matmul/matmul.h"
#include "ops/positional_encoding/positional_encoding.h"
#include "ops/relu/relu.h"
#include "ops/softmax/softmax.h"
#include "tests/util/cuda_compare.h"

namespace tfm {
namespace bench {
namespace {

constexpr double kF32 = sizeof(float);


using testing::SumTolerance;

// Where our side of a case runs: the device, and the dtype of its floating
// inputs (f32, or bf16 on CUDA).
struct Placement {
  Device device = Device::Cpu();
  DType dtype = DType::kF32;

  double ElementBytes() const { return static_cast<double>(DTypeSize(dtype)); }
};

// A case's inputs under the names torch_ops.py reads. Uniform in [-1, 1):
// values of the size activations and gradients have, so no kernel meets
// denormals or overflow. Each tensor gets its own Philox stream, counted
// from 1 in every preparation, so each preparation of a case (one per pass)
// makes the same values. Placed on `place`: the peer gets the values our
// kernels see (rounded to bf16 where the case runs in bf16) as f32 .npy, so
// both sides start from exactly the same numbers.
class Inputs {
 public:
  explicit Inputs(const Placement& place) : place_(place) {}

  absl::StatusOr<Tensor> Uniform(std::string name, const Shape& shape) {
    TFM_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Empty(shape, DType::kF32));
    FillUniformCpu(PhiloxState{.seed = 2017, .stream = ++stream_}, -1.0f, 1.0f,
                   tensor.span<float>());
    if (place_.dtype == DType::kF32) {
      named_.push_back({std::move(name), tensor});
      return OnDevice(tensor);
    }
    named_.push_back({std::move(name), testing::RoundedThrough(tensor, place_.dtype)});
    return OnDevice(testing::HostAs(tensor, place_.dtype));
  }

  // Token ids spread over the whole vocabulary (a fixed-seed LCG: repeatable,
  // and with the collisions a real batch has for frequent tokens).
  absl::StatusOr<Tensor> Ids(std::string name, const Shape& shape, int64_t vocab) {
    TFM_ASSIGN_OR_RETURN(Tensor ids, Tensor::Empty(shape, DType::kI64));
    uint64_t state = 12345;
    for (int64_t& id : ids.span<int64_t>()) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      id = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(vocab));
    }
    named_.push_back({std::move(name), ids});
    return OnDevice(ids);
  }

  // A host tensor (unnamed: the peer makes its own) on the case's device.
  absl::StatusOr<Tensor> OnDevice(const Tensor& host) const {
    if (place_.device.is_cpu()) return host;
    return CopyToDevice(host, place_.device);
  }

  Prepared Done(Run run) { return Prepared{std::move(named_), std::move(run)}; }

 private:
  Placement place_;
  uint64_t stream_ = 0;
  std::vector<NamedTensor> named_;
};

// The outputs of an op's call, as a Run returns them.
template <typename F>
Run Returning(F call) {
  return [call]() -> absl::StatusOr<std::vector<Tensor>> {
    TFM_ASSIGN_OR_RETURN(auto result, call());
    return std::vector<Tensor>{result};
  };
}

// A linear case's operands x [rows, in], w [out, in] and b [out], drawn
// in that order (the names torch_ops.py reads).
struct LinearOperands {
  Tensor x, w, b;
};

absl::StatusOr<LinearOperands> DrawLinearOperands(Inputs& inputs, int64_t rows, int64_t in,
                                                  int64_t out) {
  LinearOperands operands;
  TFM_ASSIGN_OR_RETURN(operands.x, inputs.Uniform("x", {rows, in}));
  TFM_ASSIGN_OR_RETURN(operands.w, inputs.Uniform("w", {out, in}));
  TFM_ASSIGN_OR_RETURN(operands.b, inputs.Uniform("b", {out}));
  return operands;
}

// x [rows, in] times weight [out, in]^T plus bias; rows = kTokens in
// training (forward and backward), 1 (a matrix-vector product) or
// kBeamRows for a decoding step (`group` kDecode: forward only).
void AddLinearCases(const Placement& place, int64_t rows, int64_t in, int64_t out,
                    RowGroup group, std::vector<OpCase>* cases) {
  const double elem = place.ElementBytes();  // Bytes of a floating element.
  const bool decode = group == RowGroup::kDecode;
  const std::string shape = absl::StrFormat("%dx%d -> %d", rows, in, out);
  const double gemm_flops = 2.0 * rows * in * out;
  const double io_bytes = elem * (rows * in + out * in + out + rows * out);
  const std::string spec = absl::StrFormat(R"("op": "linear", "tokens": %d, "in": %d, "out": %d)",
                                           rows, in, out);
  cases->push_back(OpCase{
      .op = "linear_fwd", .shape = shape, .flops = gemm_flops, .bytes = io_bytes,
      .tokens = rows, .bound = rows == 1 ? Bound::kMemory : Bound::kGemm, .group = group,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(const LinearOperands o, DrawLinearOperands(inputs, rows, in, out));
        return inputs.Done(Returning([=] { return Linear(o.x, o.w, o.b); }));
      }});
  if (decode) return;  // A decoding step has no backward.
  cases->push_back(OpCase{
      .op = "linear_bwd", .shape = shape, .flops = 2 * gemm_flops, .bytes = 2 * io_bytes,
      .tokens = rows, .bound = Bound::kGemm,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "bwd"})"),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(const LinearOperands o, DrawLinearOperands(inputs, rows, in, out));
        TFM_ASSIGN_OR_RETURN(Tensor dout, inputs.Uniform("dout", {rows, out}));
        return inputs.Done([=]() -> absl::StatusOr<std::vector<Tensor>> {
          TFM_ASSIGN_OR_RETURN(LinearGrads g, LinearBackward(dout, o.x, o.w));
          return std::vector<Tensor>{g.dx, g.dweight, g.dbias};
        });
      }});
}

// The unfused attention scores Q K^T of every head: a batched matmul.
void AddMatMulCases(const Placement& place, int64_t batch, std::vector<OpCase>* cases) {
  const double elem = place.ElementBytes();  // Bytes of a floating element.
  const int64_t n = kTokens / batch, bh = batch * kHeads;
  const std::string shape = absl::StrFormat("%dx%dx%d @ (%dx%dx%d)^T", bh, n, kDHead, bh, n, kDHead);
  const double flops = 2.0 * bh * n * n * kDHead;
  const double io_bytes = elem * bh * (2 * n * kDHead + n * n);
  const std::string spec = absl::StrFormat(R"("op": "matmul_nt", "batch": %d, "n": %d, "d": %d)",
                                           bh, n, kDHead);
  cases->push_back(OpCase{
      .op = "matmul_fwd", .shape = shape, .flops = flops, .bytes = io_bytes, .tokens = kTokens,
      .bound = Bound::kGemm, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor a, inputs.Uniform("a", {bh, n, kDHead}));
        TFM_ASSIGN_OR_RETURN(Tensor b, inputs.Uniform("b", {bh, n, kDHead}));
        return inputs.Done(Returning([=] { return MatMul(a, b, false, true); }));
      }});
  cases->push_back(OpCase{
      .op = "matmul_bwd", .shape = shape, .flops = 2 * flops, .bytes = 2 * io_bytes,
      .tokens = kTokens, .bound = Bound::kGemm,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "bwd"})"),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor a, inputs.Uniform("a", {bh, n, kDHead}));
        TFM_ASSIGN_OR_RETURN(Tensor b, inputs.Uniform("b", {bh, n, kDHead}));
        TFM_ASSIGN_OR_RETURN(Tensor dout, inputs.Uniform("dout", {bh, n, n}));
        return inputs.Done([=]() -> absl::StatusOr<std::vector<Tensor>> {
          TFM_ASSIGN_OR_RETURN(MatMulGrads g, MatMulBackward(dout, a, b, false, true));
          return std::vector<Tensor>{g.da, g.db};
        });
      }});
}

void AddElementwiseCases(const Placement& place, std::vector<OpCase>* cases) {
  const double elem = place.ElementBytes();  // Bytes of a floating element.
  const int64_t d = kDModel, elems = kTokens * d;
  const std::string shape = absl::StrFormat("%dx%d", kTokens, d);
  // The residual connection.
  cases->push_back(OpCase{
      .op = "add_fwd", .shape = shape + " + " + shape, .bytes = 3 * elem * elems,
      .tokens = kTokens, .bound = Bound::kMemory,
      .torch_spec = absl::StrFormat(R"({"op": "add", "tokens": %d, "d": %d, "mode": "fwd"})",
                                    kTokens, d),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor a, inputs.Uniform("a", {kTokens, d}));
        TFM_ASSIGN_OR_RETURN(Tensor b, inputs.Uniform("b", {kTokens, d}));
        return inputs.Done(Returning([=] { return Add(a, b); }));
      }});
  // A broadcast bias: the backward reduces over the tokens. dx is dout
  // itself on both sides (PyTorch's autograd hands it on; our layers do), so
  // only the bias gradient is timed.
  cases->push_back(OpCase{
      .op = "add_bwd", .shape = absl::StrFormat("%s + %d (bias)", shape, d),
      .bytes = elem * (elems + d), .tokens = kTokens, .bound = Bound::kMemory,
      .torch_spec = absl::StrFormat(
          R"({"op": "add_bias", "tokens": %d, "d": %d, "mode": "bwd"})", kTokens, d),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_RETURN_IF_ERROR(inputs.Uniform("x", {kTokens, d}).status());
        TFM_ASSIGN_OR_RETURN(Tensor bias, inputs.Uniform("bias", {d}));
        TFM_ASSIGN_OR_RETURN(Tensor dout, inputs.Uniform("dout", {kTokens, d}));
        return inputs.Done([=]() -> absl::StatusOr<std::vector<Tensor>> {
          TFM_ASSIGN_OR_RETURN(Tensor dbias, SumToShape(dout, bias));
          return std::vector<Tensor>{dout, dbias};
        });
      }});

  const int64_t ff_elems = kTokens * kDFF;
  const std::string ff_shape = absl::StrFormat("%dx%d", kTokens, kDFF);
  const std::string relu_spec =
      absl::StrFormat(R"("op": "relu", "tokens": %d, "d": %d)", kTokens, kDFF);
  cases->push_back(OpCase{
      .op = "relu_fwd", .shape = ff_shape, .bytes = 2 * elem * ff_elems, .tokens = kTokens,
      .bound = Bound::kMemory, .torch_spec = absl::StrCat("{", relu_spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor x, inputs.Uniform("x", {kTokens, kDFF}));
        return inputs.Done(Returning([=] { return Relu(x); }));
      }});
  cases->push_back(OpCase{
      .op = "relu_bwd", .shape = ff_shape, .bytes = 3 * elem * ff_elems, .tokens = kTokens,
      .bound = Bound::kMemory, .torch_spec = absl::StrCat("{", relu_spec, R"(, "mode": "bwd"})"),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor x, inputs.Uniform("x", {kTokens, kDFF}));
        TFM_ASSIGN_OR_RETURN(Tensor out, Relu(x));
        TFM_ASSIGN_OR_RETURN(Tensor dout, inputs.Uniform("dout", {kTokens, kDFF}));
        return inputs.Done(Returning([=] { return ReluBackward(dout, out); }));
      }});

  const std::string dropout_shape = absl::StrFormat("%s p=%g", shape, kDropoutP);
  const std::string dropout_spec = absl::StrFormat(
      R"("op": "dropout", "tokens": %d, "d": %d, "p": %g)", kTokens, d, kDropoutP);
  const PhiloxState state{.seed = 1, .stream = 7};
  // Like torch, the forward keeps a mask for the backward (ours packs it in
  // one bit per element).
  cases->push_back(OpCase{
      .op = "dropout_fwd", .shape = dropout_shape, .bytes = 2 * elem * elems,
      .tokens = kTokens, .bound = Bound::kMemory,
      .torch_spec = absl::StrCat("{", dropout_spec, R"(, "mode": "fwd"})"),
      .check = Check::kDropoutPattern,
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor x, inputs.Uniform("x", {kTokens, d}));
        return inputs.Done([=]() -> absl::StatusOr<std::vector<Tensor>> {
          TFM_ASSIGN_OR_RETURN(DropoutOutput out, DropoutWithMask(x, kDropoutP, state));
          return std::vector<Tensor>{out.out};
        });
      }});
  cases->push_back(OpCase{
      .op = "dropout_bwd", .shape = dropout_shape + " mask", .bytes = 2 * elem * elems,
      .tokens = kTokens, .bound = Bound::kMemory,
      .torch_spec = absl::StrCat("{", dropout_spec, R"(, "mode": "bwd"})"),
      .check = Check::kDropoutPattern,
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor x, inputs.Uniform("x", {kTokens, d}));
        TFM_ASSIGN_OR_RETURN(DropoutOutput forward, DropoutWithMask(x, kDropoutP, state));
        TFM_ASSIGN_OR_RETURN(Tensor dout, inputs.Uniform("dout", {kTokens, d}));
        const Tensor mask = forward.mask;
        return inputs.Done(
            Returning([=] { return DropoutBackwardMasked(dout, kDropoutP, mask); }));
      }});
  // Regenerating the mask from the Philox state instead of keeping it: work
  // PyTorch never does, so it is held against our own mask row.
  cases->push_back(OpCase{
      .op = "dropout_bwd", .shape = dropout_shape + " regenerate", .bytes = 2 * elem * elems,
      .tokens = kTokens, .bound = Bound::kMemory,
      .own_baseline = "dropout_bwd " + dropout_shape + " mask",
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor dout, inputs.Uniform("dout", {kTokens, d}));
        return inputs.Done(Returning([=] { return DropoutBackward(dout, kDropoutP, state); }));
      }});
}

// A search's product of `rows` rows: a batched beam search's step
// (kBeamRows: 32 sentences x beam 4) or a batch's encoder pass
// (kEncoderRows), by linear (OpenBLAS, which packs the weight at every call)
// and by packed_linear (the weight packed once per search, as DecodingLinear
// does; CPU f32 only, held against the linear row).
void AddLaidOutLinearCases(const Placement& place, int64_t rows, int64_t in, int64_t out,
                           std::vector<OpCase>* cases) {
  AddLinearCases(place, rows, in, out, RowGroup::kDecode, cases);
  if (!place.device.is_cpu() || place.dtype != DType::kF32) return;
  const std::string shape = absl::StrFormat("%dx%d -> %d", rows, in, out);
  const double flops = 2.0 * rows * in * out;
  const double io_bytes = kF32 * (rows * in + out * in + out + rows * out);
  cases->push_back(OpCase{
      .op = "packed_linear_fwd", .shape = shape, .flops = flops, .bytes = io_bytes,
      .tokens = rows, .bound = Bound::kGemm, .group = RowGroup::kDecode,
      .own_baseline = "linear_fwd " + shape,
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(const LinearOperands o, DrawLinearOperands(inputs, rows, in, out));
        TFM_ASSIGN_OR_RETURN(Tensor packed, PackLinearWeight(o.w));
        return inputs.Done(Returning([=] { return PackedLinear(o.x, packed, out, o.b); }));
      }});
}

void AddLayerNormCases(const Placement& place, std::vector<OpCase>* cases) {
  const double elem = place.ElementBytes();  // Bytes of a floating element.
  const int64_t d = kDModel, elems = kTokens * d;
  const std::string shape = absl::StrFormat("%dx%d", kTokens, d);
  const std::string spec =
      absl::StrFormat(R"("op": "layer_norm", "tokens": %d, "d": %d)", kTokens, d);
  cases->push_back(OpCase{
      .op = "layer_norm_fwd", .shape = shape, .bytes = 2 * elem * elems, .tokens = kTokens,
      .bound = Bound::kMemory, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor x, inputs.Uniform("x", {kTokens, d}));
        TFM_ASSIGN_OR_RETURN(Tensor gain, inputs.Uniform("gain", {d}));
        TFM_ASSIGN_OR_RETURN(Tensor bias, inputs.Uniform("bias", {d}));
        return inputs.Done([=]() -> absl::StatusOr<std::vector<Tensor>> {
          TFM_ASSIGN_OR_RETURN(LayerNormOutputs out, LayerNorm(x, gain, bias));
          return std::vector<Tensor>{out.out};
        });
      }});
  cases->push_back(OpCase{
      .op = "layer_norm_bwd", .shape = shape, .bytes = 3 * elem * elems, .tokens = kTokens,
      .bound = Bound::kMemory, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "bwd"})"),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor x, inputs.Uniform("x", {kTokens, d}));
        TFM_ASSIGN_OR_RETURN(Tensor gain, inputs.Uniform("gain", {d}));
        TFM_ASSIGN_OR_RETURN(Tensor bias, inputs.Uniform("bias", {d}));
        TFM_ASSIGN_OR_RETURN(LayerNormOutputs fwd, LayerNorm(x, gain, bias));
        TFM_ASSIGN_OR_RETURN(Tensor dout, inputs.Uniform("dout", {kTokens, d}));
        return inputs.Done([=]() -> absl::StatusOr<std::vector<Tensor>> {
          TFM_ASSIGN_OR_RETURN(LayerNormGrads g,
                               LayerNormBackward(dout, x, gain, fwd.mean, fwd.rstd));
          return std::vector<Tensor>{g.dx, g.dgain, g.dbias};
        });
      }});
}

void AddEmbeddingCases(const Placement& place, const CaseOptions& options,
                       std::vector<OpCase>* cases) {
  const double elem = place.ElementBytes();  // Bytes of a floating element.
  const int64_t d = kDModel, vocab = options.vocab, batch = options.batch;
  const int64_t len = kTokens / batch;
  const float scale = std::sqrt(static_cast<float>(d));
  const std::string shape = absl::StrFormat("ids %dx%d, table %dx%d", batch, len, vocab, d);
  const std::string spec = absl::StrFormat(
      R"("op": "embedding", "batch": %d, "len": %d, "vocab": %d, "d": %d)", batch, len, vocab, d);
  cases->push_back(OpCase{
      .op = "embedding_fwd", .shape = shape, .bytes = 2 * elem * kTokens * d, .tokens = kTokens,
      .bound = Bound::kMemory, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor table, inputs.Uniform("table", {vocab, d}));
        TFM_ASSIGN_OR_RETURN(Tensor ids, inputs.Ids("ids", {batch, len}, vocab));
        return inputs.Done(Returning([=] { return Embedding(table, ids, scale); }));
      }});
  // The dense [vocab, d] gradient is written in full: that is the traffic.
  cases->push_back(OpCase{
      .op = "embedding_bwd", .shape = shape, .bytes = elem * (kTokens * d + vocab * d),
      .tokens = kTokens, .bound = Bound::kMemory,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "bwd"})"),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_RETURN_IF_ERROR(inputs.Uniform("table", {vocab, d}).status());
        TFM_ASSIGN_OR_RETURN(Tensor ids, inputs.Ids("ids", {batch, len}, vocab));
        TFM_ASSIGN_OR_RETURN(Tensor dout, inputs.Uniform("dout", {batch, len, d}));
        return inputs.Done(
            Returning([=] { return EmbeddingBackward(ids, dout, vocab, scale); }));
      }});
  cases->push_back(OpCase{
      .op = "positional_encoding_fwd", .shape = absl::StrFormat("%dx%dx%d", batch, len, d),
      .bytes = 2 * elem * kTokens * d, .tokens = kTokens, .bound = Bound::kMemory,
      .torch_spec = absl::StrFormat(
          R"({"op": "positional_encoding", "batch": %d, "len": %d, "d": %d, "mode": "fwd"})",
          batch, len, d),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor x, inputs.Uniform("x", {batch, len, d}));
        return inputs.Done(Returning([=] { return AddPositionalEncoding(x); }));
      }});

  const double flops = 2.0 * kTokens * d * vocab;
  const double io_bytes = elem * (kTokens * d + vocab * d + kTokens * vocab);
  const std::string tied_shape = absl::StrFormat("%dx%d -> vocab %d", kTokens, d, vocab);
  const std::string tied_spec = absl::StrFormat(
      R"("op": "tied_projection", "tokens": %d, "vocab": %d, "d": %d)", kTokens, vocab, d);
  cases->push_back(OpCase{
      .op = "tied_projection_fwd", .shape = tied_shape, .flops = flops, .bytes = io_bytes,
      .tokens = kTokens, .bound = Bound::kGemm,
      .torch_spec = absl::StrCat("{", tied_spec, R"(, "mode": "fwd"})"),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor h, inputs.Uniform("h", {kTokens, d}));
        TFM_ASSIGN_OR_RETURN(Tensor table, inputs.Uniform("table", {vocab, d}));
        return inputs.Done(Returning([=] { return TiedProjection(h, table); }));
      }});
  cases->push_back(OpCase{
      .op = "tied_projection_bwd", .shape = tied_shape, .flops = 2 * flops,
      .bytes = 2 * io_bytes, .tokens = kTokens, .bound = Bound::kGemm,
      .torch_spec = absl::StrCat("{", tied_spec, R"(, "mode": "bwd"})"),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor h, inputs.Uniform("h", {kTokens, d}));
        TFM_ASSIGN_OR_RETURN(Tensor table, inputs.Uniform("table", {vocab, d}));
        TFM_ASSIGN_OR_RETURN(Tensor d_logits, inputs.Uniform("dout", {kTokens, vocab}));
        return inputs.Done([=]() -> absl::StatusOr<std::vector<Tensor>> {
          TFM_ASSIGN_OR_RETURN(TiedProjectionGrads g, TiedProjectionBackward(h, table, d_logits));
          return std::vector<Tensor>{g.dh, g.dtable};
        });
      }});
}

// Attention over all heads of `batch` sequences: `q_len` queries against n
// keys. Training: batch = kTokens / n and q_len = n; a decoding step: batch
// 1, one query against n cached keys (the single-query kernel).
void AddAttentionCases(const Placement& place, int64_t n, bool causal, bool decode,
                       std::vector<OpCase>* cases) {
  const double elem = place.ElementBytes();  // Bytes of a floating element.
  const int64_t batch = decode ? 1 : std::max<int64_t>(1, kTokens / n);
  const int64_t q_len = decode ? 1 : n;
  const Shape q_shape = {batch, kHeads, q_len, kDHead};
  const Shape kv_shape = {batch, kHeads, n, kDHead};
  const std::string shape =
      decode ? absl::StrFormat("1 query, %d cached keys (1x%dx1x%d)", n, kHeads, kDHead)
             : absl::StrFormat("n=%d%s (%dx%dx%dx%d)", n, causal ? " causal" : "", batch, kHeads,
                               n, kDHead);
  // Q K^T and P V; backward recomputes P, then dV, dP, dQ, dK (2.5x the
  // forward, FlashAttention's accounting). A causal mask halves both.
  const double fwd_flops = 4.0 * batch * kHeads * q_len * n * kDHead * (causal ? 0.5 : 1.0);
  const double io_bytes = elem * (2 * NumElements(q_shape) + 2 * NumElements(kv_shape));
  const std::string spec = absl::StrFormat(
      R"("op": "attention", "batch": %d, "heads": %d, "q_len": %d, "n": %d, "d": %d, )"
      R"("causal": %s)",
      batch, kHeads, q_len, n, kDHead, causal ? "true" : "false");
  AttentionOptions options;
  options.causal = causal;
  cases->push_back(OpCase{
      .op = "attention_fwd", .shape = shape, .flops = fwd_flops, .bytes = io_bytes,
      .tokens = batch * q_len, .bound = decode ? Bound::kMemory : Bound::kOther,
      .group = decode ? RowGroup::kDecode : RowGroup::kTraining,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor q, inputs.Uniform("q", q_shape));
        TFM_ASSIGN_OR_RETURN(Tensor k, inputs.Uniform("k", kv_shape));
        TFM_ASSIGN_OR_RETURN(Tensor v, inputs.Uniform("v", kv_shape));
        return inputs.Done([=]() -> absl::StatusOr<std::vector<Tensor>> {
          TFM_ASSIGN_OR_RETURN(AttentionOutput out, ScaledDotProductAttention(q, k, v, options));
          return std::vector<Tensor>{out.out};
        });
      }});
  if (decode) return;
  cases->push_back(OpCase{
      .op = "attention_fwdbwd", .shape = shape, .flops = 3.5 * fwd_flops, .bytes = 2 * io_bytes,
      .tokens = batch * n, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwdbwd"})"),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor q, inputs.Uniform("q", q_shape));
        TFM_ASSIGN_OR_RETURN(Tensor k, inputs.Uniform("k", kv_shape));
        TFM_ASSIGN_OR_RETURN(Tensor v, inputs.Uniform("v", kv_shape));
        TFM_ASSIGN_OR_RETURN(Tensor d_out, inputs.Uniform("dout", q_shape));
        return inputs.Done([=]() -> absl::StatusOr<std::vector<Tensor>> {
          TFM_ASSIGN_OR_RETURN(AttentionOutput fwd, ScaledDotProductAttention(q, k, v, options));
          TFM_ASSIGN_OR_RETURN(
              AttentionGrads g,
              ScaledDotProductAttentionBackward(q, k, v, fwd.out, fwd.lse, d_out, options));
          return std::vector<Tensor>{g.dq, g.dk, g.dv};
        });
      }});
}

// The unfused attention's softmax over the scores of every head.
void AddSoftmaxCases(const Placement& place, int64_t batch, std::vector<OpCase>* cases) {
  const double elem = place.ElementBytes();  // Bytes of a floating element.
  const int64_t n = kTokens / batch;
  const Shape shape = {batch, kHeads, n, n};
  const double elems = static_cast<double>(NumElements(shape));
  const std::string text = absl::StrFormat("%dx%dx%dx%d", batch, kHeads, n, n);
  const std::string spec = absl::StrFormat(
      R"("op": "softmax", "shape": [%d, %d, %d, %d])", batch, kHeads, n, n);
  cases->push_back(OpCase{
      .op = "softmax_fwd", .shape = text, .bytes = 2 * elem * elems, .tokens = kTokens,
      .bound = Bound::kMemory, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor x, inputs.Uniform("x", shape));
        return inputs.Done(Returning([=] { return Softmax(x); }));
      }});
  cases->push_back(OpCase{
      .op = "softmax_bwd", .shape = text, .bytes = 3 * elem * elems, .tokens = kTokens,
      .bound = Bound::kMemory, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "bwd"})"),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor x, inputs.Uniform("x", shape));
        TFM_ASSIGN_OR_RETURN(Tensor out, Softmax(x));
        TFM_ASSIGN_OR_RETURN(Tensor dout, inputs.Uniform("dout", shape));
        return inputs.Done(Returning([=] { return SoftmaxBackward(dout, out); }));
      }});
}

// The loss over the tied projection's logits, label smoothing 0.1.
void AddCrossEntropyCases(const Placement& place, int64_t vocab, std::vector<OpCase>* cases) {
  const double elem = place.ElementBytes();  // Bytes of a floating element.
  const double logits_bytes = elem * kTokens * vocab;
  const std::string shape = absl::StrFormat("%dx%d eps=0.1", kTokens, vocab);
  const std::string spec = absl::StrFormat(
      R"("op": "cross_entropy", "tokens": %d, "vocab": %d, "epsilon": 0.1)", kTokens, vocab);
  const CrossEntropyOptions options{.epsilon = 0.1f};
  cases->push_back(OpCase{
      .op = "cross_entropy_fwd", .shape = shape, .bytes = logits_bytes, .tokens = kTokens,
      .bound = Bound::kMemory, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .tolerance = SumTolerance(),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor logits, inputs.Uniform("logits", {kTokens, vocab}));
        TFM_ASSIGN_OR_RETURN(Tensor targets, inputs.Ids("targets", {kTokens}, vocab));
        return inputs.Done([=]() -> absl::StatusOr<std::vector<Tensor>> {
          TFM_ASSIGN_OR_RETURN(CrossEntropyOutput out,
                               LabelSmoothedCrossEntropy(logits, targets, options));
          return std::vector<Tensor>{out.loss};
        });
      }});
  // d loss = 1 on both sides (torch_ops.py's default upstream gradient).
  cases->push_back(OpCase{
      .op = "cross_entropy_bwd", .shape = shape, .bytes = 2 * logits_bytes, .tokens = kTokens,
      .bound = Bound::kMemory, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "bwd"})"),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor logits, inputs.Uniform("logits", {kTokens, vocab}));
        TFM_ASSIGN_OR_RETURN(Tensor targets, inputs.Ids("targets", {kTokens}, vocab));
        TFM_ASSIGN_OR_RETURN(CrossEntropyOutput fwd,
                             LabelSmoothedCrossEntropy(logits, targets, options));
        TFM_ASSIGN_OR_RETURN(Tensor one, Tensor::FromVector<float>({1.0f}, {}));
        TFM_ASSIGN_OR_RETURN(Tensor d_loss, inputs.OnDevice(one));
        return inputs.Done(Returning([=] {
          return LabelSmoothedCrossEntropyBackward(logits, targets, fwd.lse, d_loss, options);
        }));
      }});
}

// One optimizer step over 16M parameters (a quarter of the base model's 65M),
// from zero moments on both sides; the first call's parameters are compared.
void AddAdamCase(const Placement& place, std::vector<OpCase>* cases) {
  constexpr int64_t kParams = int64_t{1} << 24;
  cases->push_back(OpCase{
      .op = "adam_step", .shape = absl::StrFormat("%d params", kParams),
      .bytes = kF32 * kParams * 7,  // Reads param, grad, m, v; writes param, m, v.
      .bound = Bound::kMemory,
      .torch_spec = absl::StrFormat(R"({"op": "adam", "params": %d, "mode": "fwd"})", kParams),
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor param, inputs.Uniform("param", {kParams}));
        TFM_ASSIGN_OR_RETURN(Tensor grad, inputs.Uniform("grad", {kParams}));
        TFM_ASSIGN_OR_RETURN(Tensor zeros, Tensor::Zeros({kParams}, DType::kF32));
        TFM_ASSIGN_OR_RETURN(Tensor m, inputs.OnDevice(zeros));
        TFM_ASSIGN_OR_RETURN(Tensor v, inputs.OnDevice(zeros));
        return inputs.Done([=]() -> absl::StatusOr<std::vector<Tensor>> {
          TFM_RETURN_IF_ERROR(AdamUpdate(param, grad, m, v, AdamOptions{.lr = 1e-4}));
          return std::vector<Tensor>{param};
        });
      }});
}

// The global gradient norm and clipping by it (torch.nn.utils'
// get_total_norm and clip_grad_norm_) over 16M gradients in 64 tensors of
// 256k. Clipping is checked on its first call (max_norm 1 is far below the
// norm); the timed calls then find the norm at max_norm, as in a step that
// needs no clipping: ours only measures (and waits for) the norm, torch also
// multiplies by its clamped coefficient of 1. Bytes: one read, the least
// either must do.
void AddGradNormCases(const Placement& place, std::vector<OpCase>* cases) {
  constexpr int64_t kTensors = 64, kEach = int64_t{1} << 18;
  const std::string shape = absl::StrFormat("%d tensors x %d", kTensors, kEach);
  for (const bool clip : {false, true}) {
    cases->push_back(OpCase{
        .op = clip ? "clip_grad_norm" : "grad_norm",
        .shape = clip ? shape + " max_norm=1" : shape,
        .bytes = place.ElementBytes() * kTensors * kEach, .bound = Bound::kMemory,
        .torch_spec = absl::StrFormat(
            R"({"op": "grad_norm", "tensors": %d, "clip": %s, "max_norm": 1.0, "mode": "step"})",
            kTensors, clip ? "true" : "false"),
        .tolerance = SumTolerance(),
        .prepare = [=]() -> absl::StatusOr<Prepared> {
          Inputs inputs(place);
          TFM_ASSIGN_OR_RETURN(Tensor grads, inputs.Uniform("grads", {kTensors, kEach}));
          std::vector<Tensor> parts;
          for (int64_t i = 0; i < kTensors; ++i) {
            TFM_ASSIGN_OR_RETURN(Tensor part, grads.Slice(i, i + 1));
            parts.push_back(part);
          }
          return inputs.Done([=]() -> absl::StatusOr<std::vector<Tensor>> {
            TFM_ASSIGN_OR_RETURN(double norm,
                                 clip ? ClipGradNorm(parts, 1.0) : GlobalGradNorm(parts));
            TFM_ASSIGN_OR_RETURN(Tensor norm_tensor,
                                 Tensor::FromVector<float>({static_cast<float>(norm)}, {}));
            if (!clip) return std::vector<Tensor>{norm_tensor};
            return std::vector<Tensor>{norm_tensor, grads};
          });
        }});
  }
}

}  // namespace

std::vector<OpCase> BaseModelCases(const CaseOptions& options) {
  const Placement place{options.device, options.dtype};
  std::vector<OpCase> cases;
  AddLinearCases(place, kTokens, kDModel, kDFF, RowGroup::kTraining, &cases);
  AddLinearCases(place, kTokens, kDFF, kDModel, RowGroup::kTraining, &cases);
  AddMatMulCases(place, options.batch, &cases);
  AddElementwiseCases(place, &cases);
  AddLayerNormCases(place, &cases);
  AddSoftmaxCases(place, options.batch, &cases);
  AddEmbeddingCases(place, options, &cases);
  AddCrossEntropyCases(place, options.vocab, &cases);
  // Adam keeps f32 parameters and moments whatever the model computes in.
  if (options.dtype == DType::kF32) AddAdamCase(place, &cases);
  if (options.grad_norm_cases) AddGradNormCases(place, &cases);
  for (int64_t n : options.attention_lengths) AddAttentionCases(place, n, false, false, &cases);
  if (options.causal_attention_length > 0) {
    AddAttentionCases(place, options.causal_attention_length, true, false, &cases);
  }
  // Batch-1 decoding: the FFN's two products at one row, self-attention of
  // one new token over its cache.
  AddLinearCases(place, 1, kDModel, kDFF, RowGroup::kDecode, &cases);
  AddLinearCases(place, 1, kDFF, kDModel, RowGroup::kDecode, &cases);
  for (int64_t n : options.decode_cache_lengths) AddAttentionCases(place, n, false, true, &cases);
  // Batched beam search and a batch's encoder pass: the fused q/k/v product
  // and the FFN's two.
  for (const int64_t rows : {kBeamRows, kEncoderRows}) {
    AddLaidOutLinearCases(place, rows, kDModel, 3 * kDModel, &cases);
    AddLaidOutLinearCases(place, rows, kDModel, kDFF, &cases);
    AddLaidOutLinearCases(place, rows, kDFF, kDModel, &cases);
  }
  for (OpCase& c : cases) c.dtype = options.dtype;
  return cases;
}

OpCase SgemmCase() {
  return OpCase{
      .op = "sgemm",
      .shape = absl::StrFormat("%dx%dx%d", kSgemmM, kSgemmK, kSgemmN),
      .flops = 2.0 * kSgemmM * kSgemmK * kSgemmN,
      .bound = Bound::kGemm,
      .torch_spec = absl::StrFormat(R"({"op": "sgemm", "m": %d, "k": %d, "n": %d, "mode": "fwd"})",
                                    kSgemmM, kSgemmK, kSgemmN),
      .tolerance = SumTolerance(),
      .prepare = []() -> absl::StatusOr<Prepared> {
        Inputs inputs(Placement{});
        TFM_ASSIGN_OR_RETURN(Tensor a, inputs.Uniform("a", {kSgemmM, kSgemmK}));
        TFM_ASSIGN_OR_RETURN(Tensor b, inputs.Uniform("b", {kSgemmN, kSgemmK}));
        TFM_ASSIGN_OR_RETURN(Tensor c, Tensor::Empty({kSgemmM, kSgemmN}, DType::kF32));
        return inputs.Done([=]() mutable -> absl::StatusOr<std::vector<Tensor>> {
          GemmCpu(false, true, kSgemmM, kSgemmN, kSgemmK, a.data<float>(), b.data<float>(), 0.0f,
                  c.data<float>());
          return std::vector<Tensor>{c};
        });
      }};
}

OpCase DeviceGemmCase(const CaseOptions& options) {
  constexpr int64_t n = kDeviceGemmSize;
  const Placement place{options.device, options.dtype};
  return OpCase{
      .op = "gemm",
      .shape = absl::StrFormat("%dx%dx%d", n, n, n),
      .flops = 2.0 * n * n * n,
      .bytes = place.ElementBytes() * 3 * n * n,
      .bound = Bound::kGemm,
      .torch_spec = absl::StrFormat(R"({"op": "sgemm", "m": %d, "k": %d, "n": %d, "mode": "fwd"})",
                                    n, n, n),
      .tolerance = SumTolerance(),
      .dtype = options.dtype,
      .prepare = [=]() -> absl::StatusOr<Prepared> {
        Inputs inputs(place);
        TFM_ASSIGN_OR_RETURN(Tensor a, inputs.Uniform("a", {n, n}));
        TFM_ASSIGN_OR_RETURN(Tensor b, inputs.Uniform("b", {n, n}));
        return inputs.Done(Returning([=] { return MatMul(a, b, false, true); }));
      }};
}

}  // namespace bench
}  // namespace tfm

#include "benchmarks/op_cases.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/rng.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "ops/adam/adam.h"
#include "ops/add/add.h"
#include "ops/attention/attention.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/dropout/dropout.h"
#include "ops/embedding/embedding.h"
#include "ops/embedding/tied_projection.h"
#include "ops/layer_norm/layer_norm.h"
#include "ops/linear/linear.h"
#include "ops/matmul/gemm_cpu.h"
#include "ops/matmul/matmul.h"
#include "ops/positional_encoding/positional_encoding.h"
#include "ops/relu/relu.h"
#include "ops/softmax/softmax.h"

namespace tfm {
namespace bench {
namespace {

constexpr double kF32 = sizeof(float);
constexpr double kDropout = 0.1;  // The paper's P_drop for the base model.

// Uniform in [-1, 1): values of the size activations and gradients have, so
// no kernel meets denormals or overflow. Each tensor gets its own stream.
absl::StatusOr<Tensor> Random(const Shape& shape) {
  static uint64_t stream = 0;
  TFM_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Empty(shape, DType::kF32));
  FillUniformCpu(PhiloxState{.seed = 2017, .stream = ++stream}, -1.0f, 1.0f,
                 tensor.span<float>());
  return tensor;
}

// Token ids spread over the whole vocabulary (a fixed-seed LCG: repeatable,
// and with the collisions a real batch has for frequent tokens).
absl::StatusOr<Tensor> RandomIds(const Shape& shape, int64_t vocab) {
  TFM_ASSIGN_OR_RETURN(Tensor ids, Tensor::Empty(shape, DType::kI64));
  uint64_t state = 12345;
  for (int64_t& id : ids.span<int64_t>()) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    id = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(vocab));
  }
  return ids;
}

// Wraps a StatusOr-returning call as a Body that discards the value.
template <typename F>
Body Discarding(F call) {
  return [call]() -> absl::Status { return call().status(); };
}

void AddLinearCases(int64_t in, int64_t out, std::vector<OpCase>* cases) {
  const std::string shape = absl::StrFormat("%dx%d -> %d", kTokens, in, out);
  const double gemm_flops = 2.0 * kTokens * in * out;
  const double io_bytes = kF32 * (kTokens * in + out * in + out + kTokens * out);
  const std::string spec = absl::StrFormat(R"("op": "linear", "tokens": %d, "in": %d, "out": %d)",
                                           kTokens, in, out);
  cases->push_back(OpCase{
      .op = "linear_fwd", .shape = shape, .flops = gemm_flops, .bytes = io_bytes,
      .tokens = kTokens, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor x, Random({kTokens, in}));
        TFM_ASSIGN_OR_RETURN(Tensor w, Random({out, in}));
        TFM_ASSIGN_OR_RETURN(Tensor b, Random({out}));
        return Discarding([=] { return Linear(x, w, b); });
      }});
  cases->push_back(OpCase{
      .op = "linear_bwd", .shape = shape, .flops = 2 * gemm_flops, .bytes = 2 * io_bytes,
      .tokens = kTokens, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "bwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor x, Random({kTokens, in}));
        TFM_ASSIGN_OR_RETURN(Tensor w, Random({out, in}));
        TFM_ASSIGN_OR_RETURN(Tensor dout, Random({kTokens, out}));
        return Discarding([=] { return LinearBackward(dout, x, w); });
      }});
}

// The unfused attention scores Q K^T of every head: a batched matmul.
void AddMatMulCases(int64_t batch, std::vector<OpCase>* cases) {
  const int64_t n = kTokens / batch, bh = batch * kHeads;
  const std::string shape = absl::StrFormat("%dx%dx%d @ (%dx%dx%d)^T", bh, n, kDHead, bh, n, kDHead);
  const double flops = 2.0 * bh * n * n * kDHead;
  const double io_bytes = kF32 * bh * (2 * n * kDHead + n * n);
  const std::string spec = absl::StrFormat(R"("op": "matmul_nt", "batch": %d, "n": %d, "d": %d)",
                                           bh, n, kDHead);
  cases->push_back(OpCase{
      .op = "matmul_fwd", .shape = shape, .flops = flops, .bytes = io_bytes, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor a, Random({bh, n, kDHead}));
        TFM_ASSIGN_OR_RETURN(Tensor b, Random({bh, n, kDHead}));
        return Discarding([=] { return MatMul(a, b, false, true); });
      }});
  cases->push_back(OpCase{
      .op = "matmul_bwd", .shape = shape, .flops = 2 * flops, .bytes = 2 * io_bytes,
      .tokens = kTokens, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "bwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor a, Random({bh, n, kDHead}));
        TFM_ASSIGN_OR_RETURN(Tensor b, Random({bh, n, kDHead}));
        TFM_ASSIGN_OR_RETURN(Tensor dout, Random({bh, n, n}));
        return Discarding([=] { return MatMulBackward(dout, a, b, false, true); });
      }});
}

void AddElementwiseCases(std::vector<OpCase>* cases) {
  const int64_t d = kDModel, elems = kTokens * d;
  const std::string shape = absl::StrFormat("%dx%d", kTokens, d);
  // The residual connection.
  cases->push_back(OpCase{
      .op = "add_fwd", .shape = shape + " + " + shape, .bytes = 3 * kF32 * elems,
      .tokens = kTokens,
      .torch_spec = absl::StrFormat(R"({"op": "add", "tokens": %d, "d": %d, "mode": "fwd"})",
                                    kTokens, d),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor a, Random({kTokens, d}));
        TFM_ASSIGN_OR_RETURN(Tensor b, Random({kTokens, d}));
        return Discarding([=] { return Add(a, b); });
      }});
  // A broadcast bias: the backward reduces over the tokens (the residual's
  // backward is dout itself, nothing to time).
  cases->push_back(OpCase{
      .op = "add_bwd", .shape = absl::StrFormat("%s + %d (bias)", shape, d),
      .bytes = kF32 * (elems + d), .tokens = kTokens,
      .torch_spec = absl::StrFormat(
          R"({"op": "add_bias", "tokens": %d, "d": %d, "mode": "bwd"})", kTokens, d),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor bias, Random({d}));
        TFM_ASSIGN_OR_RETURN(Tensor dout, Random({kTokens, d}));
        return Discarding([=] { return AddBackward(dout, bias); });
      }});

  const int64_t ff_elems = kTokens * kDFF;
  const std::string ff_shape = absl::StrFormat("%dx%d", kTokens, kDFF);
  const std::string relu_spec =
      absl::StrFormat(R"("op": "relu", "tokens": %d, "d": %d)", kTokens, kDFF);
  cases->push_back(OpCase{
      .op = "relu_fwd", .shape = ff_shape, .bytes = 2 * kF32 * ff_elems, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", relu_spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor x, Random({kTokens, kDFF}));
        return Discarding([=] { return Relu(x); });
      }});
  cases->push_back(OpCase{
      .op = "relu_bwd", .shape = ff_shape, .bytes = 3 * kF32 * ff_elems, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", relu_spec, R"(, "mode": "bwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor x, Random({kTokens, kDFF}));
        TFM_ASSIGN_OR_RETURN(Tensor out, Relu(x));
        TFM_ASSIGN_OR_RETURN(Tensor dout, Random({kTokens, kDFF}));
        return Discarding([=] { return ReluBackward(dout, out); });
      }});

  const std::string dropout_spec = absl::StrFormat(
      R"("op": "dropout", "tokens": %d, "d": %d, "p": %g)", kTokens, d, kDropout);
  const PhiloxState state{.seed = 1, .stream = 7};
  // Like torch, the forward keeps a mask for the backward (ours packs it in
  // one bit per element); the regenerating backward, which keeps nothing,
  // is timed on its own row.
  cases->push_back(OpCase{
      .op = "dropout_fwd", .shape = absl::StrFormat("%s p=%g", shape, kDropout),
      .bytes = 2 * kF32 * elems, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", dropout_spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor x, Random({kTokens, d}));
        return Discarding([=] { return DropoutWithMask(x, kDropout, state); });
      }});
  cases->push_back(OpCase{
      .op = "dropout_bwd", .shape = absl::StrFormat("%s p=%g mask", shape, kDropout),
      .bytes = 2 * kF32 * elems, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", dropout_spec, R"(, "mode": "bwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor x, Random({kTokens, d}));
        TFM_ASSIGN_OR_RETURN(DropoutOutput forward, DropoutWithMask(x, kDropout, state));
        TFM_ASSIGN_OR_RETURN(Tensor dout, Random({kTokens, d}));
        const Tensor mask = forward.mask;
        return Discarding([=] { return DropoutBackwardMasked(dout, kDropout, mask); });
      }});
  cases->push_back(OpCase{
      .op = "dropout_bwd", .shape = absl::StrFormat("%s p=%g regenerate", shape, kDropout),
      .bytes = 2 * kF32 * elems, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", dropout_spec, R"(, "mode": "bwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor dout, Random({kTokens, d}));
        return Discarding([=] { return DropoutBackward(dout, kDropout, state); });
      }});
}

void AddLayerNormCases(std::vector<OpCase>* cases) {
  const int64_t d = kDModel, elems = kTokens * d;
  const std::string shape = absl::StrFormat("%dx%d", kTokens, d);
  const std::string spec =
      absl::StrFormat(R"("op": "layer_norm", "tokens": %d, "d": %d)", kTokens, d);
  cases->push_back(OpCase{
      .op = "layer_norm_fwd", .shape = shape, .bytes = 2 * kF32 * elems, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor x, Random({kTokens, d}));
        TFM_ASSIGN_OR_RETURN(Tensor gain, Random({d}));
        TFM_ASSIGN_OR_RETURN(Tensor bias, Random({d}));
        return Discarding([=] { return LayerNorm(x, gain, bias); });
      }});
  cases->push_back(OpCase{
      .op = "layer_norm_bwd", .shape = shape, .bytes = 3 * kF32 * elems, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "bwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor x, Random({kTokens, d}));
        TFM_ASSIGN_OR_RETURN(Tensor gain, Random({d}));
        TFM_ASSIGN_OR_RETURN(Tensor bias, Random({d}));
        TFM_ASSIGN_OR_RETURN(LayerNormOutputs fwd, LayerNorm(x, gain, bias));
        TFM_ASSIGN_OR_RETURN(Tensor dout, Random({kTokens, d}));
        return Discarding([=] { return LayerNormBackward(dout, x, gain, fwd.mean, fwd.rstd); });
      }});
}

void AddEmbeddingCases(const CaseOptions& options, std::vector<OpCase>* cases) {
  const int64_t d = kDModel, vocab = options.vocab, batch = options.batch;
  const int64_t len = kTokens / batch;
  const float scale = std::sqrt(static_cast<float>(d));
  const std::string shape = absl::StrFormat("ids %dx%d, table %dx%d", batch, len, vocab, d);
  const std::string spec = absl::StrFormat(
      R"("op": "embedding", "batch": %d, "len": %d, "vocab": %d, "d": %d)", batch, len, vocab, d);
  cases->push_back(OpCase{
      .op = "embedding_fwd", .shape = shape, .bytes = 2 * kF32 * kTokens * d, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor table, Random({vocab, d}));
        TFM_ASSIGN_OR_RETURN(Tensor ids, RandomIds({batch, len}, vocab));
        return Discarding([=] { return Embedding(table, ids, scale); });
      }});
  // The dense [vocab, d] gradient is written in full: that is the traffic.
  cases->push_back(OpCase{
      .op = "embedding_bwd", .shape = shape, .bytes = kF32 * (kTokens * d + vocab * d),
      .tokens = kTokens, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "bwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor ids, RandomIds({batch, len}, vocab));
        TFM_ASSIGN_OR_RETURN(Tensor dout, Random({batch, len, d}));
        return Discarding([=] { return EmbeddingBackward(ids, dout, vocab, scale); });
      }});
  cases->push_back(OpCase{
      .op = "positional_encoding_fwd", .shape = absl::StrFormat("%dx%dx%d", batch, len, d),
      .bytes = 2 * kF32 * kTokens * d, .tokens = kTokens,
      .torch_spec = absl::StrFormat(
          R"({"op": "positional_encoding", "batch": %d, "len": %d, "d": %d, "mode": "fwd"})",
          batch, len, d),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor x, Random({batch, len, d}));
        return Discarding([=] { return AddPositionalEncoding(x); });
      }});

  const double flops = 2.0 * kTokens * d * vocab;
  const double io_bytes = kF32 * (kTokens * d + vocab * d + kTokens * vocab);
  const std::string tied_shape = absl::StrFormat("%dx%d -> vocab %d", kTokens, d, vocab);
  const std::string tied_spec = absl::StrFormat(
      R"("op": "tied_projection", "tokens": %d, "vocab": %d, "d": %d)", kTokens, vocab, d);
  cases->push_back(OpCase{
      .op = "tied_projection_fwd", .shape = tied_shape, .flops = flops, .bytes = io_bytes,
      .tokens = kTokens, .torch_spec = absl::StrCat("{", tied_spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor h, Random({kTokens, d}));
        TFM_ASSIGN_OR_RETURN(Tensor table, Random({vocab, d}));
        return Discarding([=] { return TiedProjection(h, table); });
      }});
  cases->push_back(OpCase{
      .op = "tied_projection_bwd", .shape = tied_shape, .flops = 2 * flops,
      .bytes = 2 * io_bytes, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", tied_spec, R"(, "mode": "bwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor h, Random({kTokens, d}));
        TFM_ASSIGN_OR_RETURN(Tensor table, Random({vocab, d}));
        TFM_ASSIGN_OR_RETURN(Tensor d_logits, Random({kTokens, vocab}));
        return Discarding([=] { return TiedProjectionBackward(h, table, d_logits); });
      }});
}

// Attention over all heads of kTokens / n sequences of n tokens.
void AddAttentionCases(int64_t n, bool causal, std::vector<OpCase>* cases) {
  const int64_t batch = std::max<int64_t>(1, kTokens / n);
  const Shape qkv = {batch, kHeads, n, kDHead};
  const std::string shape =
      absl::StrFormat("n=%d%s (%dx%dx%dx%d)", n, causal ? " causal" : "", batch, kHeads, n, kDHead);
  // Q K^T and P V; backward recomputes P, then dV, dP, dQ, dK (2.5x the
  // forward, FlashAttention's accounting). A causal mask halves both.
  const double fwd_flops = 4.0 * batch * kHeads * n * n * kDHead * (causal ? 0.5 : 1.0);
  const double io_bytes = kF32 * 4 * NumElements(qkv);
  const std::string spec =
      absl::StrFormat(R"("op": "attention", "batch": %d, "heads": %d, "n": %d, "d": %d, )"
                      R"("causal": %s)",
                      batch, kHeads, n, kDHead, causal ? "true" : "false");
  AttentionOptions options;
  options.causal = causal;
  cases->push_back(OpCase{
      .op = "attention_fwd", .shape = shape, .flops = fwd_flops, .bytes = io_bytes,
      .tokens = batch * n, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor q, Random(qkv));
        TFM_ASSIGN_OR_RETURN(Tensor k, Random(qkv));
        TFM_ASSIGN_OR_RETURN(Tensor v, Random(qkv));
        return Discarding([=] { return ScaledDotProductAttention(q, k, v, options); });
      }});
  cases->push_back(OpCase{
      .op = "attention_fwdbwd", .shape = shape, .flops = 3.5 * fwd_flops, .bytes = 2 * io_bytes,
      .tokens = batch * n, .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwdbwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor q, Random(qkv));
        TFM_ASSIGN_OR_RETURN(Tensor k, Random(qkv));
        TFM_ASSIGN_OR_RETURN(Tensor v, Random(qkv));
        TFM_ASSIGN_OR_RETURN(Tensor d_out, Random(qkv));
        return Body([=]() -> absl::Status {
          TFM_ASSIGN_OR_RETURN(AttentionOutput fwd, ScaledDotProductAttention(q, k, v, options));
          return ScaledDotProductAttentionBackward(q, k, v, fwd.out, fwd.lse, d_out, options)
              .status();
        });
      }});
}

// The unfused attention's softmax over the scores of every head.
void AddSoftmaxCases(int64_t batch, std::vector<OpCase>* cases) {
  const int64_t n = kTokens / batch;
  const Shape shape = {batch, kHeads, n, n};
  const double elems = static_cast<double>(NumElements(shape));
  const std::string text = absl::StrFormat("%dx%dx%dx%d", batch, kHeads, n, n);
  const std::string spec = absl::StrFormat(
      R"("op": "softmax", "shape": [%d, %d, %d, %d])", batch, kHeads, n, n);
  cases->push_back(OpCase{
      .op = "softmax_fwd", .shape = text, .bytes = 2 * kF32 * elems, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor x, Random(shape));
        return Discarding([=] { return Softmax(x); });
      }});
  cases->push_back(OpCase{
      .op = "softmax_bwd", .shape = text, .bytes = 3 * kF32 * elems, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "bwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor x, Random(shape));
        TFM_ASSIGN_OR_RETURN(Tensor out, Softmax(x));
        TFM_ASSIGN_OR_RETURN(Tensor dout, Random(shape));
        return Discarding([=] { return SoftmaxBackward(dout, out); });
      }});
}

// The loss over the tied projection's logits, label smoothing 0.1.
void AddCrossEntropyCases(int64_t vocab, std::vector<OpCase>* cases) {
  const double logits_bytes = kF32 * kTokens * vocab;
  const std::string shape = absl::StrFormat("%dx%d eps=0.1", kTokens, vocab);
  const std::string spec = absl::StrFormat(
      R"("op": "cross_entropy", "tokens": %d, "vocab": %d, "epsilon": 0.1)", kTokens, vocab);
  const CrossEntropyOptions options{.epsilon = 0.1f};
  cases->push_back(OpCase{
      .op = "cross_entropy_fwd", .shape = shape, .bytes = logits_bytes, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "fwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor logits, Random({kTokens, vocab}));
        TFM_ASSIGN_OR_RETURN(Tensor targets, RandomIds({kTokens}, vocab));
        return Discarding([=] { return LabelSmoothedCrossEntropy(logits, targets, options); });
      }});
  cases->push_back(OpCase{
      .op = "cross_entropy_bwd", .shape = shape, .bytes = 2 * logits_bytes, .tokens = kTokens,
      .torch_spec = absl::StrCat("{", spec, R"(, "mode": "bwd"})"),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor logits, Random({kTokens, vocab}));
        TFM_ASSIGN_OR_RETURN(Tensor targets, RandomIds({kTokens}, vocab));
        TFM_ASSIGN_OR_RETURN(CrossEntropyOutput fwd,
                             LabelSmoothedCrossEntropy(logits, targets, options));
        TFM_ASSIGN_OR_RETURN(Tensor d_loss, Tensor::FromVector<float>({1.0f}, {}));
        return Discarding([=] {
          return LabelSmoothedCrossEntropyBackward(logits, targets, fwd.lse, d_loss, options);
        });
      }});
}

// One optimizer step over 16M parameters (a quarter of the base model's 65M).
void AddAdamCase(std::vector<OpCase>* cases) {
  constexpr int64_t kParams = int64_t{1} << 24;
  cases->push_back(OpCase{
      .op = "adam_step", .shape = absl::StrFormat("%d params", kParams),
      .bytes = kF32 * kParams * 7,  // Reads param, grad, m, v; writes param, m, v.
      .torch_spec = absl::StrFormat(R"({"op": "adam", "params": %d, "mode": "fwd"})", kParams),
      .prepare = [=]() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor param, Random({kParams}));
        TFM_ASSIGN_OR_RETURN(Tensor grad, Random({kParams}));
        TFM_ASSIGN_OR_RETURN(Tensor m, Tensor::Zeros({kParams}, DType::kF32));
        TFM_ASSIGN_OR_RETURN(Tensor v, Tensor::Zeros({kParams}, DType::kF32));
        return Body([=]() -> absl::Status {
          return AdamUpdate(param, grad, m, v, AdamOptions{.lr = 1e-4});
        });
      }});
}

}  // namespace

std::vector<OpCase> BaseModelCases(const CaseOptions& options) {
  std::vector<OpCase> cases;
  AddLinearCases(kDModel, kDFF, &cases);
  AddLinearCases(kDFF, kDModel, &cases);
  AddMatMulCases(options.batch, &cases);
  AddElementwiseCases(&cases);
  AddLayerNormCases(&cases);
  AddSoftmaxCases(options.batch, &cases);
  AddEmbeddingCases(options, &cases);
  AddCrossEntropyCases(options.vocab, &cases);
  AddAdamCase(&cases);
  for (int64_t n : options.attention_lengths) AddAttentionCases(n, false, &cases);
  if (options.causal_attention_length > 0) {
    AddAttentionCases(options.causal_attention_length, true, &cases);
  }
  return cases;
}

OpCase SgemmCase() {
  return OpCase{
      .op = "sgemm",
      .shape = absl::StrFormat("%dx%dx%d", kSgemmM, kSgemmK, kSgemmN),
      .flops = 2.0 * kSgemmM * kSgemmK * kSgemmN,
      .torch_spec = absl::StrFormat(R"({"op": "sgemm", "m": %d, "k": %d, "n": %d, "mode": "fwd"})",
                                    kSgemmM, kSgemmK, kSgemmN),
      .prepare = []() -> absl::StatusOr<Body> {
        TFM_ASSIGN_OR_RETURN(Tensor a, Random({kSgemmM, kSgemmK}));
        TFM_ASSIGN_OR_RETURN(Tensor b, Random({kSgemmN, kSgemmK}));
        TFM_ASSIGN_OR_RETURN(Tensor c, Tensor::Empty({kSgemmM, kSgemmN}, DType::kF32));
        return Body([=]() mutable -> absl::Status {
          GemmCpu(false, true, kSgemmM, kSgemmN, kSgemmK, a.data<float>(), b.data<float>(), 0.0f,
                  c.data<float>());
          return absl::OkStatus();
        });
      }};
}

}  // namespace bench
}  // namespace tfm

#include "ops/attention/attention.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/deterministic.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/attention/attention_params.h"

namespace tfm {

namespace {

// The operands a packed tensor holds: q, k and v for qkv, k and v for kv,
// else its own.
int64_t PackedParts(PackedHeads packed) {
  switch (packed) {
    case PackedHeads::kQueriesKeysValues:
      return 3;
    case PackedHeads::kKeysValues:
      return 2;
    case PackedHeads::kNone:
      break;
  }
  return 1;
}

}  // namespace

absl::StatusOr<AttentionParams> ParseAttentionParams(const KernelContext& context,
                                                     int key_mask_input, bool key_rows) {
  const Tensor& q = context.input(0);
  const Tensor& k = context.input(1);
  const Tensor& v = context.input(2);
  const Attrs& attrs = context.attrs();
  AttentionParams params;
  TFM_ASSIGN_OR_RETURN(params.interleaved_queries,
                       attrs.GetOr<bool>("interleaved_queries", false));
  TFM_ASSIGN_OR_RETURN(params.interleaved_keys, attrs.GetOr<bool>("interleaved_keys", false));
  TFM_ASSIGN_OR_RETURN(std::string packed, attrs.GetOr<std::string>("packed", "none"));
  if (packed == "qkv") {
    params.packed = PackedHeads::kQueriesKeysValues;
  } else if (packed == "kv") {
    params.packed = PackedHeads::kKeysValues;
  } else if (packed != "none") {
    return context.Error(absl::StrCat("packed must be none, kv or qkv, not '", packed, "'"));
  }
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) {
    return context.Error(
        "q, k and v must be [batch, heads, len, d] (interleaved: [batch, len, heads, d])");
  }
  if (params.packed != PackedHeads::kNone) {
    const bool qkv = params.packed == PackedHeads::kQueriesKeysValues;
    if (!params.interleaved_keys || (qkv && !params.interleaved_queries)) {
      return context.Error(qkv ? "packed qkv needs interleaved queries and keys"
                               : "packed kv needs interleaved keys");
    }
    // The same tensor: its parts are read where they lie.
    const auto same = [](const Tensor& a, const Tensor& b) {
      return a.raw_data() == b.raw_data() && a.shape() == b.shape();
    };
    if (!same(k, v) || (qkv && !same(q, k))) {
      return context.Error(qkv ? "packed qkv takes q, k and v as one tensor"
                               : "packed kv takes k and v as one tensor");
    }
    const int64_t parts = PackedParts(params.packed);
    if (k.dim(2) % parts != 0) {
      return context.Error(absl::StrCat("packed ", packed, ": k's ", k.dim(2),
                                        " head slots are not ", parts, " parts"));
    }
  }
  if (params.interleaved_keys && key_rows) {
    return context.Error("key rows take k and v as [batch, heads, len, d], not interleaved");
  }
  // The extents of heads and of positions, per side.
  const int q_heads_dim = params.interleaved_queries ? 2 : 1;
  const int q_len_dim = params.interleaved_queries ? 1 : 2;
  const int k_heads_dim = params.interleaved_keys ? 2 : 1;
  const int k_len_dim = params.interleaved_keys ? 1 : 2;
  params.batch = q.dim(0);
  params.heads = q.dim(q_heads_dim) /
                 (params.packed == PackedHeads::kQueriesKeysValues ? 3 : 1);
  params.q_len = q.dim(q_len_dim);
  params.k_len = k.dim(k_len_dim);
  params.d_k = q.dim(3);
  params.d_v = v.dim(3);
  params.key_batch = k.dim(0);
  if (params.packed == PackedHeads::kKeysValues && k.dim(2) != KeySlots(params)) {
    return context.Error(absl::StrCat("packed kv: k holds ", k.dim(2), " head slots, not 2 x q's ",
                                      params.heads, " heads"));
  }
  const bool batch_ok = key_rows ? k.dim(0) >= params.batch : k.dim(0) == params.batch;
  if (!batch_ok || v.dim(0) != k.dim(0) || k.dim(k_heads_dim) != KeySlots(params) ||
      v.dim(k_heads_dim) != KeySlots(params)) {
    return context.Error("q, k and v disagree on batch or heads");
  }
  if (k.dim(3) != params.d_k) return context.Error("q and k disagree on d_k");
  if (v.dim(k_len_dim) != params.k_len) {
    return context.Error("k and v disagree on the key length");
  }

  TFM_ASSIGN_OR_RETURN(params.causal, attrs.GetOr<bool>("causal", false));
  TFM_ASSIGN_OR_RETURN(std::string key_mask, attrs.GetOr<std::string>("key_mask", "none"));
  const Tensor& mask = context.input(key_mask_input);
  const bool integer_mask = mask.dtype() == DType::kI32 || mask.dtype() == DType::kI64;
  if (key_mask == "none") {
    params.key_mask = KeyMaskKind::kNone;
  } else if (key_mask == "lengths") {
    params.key_mask = KeyMaskKind::kLengths;
    if (!integer_mask || mask.shape() != Shape{params.batch}) {
      return context.Error("key lengths must be i32 or i64 [batch]");
    }
  } else if (key_mask == "padding") {
    params.key_mask = KeyMaskKind::kPadding;
    if (!integer_mask || mask.shape() != Shape({params.batch, params.k_len})) {
      return context.Error("key padding mask must be i32 or i64 [batch, k_len]");
    }
  } else {
    return context.Error(
        absl::StrCat("key_mask must be none, lengths or padding, not '", key_mask, "'"));
  }

  TFM_ASSIGN_OR_RETURN(double dropout, attrs.GetOr<double>("dropout", 0.0));
  if (!(dropout >= 0.0 && dropout < 1.0)) {
    return context.Error(absl::StrCat("dropout ", dropout, " is not in [0, 1)"));
  }
  params.dropout = static_cast<float>(dropout);
  if (dropout > 0.0) {
    // Attributes hold signed integers; the 64-bit patterns round-trip.
    TFM_ASSIGN_OR_RETURN(int64_t seed, attrs.Get<int64_t>("seed"));
    TFM_ASSIGN_OR_RETURN(int64_t stream, attrs.GetOr<int64_t>("stream", 0));
    TFM_ASSIGN_OR_RETURN(int64_t offset, attrs.GetOr<int64_t>("offset", 0));
    params.dropout_state = PhiloxState{static_cast<uint64_t>(seed), static_cast<uint64_t>(stream),
                                       static_cast<uint64_t>(offset)};
  }
  const double default_scale = params.d_k > 0 ? 1.0 / std::sqrt(double(params.d_k)) : 1.0;
  TFM_ASSIGN_OR_RETURN(double scale, attrs.GetOr<double>("scale", default_scale));
  if (!std::isfinite(scale)) return context.Error("scale must be finite");
  params.scale = static_cast<float>(scale);
  return params;
}

int64_t QuerySlots(const AttentionParams& p) {
  return p.packed == PackedHeads::kQueriesKeysValues ? KeySlots(p) : p.heads;
}
// k's tensor holds every part; v is its last.
int64_t KeySlots(const AttentionParams& p) { return PackedParts(p.packed) * p.heads; }
int64_t KeyPart(const AttentionParams& p) {
  return p.packed == PackedHeads::kQueriesKeysValues ? 1 : 0;
}
int64_t ValuePart(const AttentionParams& p) { return PackedParts(p.packed) - 1; }

int AttentionGradOutput(const AttentionParams& p, int index) {
  switch (p.packed) {
    case PackedHeads::kQueriesKeysValues:
      return 0;
    case PackedHeads::kKeysValues:
      return index == 0 ? 0 : 1;
    case PackedHeads::kNone:
      break;
  }
  return index;
}

Shape AttentionGradShape(const AttentionParams& p, int index, const Shape& input_shape) {
  return AttentionGradOutput(p, index) == index ? input_shape : Shape{0};
}

Shape AttentionOutShape(const AttentionParams& p) {
  if (p.interleaved_queries) return {p.batch, p.q_len, p.heads, p.d_v};
  return {p.batch, p.heads, p.q_len, p.d_v};
}

namespace {

// The forward's k and v share q's dtype (the kernel's), except that on the
// CPU f32 queries may read f16 keys and values laid out heads-first: a
// decoding step against 16-bit caches (a beam's rows, 21 for parsing,
// against their sentence's encoder keys), which the row-by-row path widens
// as it reads them.
absl::Status CheckForwardDTypes(const KernelContext& context, const AttentionParams& p) {
  const DType q = context.input(0).dtype();
  const DType k = context.input(1).dtype();
  const DType v = context.input(2).dtype();
  if (k == q && v == q) return absl::OkStatus();
  const bool f16_cache = context.device().is_cpu() && q == DType::kF32 && k == DType::kF16 &&
                         v == DType::kF16;
  if (!f16_cache) {
    return context.Error(absl::StrCat("q, k and v are ", DTypeName(q), ", ", DTypeName(k), " and ",
                                      DTypeName(v), ": they share one dtype (on the CPU, f32 q "
                                      "may also read f16 k and v)"));
  }
  if (p.interleaved_keys) {
    return context.Error("f16 k and v take heads-first keys (a decoding cache's), not interleaved");
  }
  return absl::OkStatus();
}

absl::Status ValidateForward(const KernelContext& context) {
  const Tensor& key_rows = context.input(kForwardKeyRowsInput);
  const bool has_key_rows = key_rows.num_elements() > 0;
  TFM_ASSIGN_OR_RETURN(const AttentionParams p,
                       ParseAttentionParams(context, kForwardKeyMaskInput, has_key_rows));
  TFM_RETURN_IF_ERROR(CheckForwardDTypes(context, p));
  if (!has_key_rows) return absl::OkStatus();
  if (key_rows.dtype() != DType::kI32 || key_rows.shape() != Shape({p.batch, p.k_len})) {
    return context.Error("key rows must be i32 [batch, k_len]");
  }
  if (p.q_len > kMaxRowwiseQueries) {
    return context.Error(absl::StrCat("key rows take at most ", kMaxRowwiseQueries,
                                      " query rows per head, not ", p.q_len));
  }
  // On a GPU the rows stay unread here (reading them would wait for the
  // device every step): the decoding cache builds its table from rows it
  // checked on the host, and the CPU checks them all below.
  if (!key_rows.device().is_cpu()) return absl::OkStatus();
  for (const int32_t row : key_rows.span<int32_t>()) {
    if (row < 0 || row >= p.key_batch) {
      return context.Error(absl::StrCat("key row ", row, " is not one of k's ", p.key_batch,
                                        " batch items"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateBackward(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(AttentionParams p, ParseAttentionParams(context, kBackwardKeyMaskInput));
  const Shape out_shape = AttentionOutShape(p);
  const Tensor& out = context.input(3);
  const Tensor& lse = context.input(4);
  const Tensor& d_out = context.input(5);
  if (out.shape() != out_shape || d_out.shape() != out_shape) {
    return context.Error(absl::StrCat("out and d_out must be ", ShapeToString(out_shape)));
  }
  if (lse.shape() != Shape({p.batch, p.heads, p.q_len}) || lse.dtype() != DType::kF32) {
    return context.Error("lse must be f32 [batch, heads, q_len]");
  }
  return absl::OkStatus();
}

const std::vector<std::string> kAttrNames = {
    "causal", "key_mask", "dropout", "seed",          "stream",
    "offset", "scale",    "backend", "deterministic", "interleaved_queries", "interleaved_keys",
    "packed"};

TFM_REGISTER_OP(OpDef{
    .name = "scaled_dot_product_attention",
    .inputs = {"q", "k", "v", "key_mask", "key_rows"},
    .outputs = {"out", "lse"},
    .attrs = kAttrNames,
    .doc = "out = dropout(softmax(q k^T * scale + mask)) v, fused; lse per query row",
    .validate = ValidateForward,
    // k and v: CheckForwardDTypes (f16 caches on the CPU).
    .kernel_dtype_inputs = {0},
});

TFM_REGISTER_OP(OpDef{
    .name = "scaled_dot_product_attention_backward",
    .inputs = {"q", "k", "v", "out", "lse", "d_out", "key_mask"},
    .outputs = {"dq", "dk", "dv"},
    .attrs = kAttrNames,
    .doc = "dq, dk, dv of scaled_dot_product_attention, recomputing the probabilities",
    .validate = ValidateBackward,
    .kernel_dtype_inputs = {0, 1, 2, 3, 5},
});

}  // namespace

Attrs AttentionAttrs(const AttentionOptions& options) {
  Attrs attrs;
  attrs.Set("causal", options.causal)
      .Set("key_mask", std::string(options.key_lengths.defined()        ? "lengths"
                                   : options.key_padding_mask.defined() ? "padding"
                                                                        : "none"))
      .Set("dropout", static_cast<double>(options.dropout))
      .Set("seed", static_cast<int64_t>(options.dropout_state.seed))
      .Set("stream", static_cast<int64_t>(options.dropout_state.stream))
      .Set("offset", static_cast<int64_t>(options.dropout_state.offset));
  if (options.scale.has_value()) attrs.Set("scale", static_cast<double>(*options.scale));
  if (!options.backend.empty()) attrs.Set("backend", options.backend);
  if (options.interleaved_queries) attrs.Set("interleaved_queries", true);
  if (options.interleaved_keys) attrs.Set("interleaved_keys", true);
  if (options.packed == PackedHeads::kQueriesKeysValues) attrs.Set("packed", std::string("qkv"));
  if (options.packed == PackedHeads::kKeysValues) attrs.Set("packed", std::string("kv"));
  // Read by the CUDA backward (core/deterministic.h).
  if (DeterministicKernels()) attrs.Set("deterministic", true);
  return attrs;
}

absl::StatusOr<Tensor> AttentionKeyMaskInput(const AttentionOptions& options,
                                             const Device& device) {
  if (options.key_lengths.defined() && options.key_padding_mask.defined()) {
    return absl::InvalidArgumentError(
        "scaled_dot_product_attention: give key lengths or a key padding mask, not both");
  }
  if (options.key_lengths.defined()) return options.key_lengths;
  if (options.key_padding_mask.defined()) return options.key_padding_mask;
  return Tensor::Empty({0}, DType::kI32, device);
}

absl::StatusOr<Tensor> AttentionKeyRowsInput(const AttentionOptions& options,
                                             const Device& device) {
  if (options.key_rows.defined()) return options.key_rows;
  return Tensor::Empty({0}, DType::kI32, device);
}

absl::StatusOr<AttentionOutput> ScaledDotProductAttention(const Tensor& q, const Tensor& k,
                                                          const Tensor& v,
                                                          const AttentionOptions& options) {
  TFM_ASSIGN_OR_RETURN(Tensor mask, AttentionKeyMaskInput(options, q.device()));
  TFM_ASSIGN_OR_RETURN(Tensor key_rows, AttentionKeyRowsInput(options, q.device()));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("scaled_dot_product_attention", {q, k, v, mask, key_rows},
                             AttentionAttrs(options)));
  return AttentionOutput{out[0], out[1]};
}

absl::StatusOr<AttentionGrads> ScaledDotProductAttentionBackward(const Tensor& q, const Tensor& k,
                                                                 const Tensor& v, const Tensor& out,
                                                                 const Tensor& lse,
                                                                 const Tensor& d_out,
                                                                 const AttentionOptions& options) {
  TFM_ASSIGN_OR_RETURN(Tensor mask, AttentionKeyMaskInput(options, q.device()));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> grads,
                       RunOp("scaled_dot_product_attention_backward",
                             {q, k, v, out, lse, d_out, mask}, AttentionAttrs(options)));
  return AttentionGrads{grads[0], grads[1], grads[2]};
}

}  // namespace tfm

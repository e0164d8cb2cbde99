// multi_head_attention (section 3.2.2): h heads of scaled dot-product
// attention over learned projections, through the fused attention op.
//
// Attributes: self_attention (bool): inputs {x, key_lengths}, keys and
// values from x, backward {dx, -}; otherwise encoder-decoder attention:
// inputs {x, memory, key_lengths}, keys and values from memory, backward
// {dx, dmemory, -}. causal (bool): position i sees keys j <= i.
// key_lengths ([batch] i32) may be an undefined tensor: no padding mask.
// Parameters (fairseq's names, which allow d_k != d_v != d_model / h):
// q_proj [h d_k, d_model], k_proj [h d_k, d_model], v_proj [h d_v, d_model],
// out_proj [d_model, h d_v], each with a bias. Attention dropout is the
// model's attention_dropout.
//
// Whole sequences (training, validation) with d_k == d_v project with one
// product per input (layers/packed_projections.h): self-attention's q, k
// and v of x as one [batch, len, 3 h d] tensor, encoder-decoder
// attention's k and v of the memory as one [batch, src_len, 2 h d], which
// the attention op reads in place (attention.h's PackedHeads), and whose
// gradient it writes as one tensor for the product's backward. A search's
// encoder pass (ForwardContext::products) computes self-attention's q, k
// and v as one product too, of the stacked weight its decoding steps keep.
//
// Incremental decoding (ForwardContext::cache): x is [rows, 1, d_model], one
// new position per row. Self-attention writes the position's keys and
// values into its per-row cache entry and attends over the positions so far
// (the key lengths mask replaces the causal one). Encoder-decoder attention
// projects the memory [sentences, src_len, d_model] once, at the first step,
// into a per-sentence entry; each sentence's rows then query it together as
// that sentence's rows_per_sentence queries, so no row copies the memory.
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "layers/decoding_cache.h"
#include "core/layer_registry.h"
#include "core/status_macros.h"
#include "layers/dense.h"
#include "layers/dropout_site.h"
#include "layers/packed_projections.h"
#include "ops/attention/attention.h"
#include "ops/cast/cast.h"
#include "ops/concat_rows/concat_rows.h"
#include "ops/kv_cache/kv_cache.h"
#include "ops/linear/linear.h"
#include "ops/split_heads/split_heads.h"

namespace tfm {
namespace {

class MultiHeadAttention : public Layer {
 public:
  static absl::StatusOr<std::unique_ptr<Layer>> Create(const LayerArgs& args) {
    auto layer = std::make_unique<MultiHeadAttention>();
    const config::ModelConfig& model = args.model;
    const int64_t d = model.d_model(), h = model.num_heads();
    TFM_ASSIGN_OR_RETURN(layer->self_attention_, args.attrs.GetOr<bool>("self_attention", false));
    TFM_ASSIGN_OR_RETURN(layer->options_.causal, args.attrs.GetOr<bool>("causal", false));
    // See Forward.
    layer->options_.interleaved_queries = layer->options_.interleaved_keys = true;
    layer->heads_ = h;
    layer->attention_dropout_ = model.attention_dropout();
    TFM_ASSIGN_OR_RETURN(layer->q_proj_, Dense::Create(args, "q_proj", d, h * model.d_k()));
    TFM_ASSIGN_OR_RETURN(layer->k_proj_, Dense::Create(args, "k_proj", d, h * model.d_k()));
    TFM_ASSIGN_OR_RETURN(layer->v_proj_, Dense::Create(args, "v_proj", d, h * model.d_v()));
    TFM_ASSIGN_OR_RETURN(layer->out_proj_, Dense::Create(args, "out_proj", h * model.d_v(), d));
    return std::unique_ptr<Layer>(std::move(layer));
  }

  absl::StatusOr<std::vector<Tensor>> Forward(ForwardContext& context,
                                              absl::Span<const Tensor> inputs) override {
    const size_t expected = self_attention_ ? 2 : 3;
    if (inputs.size() != expected) {
      return absl::InvalidArgumentError(
          self_attention_ ? "self-attention takes {x, key_lengths}"
                          : "encoder-decoder attention takes {x, memory, key_lengths}");
    }
    if (context.cache != nullptr) return ForwardIncremental(*context.cache, inputs);
    const Tensor& x = inputs[0];
    const Tensor& memory = self_attention_ ? inputs[0] : inputs[1];
    options_.key_lengths = inputs.back();
    // The projections' [batch, len, heads * d] (packed: parts * heads * d)
    // are the attention op's interleaved heads as they are: no split_heads
    // and merge_heads (on a GPU the tensor-core kernels read and write them
    // in place).
    options_.packed = PackingFor(context);
    std::optional<Tensor> fused;
    if (context.products != nullptr && self_attention_) {
      // A search's encoder pass: q, k and v as one product of the stacked
      // weight its steps would use (laid out once per search).
      TFM_ASSIGN_OR_RETURN(fused, FusedProjection(*context.products, x));
    }
    if (fused.has_value()) {
      options_.packed = PackedHeads::kQueriesKeysValues;
      TFM_ASSIGN_OR_RETURN(q_, Interleaved(*fused, 3));
      k_ = v_ = q_;
    } else if (options_.packed == PackedHeads::kQueriesKeysValues) {
      Dense* const projections[] = {&q_proj_, &k_proj_, &v_proj_};
      TFM_ASSIGN_OR_RETURN(const Tensor qkv, packed_.Forward(projections, x));
      TFM_ASSIGN_OR_RETURN(q_, Interleaved(qkv, 3));
      k_ = v_ = q_;
    } else {
      TFM_ASSIGN_OR_RETURN(const Tensor q, q_proj_.Project(context, x));
      TFM_ASSIGN_OR_RETURN(q_, Interleaved(q));
      if (options_.packed == PackedHeads::kKeysValues) {
        Dense* const projections[] = {&k_proj_, &v_proj_};
        TFM_ASSIGN_OR_RETURN(const Tensor kv, packed_.Forward(projections, memory));
        TFM_ASSIGN_OR_RETURN(k_, Interleaved(kv, 2));
        v_ = k_;
      } else {
        TFM_ASSIGN_OR_RETURN(const Tensor k, k_proj_.Project(context, memory));
        TFM_ASSIGN_OR_RETURN(const Tensor v, v_proj_.Project(context, memory));
        TFM_ASSIGN_OR_RETURN(k_, Interleaved(k));
        TFM_ASSIGN_OR_RETURN(v_, Interleaved(v));
      }
    }
    // The probabilities [batch, heads, q_len, k_len] draw one number each.
    options_.dropout = context.training ? attention_dropout_ : 0.0f;
    options_.dropout_state = PhiloxState{};
    if (options_.dropout > 0.0f) {
      TFM_ASSIGN_OR_RETURN(
          options_.dropout_state,
          DropoutSite::Reserve(context, q_.dim(0) * heads_ * q_.dim(1) * k_.dim(1)));
    }
    TFM_ASSIGN_OR_RETURN(attention_, ScaledDotProductAttention(q_, k_, v_, options_));
    TFM_ASSIGN_OR_RETURN(const Tensor merged, Flat(attention_.out));
    TFM_ASSIGN_OR_RETURN(Tensor y, out_proj_.Project(context, merged));
    return std::vector<Tensor>{y};
  }

  absl::StatusOr<std::vector<Tensor>> Backward(absl::Span<const Tensor> output_grads) override {
    return BackwardInto(output_grads, nullptr);
  }

  bool AddsInputGradient() const override { return true; }
  absl::StatusOr<std::vector<Tensor>> BackwardAdding(absl::Span<const Tensor> output_grads,
                                                     const Tensor& input_grad_sum) override {
    return BackwardInto(output_grads, &input_grad_sum);
  }

 private:
  // x's gradient made anew, or added into *sum (BackwardAdding).
  absl::StatusOr<std::vector<Tensor>> BackwardInto(absl::Span<const Tensor> output_grads,
                                                   const Tensor* sum) {
    TFM_ASSIGN_OR_RETURN(Tensor d_merged, out_proj_.Backward(output_grads[0]));
    TFM_ASSIGN_OR_RETURN(Tensor d_out, Interleaved(d_merged));
    TFM_ASSIGN_OR_RETURN(AttentionGrads grads,
                         ScaledDotProductAttentionBackward(q_, k_, v_, attention_.out,
                                                           attention_.lse, d_out, options_));
    q_ = k_ = v_ = Tensor();
    attention_ = AttentionOutput{};
    const PackedHeads packed = options_.packed;
    TFM_ASSIGN_OR_RETURN(const Tensor dq, Flat(grads.dq));
    if (packed == PackedHeads::kQueriesKeysValues) {
      // dq is the packed [batch, len, 3 h d]: one product's backward.
      grads = AttentionGrads{};
      TFM_ASSIGN_OR_RETURN(const Tensor dx, packed_.Backward(dq, sum));
      return std::vector<Tensor>{dx, Tensor()};
    }
    TFM_ASSIGN_OR_RETURN(const Tensor dk, Flat(grads.dk));
    if (packed == PackedHeads::kKeysValues) {
      grads = AttentionGrads{};
      TFM_ASSIGN_OR_RETURN(const Tensor dx, q_proj_.Backward(dq, sum));
      TFM_ASSIGN_OR_RETURN(const Tensor dmemory, packed_.Backward(dk));
      return std::vector<Tensor>{dx, dmemory, Tensor()};
    }
    TFM_ASSIGN_OR_RETURN(const Tensor dv, Flat(grads.dv));
    grads = AttentionGrads{};
    // The keys' and values' products add into their input's gradient in
    // their GEMMs: x's for self-attention (after the queries'), the
    // memory's otherwise. No add op.
    TFM_ASSIGN_OR_RETURN(const Tensor dx, q_proj_.Backward(dq, sum));
    TFM_ASSIGN_OR_RETURN(const Tensor dmemory,
                         k_proj_.Backward(dk, self_attention_ ? &dx : nullptr));
    TFM_RETURN_IF_ERROR(v_proj_.Backward(dv, &dmemory).status());
    if (self_attention_) return std::vector<Tensor>{dx, Tensor()};
    return std::vector<Tensor>{dx, dmemory, Tensor()};
  }

 public:

  std::vector<Parameter*> Parameters() override {
    std::vector<Parameter*> parameters;
    q_proj_.AppendParameters(parameters);
    k_proj_.AppendParameters(parameters);
    v_proj_.AppendParameters(parameters);
    out_proj_.AppendParameters(parameters);
    return parameters;
  }

 private:
  // A decoding step (see the top of the file); no dropout, nothing kept for
  // a backward.
  absl::StatusOr<std::vector<Tensor>> ForwardIncremental(DecodingCache& cache,
                                                         absl::Span<const Tensor> inputs) {
    const Tensor& x = inputs[0];
    if (x.rank() != 3 || x.dim(0) != cache.rows() || x.dim(1) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("a decoding step's attention takes x [",
                                                     cache.rows(), ", 1, d_model], got ",
                                                     x.DebugString()));
    }
    AttentionOptions options;
    DecodingCache::Entry* entry = cache.Find(this);
    Tensor q;
    if (self_attention_) {
      if (entry == nullptr) {
        // In the step's dtype (bf16 or f16 decoding keeps 16-bit caches), or
        // the cache's (f16 under f32 steps: rounded as they are written).
        const DType dtype = cache.kv_dtype().value_or(x.dtype());
        TFM_ASSIGN_OR_RETURN(Tensor keys, Tensor::Empty({cache.rows(), heads_, cache.capacity(),
                                                         k_proj_.weight().dim(0) / heads_},
                                                        dtype, x.device()));
        TFM_ASSIGN_OR_RETURN(Tensor values, Tensor::Empty({cache.rows(), heads_, cache.capacity(),
                                                           v_proj_.weight().dim(0) / heads_},
                                                          dtype, x.device()));
        // Reordered by table (read through cache.key_rows()).
        entry = &cache.Store(this, {DecodingCache::Indexing::kRowByTable, {keys, values}});
      }
      TFM_ASSIGN_OR_RETURN(std::optional<Tensor> fused, FusedProjection(cache, x));
      if (fused.has_value()) {
        // [rows, 1, 3 h d] is [rows, 3 h, 1, d]; keys and values go to their
        // caches from their thirds, the queries are copied out of theirs.
        TFM_ASSIGN_OR_RETURN(Tensor qkv, fused->Reshape({x.dim(0), 3 * heads_, 1,
                                                         fused->dim(2) / (3 * heads_)}));
        TFM_RETURN_IF_ERROR(WriteStep(cache, entry->tensors[0], qkv, heads_));
        TFM_RETURN_IF_ERROR(WriteStep(cache, entry->tensors[1], qkv, 2 * heads_));
        TFM_ASSIGN_OR_RETURN(q, Tensor::Empty({x.dim(0), heads_, 1, qkv.dim(3)}, qkv.dtype(),
                                              x.device()));
        TFM_RETURN_IF_ERROR(KvCacheWrite(q, qkv, 0, 0));
        // One position: [rows, h, 1, d] has the bytes of [rows, 1, h, d].
        TFM_ASSIGN_OR_RETURN(q, q.Reshape({x.dim(0), 1, heads_, qkv.dim(3)}));
      } else {
        TFM_ASSIGN_OR_RETURN(q, q_proj_.Step(cache, x));
        TFM_ASSIGN_OR_RETURN(Tensor k, k_proj_.Step(cache, x));
        TFM_ASSIGN_OR_RETURN(Tensor v, v_proj_.Step(cache, x));
        TFM_ASSIGN_OR_RETURN(k, OnePositionHeads(k));
        TFM_ASSIGN_OR_RETURN(v, OnePositionHeads(v));
        TFM_RETURN_IF_ERROR(WriteStep(cache, entry->tensors[0], k, 0));
        TFM_RETURN_IF_ERROR(WriteStep(cache, entry->tensors[1], v, 0));
        TFM_ASSIGN_OR_RETURN(q, Interleaved(q));
      }
      options.key_lengths = cache.key_lengths();
      options.key_rows = cache.key_rows();
    } else {
      TFM_ASSIGN_OR_RETURN(q, q_proj_.Step(cache, x));
      if (entry == nullptr) {
        const Tensor& memory = inputs[1];
        // Through DecodingLinear like every other projection, or on a GPU
        // in f32 or 16 bits through Linear (DecodingCache).
        const bool laid_out = cache.LaysOutWholeSequenceProducts();
        TFM_ASSIGN_OR_RETURN(Tensor k, laid_out ? k_proj_.Step(cache, memory)
                                                : k_proj_.Forward(memory, /*keep=*/false));
        TFM_ASSIGN_OR_RETURN(Tensor v, laid_out ? v_proj_.Step(cache, memory)
                                                : v_proj_.Forward(memory, /*keep=*/false));
        TFM_ASSIGN_OR_RETURN(std::vector<Tensor> kv, SplitHeadsAll({k, v}, heads_));
        if (const DType dtype = cache.kv_dtype().value_or(kv[0].dtype()); dtype != kv[0].dtype()) {
          // The cache's dtype (f16 under f32 steps), rounded once a batch.
          TFM_ASSIGN_OR_RETURN(kv, CastAll(kv, dtype));
        }
        entry = &cache.Store(this, {DecodingCache::Indexing::kSentence, std::move(kv)});
      }
      // A sentence's rows query its keys together: [sentences, rows per
      // sentence, h, d].
      TFM_ASSIGN_OR_RETURN(q, q.Reshape({cache.sentences(), cache.rows_per_sentence(), q.dim(2)}));
      TFM_ASSIGN_OR_RETURN(q, Interleaved(q));
      options.key_lengths = inputs.back();
    }
    // The queries and the output interleaved (the keys and values stay in
    // their heads-first caches): no split_heads or merge_heads per step.
    options.interleaved_queries = true;
    TFM_ASSIGN_OR_RETURN(
        AttentionOutput attention,
        ScaledDotProductAttention(q, entry->tensors[0], entry->tensors[1], options));
    TFM_ASSIGN_OR_RETURN(Tensor merged,
                         attention.out.Reshape({cache.rows(), 1, heads_ * attention.out.dim(3)}));
    TFM_ASSIGN_OR_RETURN(Tensor y, out_proj_.Step(cache, merged));
    return std::vector<Tensor>{y};
  }

  // The step's keys or values (x's heads from first_head on) into their
  // cache at the step's position: from device memory where the cache keeps
  // it there (a CUDA graph replays the step at every position).
  static absl::Status WriteStep(const DecodingCache& cache, const Tensor& to, const Tensor& x,
                                int64_t first_head) {
    if (cache.position_tensor().defined()) {
      return KvCacheWriteAt(to, x, cache.position_tensor(), first_head);
    }
    return KvCacheWrite(to, x, cache.position(), first_head);
  }

  // How a whole-sequence forward packs its projections (see the top of the
  // file): not in a search's encoder pass (its products go through the
  // search's prepared weights), nor where keys and values differ in size.
  PackedHeads PackingFor(const ForwardContext& context) const {
    if (context.products != nullptr || !PackedProjectionsOn() ||
        k_proj_.weight().dim(0) != v_proj_.weight().dim(0)) {
      return PackedHeads::kNone;
    }
    return self_attention_ ? PackedHeads::kQueriesKeysValues : PackedHeads::kKeysValues;
  }

  // A projection [batch, len, h d] (packed: [batch, len, parts h d]) as the
  // attention op's interleaved heads [batch, len, parts h, d] (a view), and
  // back.
  absl::StatusOr<Tensor> Interleaved(const Tensor& x, int64_t parts = 1) const {
    return x.Reshape({x.dim(0), x.dim(1), parts * heads_, x.dim(2) / (parts * heads_)});
  }
  static absl::StatusOr<Tensor> Flat(const Tensor& x) {
    return x.Reshape({x.dim(0), x.dim(1), x.dim(2) * x.dim(3)});
  }

  // A step's [rows, 1, h d] key or value projection as its cache's rows
  // [rows, h, 1, d]: with one position, the same bytes (a reshape).
  absl::StatusOr<Tensor> OnePositionHeads(const Tensor& x) const {
    return x.Reshape({x.dim(0), heads_, 1, x.dim(2) / heads_});
  }

  // Stores (under &q_proj_) the q, k and v projections of a `dtype` step
  // stacked into one [3 h d] bias and [3 h d, d_model] weight (concat_rows,
  // as a whole-sequence pass stacks them: PackedProjections), when queries,
  // keys and values have one head size and f32 weights; otherwise there is
  // no such entry and a step runs three products. f32: from the weights,
  // shared by every batch of a search and made once per search, so that a
  // model trained between searches never decodes with stale copies; 16-bit:
  // from the compute copies rounded for this batch, kept by its cache.
  // Where the CPU lays the product's weight out (f32 steps), the entry keeps
  // the bias alone: the stacked weight is made only to be laid out
  // (StackedWeight), not kept as a third copy of the three weights.
  absl::Status FuseProjections(DecodingCache& cache, DType dtype) const {
    const Tensor& wq = q_proj_.weight();
    const Tensor& wk = k_proj_.weight();
    const Tensor& wv = v_proj_.weight();
    if (wq.dim(0) != wk.dim(0) || wk.dim(0) != wv.dim(0) || wq.dtype() != DType::kF32 ||
        wk.dtype() != DType::kF32 || wv.dtype() != DType::kF32) {
      return absl::OkStatus();
    }
    std::vector<Tensor> biases;
    for (const Dense* projection : {&q_proj_, &k_proj_, &v_proj_}) {
      TFM_ASSIGN_OR_RETURN(biases.emplace_back(), projection->BiasFor(dtype));
    }
    TFM_ASSIGN_OR_RETURN(Tensor bias, ConcatRows(biases));
    const DecodingCache::Indexing keep =
        dtype == DType::kF32 ? DecodingCache::Indexing::kShared : DecodingCache::Indexing::kBatch;
    if (DecodingLinearLaysOut(wq, dtype)) {
      cache.Store(&q_proj_, {keep, {bias}});
      return absl::OkStatus();
    }
    TFM_ASSIGN_OR_RETURN(Tensor weight, StackedWeight(cache, dtype));
    cache.Store(&q_proj_, {keep, {weight, bias}});
    return absl::OkStatus();
  }

  // The q, k and v weights of a `dtype` step stacked: [3 h d, d_model]
  // (f32: as the cache has them, made from their sources where they have
  // any).
  absl::StatusOr<Tensor> StackedWeight(const DecodingCache& cache, DType dtype) const {
    std::vector<Tensor> weights;
    for (const Dense* projection : {&q_proj_, &k_proj_, &v_proj_}) {
      if (dtype == DType::kF32) {
        TFM_ASSIGN_OR_RETURN(weights.emplace_back(), cache.WeightOf(projection->weight()));
      } else {
        TFM_ASSIGN_OR_RETURN(weights.emplace_back(), projection->WeightFor(dtype));
      }
    }
    return ConcatRows(weights);
  }

  // x's queries, keys and values side by side ([..., 3 h d]) as one product
  // of the stacked weight (FuseProjections, made the first time and kept
  // under &q_proj_: the layer's second entry), its laid-out weight kept
  // under the address of the entry's first tensor (DecodingLinear); nullopt
  // where the projections cannot be stacked (then three products).
  absl::StatusOr<std::optional<Tensor>> FusedProjection(DecodingCache& cache,
                                                        const Tensor& x) const {
    if (cache.Find(&q_proj_) == nullptr) TFM_RETURN_IF_ERROR(FuseProjections(cache, x.dtype()));
    const DecodingCache::Entry* fused = cache.Find(&q_proj_);
    if (fused == nullptr) return std::optional<Tensor>();
    if (fused->tensors.size() == 1) {  // The bias alone: the weight is made to be laid out.
      const Tensor& bias = fused->tensors[0];
      const DType dtype = x.dtype();
      const MadeWeight stacked{q_proj_.weight(), bias.dim(0),
                               [this, &cache, dtype] { return StackedWeight(cache, dtype); }};
      TFM_ASSIGN_OR_RETURN(Tensor qkv, DecodingLinear(cache, &fused->tensors[0], x, stacked, bias));
      return std::optional<Tensor>(std::move(qkv));
    }
    TFM_ASSIGN_OR_RETURN(Tensor qkv, DecodingLinear(cache, &fused->tensors[0], x,
                                                    fused->tensors[0], fused->tensors[1]));
    return std::optional<Tensor>(std::move(qkv));
  }

  bool self_attention_ = false;
  int64_t heads_ = 0;
  float attention_dropout_ = 0.0f;
  AttentionOptions options_;  // Of the last forward (dropout 0 outside training).
  Dense q_proj_, k_proj_, v_proj_, out_proj_;
  PackedProjections packed_;  // Of the last forward's packed projections.
  // [batch, len, heads, d] (packed: the one tensor of q, k and v, or k and
  // v): what the attention backward needs.
  Tensor q_, k_, v_;
  AttentionOutput attention_;
};

TFM_REGISTER_LAYER(LayerDef{
    .name = "multi_head_attention",
    .doc = "h-head attention (self or encoder-decoder; padding and causal masks)",
    .create = MultiHeadAttention::Create,
});

}  // namespace
}  // namespace tfm

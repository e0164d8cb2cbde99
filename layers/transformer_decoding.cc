// The Transformer as an IncrementalModel (core/incremental_model.h):
// the encoder runs once per batch; each step embeds one token per row at
// the step's position and runs the decoder stack with a DecodingCache in the
// ForwardContext, through which every attention layer keeps its keys and
// values (layers/multi_head_attention.cc); then the tied output projection
// and log_softmax. No dropout: the context is not training. With a
// vocabulary shortlist the projection and log_softmax run over the batch's
// candidate tokens only.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/bit_rows.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "layers/decoding_cache.h"
#include "layers/parameter_init.h"
#include "layers/transformer.h"
#include "ops/linear/linear.h"
#include "ops/cast/cast.h"
#include "ops/embedding/embedding.h"
#include "ops/kv_cache/kv_cache.h"
#include "ops/log_softmax_top_k/log_softmax_top_k.h"
#include "ops/row_top_k/row_top_k.h"
#include "ops/softmax/softmax.h"

namespace tfm {
namespace {

class TransformerState : public DecoderState {
 public:
  TransformerState(const Transformer* model, int64_t sentences, int64_t rows_per_sentence,
                   int64_t max_steps, const Device& device,
                   std::shared_ptr<DecodingCache::SharedEntries> shared,
                   DecodingPrecision precision)
      : model(model),
        cache(sentences, rows_per_sentence, max_steps, device, std::move(shared), precision) {}

  int rows() const override { return static_cast<int>(cache.rows()); }

  const Transformer* model;  // The model that made the state.
  DecodingCache cache;
  // The encoder's output per sentence, [sentences, source_length, d_model]
  // (decoder layers take it every step; attention projects it only once),
  // and the source lengths, on the device and on the host.
  Tensor memory;
  Tensor memory_lengths;
  std::vector<int32_t> lengths;
  // model.decoder_input_hook: what the hook follows over the steps, and the
  // step's rows of the flattened memory (reused).
  std::unique_ptr<DecoderInputTracker> input_tracker;
  std::vector<int32_t> aligned_rows;
  // With a shortlist: the batch's candidate tokens (ascending; empty: the
  // whole vocabulary) and their rows of the output projection's table
  // [candidates, d_model], in the decoding dtype.
  std::vector<int32_t> candidates;
  Tensor candidate_table;
  // With CUDA graphs: the step's token ids, in one buffer from step to step,
  // and the graph of this state's steps.
  Tensor step_ids;
  StepGraphSlot graph_slot;
};

absl::StatusOr<TransformerState*> StateOf(DecoderState& state, const Transformer* model) {
  auto* ours = dynamic_cast<TransformerState*>(&state);
  if (ours == nullptr || ours->model != model) {
    return absl::InvalidArgumentError("a decoder state made by another model");
  }
  return ours;
}

absl::Status CheckSources(const SourceBatch& sources, int rows_per_sentence, int max_steps) {
  bool ok = sources.size >= 1 && sources.length >= 1 && rows_per_sentence >= 1 && max_steps >= 1 &&
            sources.ids.size() == static_cast<size_t>(sources.size) * sources.length &&
            sources.lengths.size() == static_cast<size_t>(sources.size);
  for (size_t s = 0; ok && s < sources.lengths.size(); ++s) {
    ok = sources.lengths[s] >= 1 && sources.lengths[s] <= sources.length;
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "decoding ", sources.size, " sources of ", sources.length, " columns (", sources.ids.size(),
      " ids, ", sources.lengths.size(), " lengths, each must be 1 .. columns) with ",
      rows_per_sentence, " rows per sentence for ", max_steps, " steps"));
}

// A step's last tokens: one per row, each in the vocabulary.
absl::Status CheckStepTokens(absl::Span<const int> last_tokens, int64_t rows,
                             int64_t vocabulary_size) {
  if (static_cast<int64_t>(last_tokens.size()) != rows) {
    return absl::InvalidArgumentError(
        absl::StrCat(last_tokens.size(), " last tokens for ", rows, " decoder rows"));
  }
  for (int token : last_tokens) {
    if (token < 0 || token >= vocabulary_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("token ", token, " is outside the vocabulary of ", vocabulary_size));
    }
  }
  return absl::OkStatus();
}

// A constraint's allowed tokens (rows x BitRowWords(vocabulary) words) as
// the top-k ops' allowed columns on `device`: the tokens' bits themselves,
// or with a shortlist each candidate column's token's bit.
absl::StatusOr<Tensor> AllowedColumns(absl::Span<const uint32_t> allowed, int64_t rows,
                                      const std::vector<int32_t>& candidates,
                                      const Device& device) {
  const int64_t token_words = static_cast<int64_t>(allowed.size()) / rows;
  std::vector<uint32_t> columns;
  if (!candidates.empty()) {
    const int64_t column_words = BitRowWords(static_cast<int64_t>(candidates.size()));
    columns.assign(rows * column_words, 0u);
    for (int64_t row = 0; row < rows; ++row) {
      for (size_t j = 0; j < candidates.size(); ++j) {
        if (BitRowHas(allowed.data() + row * token_words, candidates[j])) {
          BitRowSet(columns.data() + row * column_words, static_cast<int64_t>(j));
        }
      }
    }
    allowed = columns;
  }
  return BitRowsOnDevice(allowed, rows, device);
}

}  // namespace

void Transformer::SetCudaGraphs(bool on) {
  // On the CPU the runner runs every step eagerly, through the same
  // buffers and ops as a GPU's graphs (what the CPU's tests check).
  step_graphs_ = on ? std::make_unique<StepGraphRunner>(device_) : nullptr;
}

StepGraphStats Transformer::cuda_graph_stats() const {
  return step_graphs_ != nullptr ? step_graphs_->stats() : StepGraphStats{};
}

DecodingVocabulary Transformer::vocabulary() const {
  return {vocabulary_.size, vocabulary_.pad_id, vocabulary_.bos_id, vocabulary_.eos_id};
}

absl::Status Transformer::SetDecodingDType(DType dtype, bool f32_residual) {
  if (dtype == DType::kF32) {
    decoding_dtype_ = dtype;
    decoding_f32_residual_ = false;
    if (decoding_precision_ == DecodingPrecision::kBf16) {
      decoding_precision_ = DecodingPrecision::kF32;
    }
    return absl::OkStatus();
  }
  if (dtype != DType::kBF16 && dtype != DType::kF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("decoding in ", DTypeName(dtype), ": f32, bf16 or f16"));
  }
  if (decoding_precision_ == DecodingPrecision::kInt8) {
    return absl::FailedPreconditionError(absl::StrCat(
        DTypeName(dtype), " decoding with int8 weights: int8 products take f32 activations"));
  }
  if (device_.is_cpu()) {
    // The CPU's bf16 is training's there: f32 tensors, bf16 products.
    if (dtype == DType::kF16) {
      return absl::FailedPreconditionError(
          "f16 decoding on the CPU: the CPU has no f16 products (decode in bf16, whose "
          "products round their inputs to bf16, in int8, or in f16 on a GPU)");
    }
    if (f32_residual) {
      return absl::FailedPreconditionError(
          "bf16 decoding on the CPU keeps every activation in f32 already: f32_residual "
          "is for a GPU's 16-bit activations");
    }
    decoding_precision_ = DecodingPrecision::kBf16;
    return absl::OkStatus();
  }
  decoding_dtype_ = dtype;
  decoding_f32_residual_ = f32_residual;
  return absl::OkStatus();
}

absl::Status Transformer::SetKvCacheDType(std::optional<DType> dtype) {
  if (dtype.has_value() && *dtype != DType::kF32 && *dtype != DType::kF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("key/value caches in ", DTypeName(*dtype), ": f32 or f16"));
  }
  TFM_RETURN_IF_ERROR(CheckKvCacheDType(dtype));
  kv_cache_dtype_ = dtype;
  return absl::OkStatus();
}

std::optional<DType> Transformer::KvCacheDType() const {
  if (kv_cache_dtype_.has_value()) return kv_cache_dtype_;
  // Where the products are int8 or bf16 the caches' bytes weigh more: f16
  // measured 4-8% (int8) and about 12% (bf16) faster at batch 32 on Multi30k.
  if (device_.is_cpu() && decoding_precision_ != DecodingPrecision::kF32) return DType::kF16;
  return std::nullopt;
}

absl::Status Transformer::CheckKvCacheDType(std::optional<DType> dtype) const {
  if (!dtype.has_value() || device_.is_cpu() || *dtype == decoding_dtype_) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "key/value caches in ", DTypeName(*dtype), " while decoding in ",
      DTypeName(decoding_dtype_), " on ", device_.ToString(),
      ": a GPU keeps them in its decoding dtype (leave decode.kv_cache_dtype at auto)"));
}

absl::Status Transformer::SetShortlist(std::shared_ptr<const VocabularyShortlist> shortlist) {
  if (shortlist != nullptr && shortlist->vocabulary_size() != vocabulary_.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("a shortlist of a vocabulary of ", shortlist->vocabulary_size(),
                     " tokens for a model of ", vocabulary_.size));
  }
  shortlist_ = std::move(shortlist);
  return absl::OkStatus();
}

void Transformer::SetWeightSources(std::shared_ptr<const DecodingCache::WeightSources> sources) {
  weight_sources_ = std::move(sources);
}

absl::StatusOr<Tensor> Transformer::DecodingValues(const Parameter& parameter) const {
  return WeightFromSources(weight_sources_.get(), parameter.value);
}

std::vector<const Parameter*> Transformer::LookupTables() const {
  std::vector<const Parameter*> tables = {&source_table_};
  if (target_table_) tables.push_back(&*target_table_);
  return tables;
}

void Transformer::BeginSearch() {
  search_entries_ = std::make_shared<DecodingCache::SharedEntries>();
}

void Transformer::EndSearch() { search_entries_.reset(); }

absl::StatusOr<std::unique_ptr<DecoderState>> Transformer::Start(const SourceBatch& sources,
                                                                 int rows_per_sentence,
                                                                 int max_steps) {
  TFM_RETURN_IF_ERROR(CheckSources(sources, rows_per_sentence, max_steps));
  // The decoding dtype may have changed since SetKvCacheDType.
  TFM_RETURN_IF_ERROR(CheckKvCacheDType(kv_cache_dtype_));
  const absl::MutexLock lock(&start_mu_);
  auto state = std::make_unique<TransformerState>(this, sources.size, rows_per_sentence,
                                                  max_steps, device_, search_entries_,
                                                  decoding_precision_);
  // Graphed or not, the steps of a search with graphs read their position
  // from the device, so that replays and eager steps run the same ops.
  state->cache.set_device_position(step_graphs_ != nullptr);
  state->cache.set_kv_dtype(KvCacheDType());
  state->cache.set_weight_sources(weight_sources_);
  for (const int id : sources.ids) {
    if (id < 0 || id >= vocabulary_.size) {
      return absl::InvalidArgumentError(
          absl::StrCat("source token ", id, " is outside the vocabulary of ", vocabulary_.size));
    }
  }
  TFM_ASSIGN_OR_RETURN(Tensor ids,
                       Int32OnDevice(sources.ids, {sources.size, sources.length}, device_));
  state->lengths.assign(sources.lengths.begin(), sources.lengths.end());
  TFM_ASSIGN_OR_RETURN(state->memory_lengths,
                       Int32OnDevice(state->lengths, {sources.size}, device_));
  ForwardContext context{/*training=*/false, /*rng=*/nullptr};
  context.ids_checked = true;  // Above, on the host.
  if (decoding_dtype_ != DType::kF32) {
    // Once per batch: the 16-bit copies of the weights that every layer
    // reads for activations of that dtype (ValueFor).
    TFM_RETURN_IF_ERROR(RoundComputeCopies(Parameters(), decoding_dtype_));
  }
  // The residual stream's dtype: the sublayers' unless it stays f32.
  const DType stream_dtype = decoding_f32_residual_ ? DType::kF32 : decoding_dtype_;
  if (decoding_f32_residual_) context.sublayer_dtype = decoding_dtype_;
  TFM_ASSIGN_OR_RETURN(const Tensor source_table, ValueFor(source_table_, stream_dtype));
  // The encoder's products as the steps' (every linear layer's weight laid
  // out once per search) where the cache says so.
  if (state->cache.LaysOutWholeSequenceProducts()) context.products = &state->cache;
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> embedded,
                       source_embedding_->Forward(context, {source_table, ids}));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> memory,
                       encoder_->Forward(context, {embedded[0], state->memory_lengths}));
  state->memory = memory[0];
  if (state->memory.dtype() != decoding_dtype_ && decoding_precision_ != DecodingPrecision::kInt8) {
    // An f32 stream's encoder output, rounded once for the 16-bit
    // cross-attention products of every step.
    TFM_ASSIGN_OR_RETURN(state->memory, Cast(state->memory, decoding_dtype_));
  }
  if (shortlist_ != nullptr) {
    std::vector<int> source_ids;
    source_ids.reserve(sources.ids.size());
    for (int s = 0; s < sources.size; ++s) {
      const int* row = sources.ids.data() + static_cast<size_t>(s) * sources.length;
      source_ids.insert(source_ids.end(), row, row + sources.lengths[s]);
    }
    state->candidates = shortlist_->Candidates(source_ids, {vocabulary_.eos_id});
    const int64_t count = static_cast<int64_t>(state->candidates.size());
    TFM_ASSIGN_OR_RETURN(const Tensor candidate_ids,
                         Int32OnDevice(state->candidates, {count}, device_));
    TFM_ASSIGN_OR_RETURN(const Tensor target_table, ValueFor(TargetTable(), decoding_dtype_));
    TFM_ASSIGN_OR_RETURN(state->candidate_table,
                         Embedding(target_table, candidate_ids, 1.0f, /*ids_checked=*/true));
  }
  if (vocabulary_.decoder_input_hook) {
    state->input_tracker = vocabulary_.decoder_input_hook->Start(sources, rows_per_sentence);
  }
  return std::unique_ptr<DecoderState>(std::move(state));
}

absl::StatusOr<Tensor> Transformer::StepLogits(DecoderState& base,
                                               absl::Span<const int> last_tokens) {
  TFM_ASSIGN_OR_RETURN(TransformerState * state, StateOf(base, this));
  const int64_t rows = state->cache.rows();
  TFM_RETURN_IF_ERROR(CheckStepTokens(last_tokens, rows, vocabulary_.size));
  TFM_RETURN_IF_ERROR(state->cache.BeginStep());
  TFM_ASSIGN_OR_RETURN(Tensor ids, Int32OnDevice(last_tokens, {rows, 1}, device_));
  if (state->input_tracker) {
    // As in training (DecoderInputHook::BatchMemoryRows): the hook picks the
    // memory row added to each row's input.
    state->aligned_rows.resize(rows);
    state->input_tracker->Step(last_tokens, state->cache.rows_per_sentence(),
                               absl::MakeSpan(state->aligned_rows));
  }
  TFM_ASSIGN_OR_RETURN(Tensor logits, StepLogitsOf(base, ids));
  state->cache.EndStep();
  return logits;
}

absl::StatusOr<Tensor> Transformer::StepLogitsOf(DecoderState& base, const Tensor& ids) {
  TFM_ASSIGN_OR_RETURN(TransformerState * state, StateOf(base, this));
  const int64_t rows = state->cache.rows();
  ForwardContext context{/*training=*/false, /*rng=*/nullptr, &state->cache};
  context.ids_checked = true;  // The tokens, by the caller.
  if (decoding_f32_residual_) context.sublayer_dtype = decoding_dtype_;
  TFM_ASSIGN_OR_RETURN(const Tensor table, ValueFor(TargetTable(), decoding_dtype_));
  // The embedding in the residual stream's dtype (f32 from the master
  // table, with an f32 stream).
  TFM_ASSIGN_OR_RETURN(
      const Tensor embedding_table,
      ValueFor(TargetTable(), decoding_f32_residual_ ? DType::kF32 : decoding_dtype_));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> target,
                       target_embedding_->Forward(context, {embedding_table, ids}));
  if (state->input_tracker) {
    TFM_ASSIGN_OR_RETURN(Tensor aligned_ids, Int32OnDevice(state->aligned_rows, {rows, 1}, device_));
    // With an f32 stream the 16-bit memory, widened (the hook's rows are
    // rounded once, as the cross-attention's are).
    Tensor memory = state->memory;
    if (memory.dtype() != target[0].dtype()) {
      TFM_ASSIGN_OR_RETURN(memory, Cast(memory, target[0].dtype()));
    }
    TFM_ASSIGN_OR_RETURN(target[0], AddMemoryRows(target[0], memory, aligned_ids));
  }
  TFM_ASSIGN_OR_RETURN(
      std::vector<Tensor> decoded,
      decoder_->Forward(context, {target[0], state->memory, state->memory_lengths}));
  TFM_ASSIGN_OR_RETURN(Tensor hidden, decoded[0].Reshape({rows, model_.d_model()}));
  if (hidden.dtype() != table.dtype()) {
    // An f32 stream's last hidden state, rounded for the 16-bit product.
    TFM_ASSIGN_OR_RETURN(hidden, Cast(hidden, table.dtype()));
  }
  // The tied projection: hidden E^T, or onto the shortlist's candidates
  // only (their rows laid out once per batch).
  const bool shortlisted = !state->candidates.empty();
  if (hidden.dtype() != DType::kF32) {
    // 16-bit decoding keeps the product's f32 sums: logits rounded to bf16
    // tie (8 bits), a beam's order among them is lost, and a tie at the
    // ranking's cut sends the whole distribution to the host (ops/linear).
    return LinearToF32(hidden, shortlisted ? state->candidate_table : table);
  }
  return shortlisted ? DecodingLinear(state->cache, &state->candidate_table, hidden,
                                      state->candidate_table, std::nullopt, false,
                                      DecodingCache::Indexing::kBatch)
                     : DecodingLinear(state->cache, &TargetTable().value, hidden, table);
}

absl::StatusOr<std::vector<Tensor>> Transformer::GraphedStepTopK(DecoderState& base,
                                                                absl::Span<const int> last_tokens,
                                                                int count,
                                                                int64_t forbidden_column) {
  TFM_ASSIGN_OR_RETURN(TransformerState * state, StateOf(base, this));
  const int64_t rows = state->cache.rows();
  TFM_RETURN_IF_ERROR(CheckStepTokens(last_tokens, rows, vocabulary_.size));
  // Before the step, in stream order: the position, key lengths and tokens
  // into the buffers the step reads.
  TFM_RETURN_IF_ERROR(state->cache.BeginStep());
  TFM_RETURN_IF_ERROR(Int32IntoBuffer(last_tokens, {rows, 1}, device_, state->step_ids));
  std::vector<int64_t> fingerprint = state->cache.LayoutFingerprint();
  for (const Tensor* tensor :
       {&state->step_ids, &state->memory, &state->memory_lengths, &state->candidate_table}) {
    DecodingCache::AppendToFingerprint(*tensor, fingerprint);
  }
  fingerprint.push_back(count);
  fingerprint.push_back(forbidden_column);
  fingerprint.push_back(static_cast<int64_t>(decoding_dtype_));
  fingerprint.push_back(decoding_f32_residual_);
  TFM_ASSIGN_OR_RETURN(
      std::vector<Tensor> outputs,
      step_graphs_->Run(state->graph_slot, fingerprint,
                        [&]() -> absl::StatusOr<std::vector<Tensor>> {
                          TFM_ASSIGN_OR_RETURN(Tensor logits,
                                               StepLogitsOf(base, state->step_ids));
                          TFM_ASSIGN_OR_RETURN(RowTopK ranked,
                                               LogSoftmaxTopK(logits, count, forbidden_column));
                          return std::vector<Tensor>{logits, ranked.values, ranked.columns};
                        }));
  state->cache.EndStep();
  return outputs;
}

absl::StatusOr<Tensor> Transformer::StepLogProbs(DecoderState& base,
                                                 absl::Span<const int> last_tokens) {
  TFM_ASSIGN_OR_RETURN(TransformerState * state, StateOf(base, this));
  if (!state->candidates.empty()) {
    return absl::FailedPreconditionError(
        "StepLogProbs: a shortlisted step has the batch's candidates as its columns");
  }
  TFM_ASSIGN_OR_RETURN(const Tensor logits, StepLogits(base, last_tokens));
  return LogSoftmax(logits);
}

absl::StatusOr<Tensor> Transformer::Step(DecoderState& base, absl::Span<const int> last_tokens) {
  TFM_ASSIGN_OR_RETURN(TransformerState * state, StateOf(base, this));
  TFM_ASSIGN_OR_RETURN(const Tensor logits, StepLogits(base, last_tokens));
  TFM_ASSIGN_OR_RETURN(Tensor log_probs, LogSoftmax(logits));
  // On the host, over the vocabulary (a shortlist's columns spread out).
  return VocabularyLogProbs(log_probs, state->candidates, vocabulary_.size);
}

absl::StatusOr<StepTopTokens> Transformer::StepTopK(DecoderState& state,
                                                    absl::Span<const int> last_tokens, int count,
                                                    int forbidden_token,
                                                    absl::Span<const uint32_t> allowed) {
  TFM_ASSIGN_OR_RETURN(TransformerState * ours, StateOf(state, this));
  const int64_t rows = ours->cache.rows();
  TFM_RETURN_IF_ERROR(CheckAllowedTokens(allowed, rows, vocabulary_.size));
  // With a shortlist the columns are its candidates: the forbidden token's
  // column, if it is one, each column's allowed bit, and each ranked
  // column's token.
  const std::vector<int32_t>& candidates = ours->candidates;
  int64_t forbidden_column = forbidden_token;
  if (!candidates.empty() && forbidden_token >= 0) {
    const auto it = std::lower_bound(candidates.begin(), candidates.end(), forbidden_token);
    forbidden_column =
        it != candidates.end() && *it == forbidden_token ? it - candidates.begin() : -1;
  }
  // Ranked where the logits are, without writing the log-probabilities
  // (ops/log_softmax_top_k: the same numbers as log_softmax's); a count
  // past the GPU kernel's limit (a wide beam) on the host, which takes any.
  const bool on_host = !RowTopKRunsOn(device_, count);
  Tensor logits;
  RowTopK ranked;
  if (step_graphs_ != nullptr && !on_host && ours->input_tracker == nullptr && allowed.empty()) {
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> step,
                         GraphedStepTopK(state, last_tokens, count, forbidden_column));
    logits = step[0];
    ranked = RowTopK{step[1], step[2]};
  } else {
    TFM_ASSIGN_OR_RETURN(logits, StepLogits(state, last_tokens));
    Tensor ranked_logits = logits;
    if (on_host) {
      TFM_ASSIGN_OR_RETURN(ranked_logits, CopyToDevice(logits, Device::Cpu()));
    }
    Tensor allowed_columns;
    if (!allowed.empty()) {
      TFM_ASSIGN_OR_RETURN(allowed_columns,
                           AllowedColumns(allowed, rows, candidates, ranked_logits.device()));
    }
    TFM_ASSIGN_OR_RETURN(ranked,
                         LogSoftmaxTopK(ranked_logits, count, forbidden_column, allowed_columns));
  }
  // The step's one wait for the device.
  TFM_ASSIGN_OR_RETURN(StepTopTokens top, StepTopTokensOf(ranked.values, ranked.columns));
  if (!candidates.empty()) {
    for (int32_t& token : top.tokens) {
      if (token >= 0) token = candidates[token];
    }
  }
  top.all_log_probs = [logits, candidates,
                       vocabulary_size = vocabulary_.size]() -> absl::StatusOr<Tensor> {
    TFM_ASSIGN_OR_RETURN(const Tensor all, LogSoftmax(logits));
    return VocabularyLogProbs(all, candidates, vocabulary_size);
  };
  return top;
}

absl::Status Transformer::Reorder(DecoderState& base, absl::Span<const int> rows,
                                  int rows_per_sentence) {
  TFM_ASSIGN_OR_RETURN(TransformerState * state, StateOf(base, this));
  const int64_t sentences = state->cache.sentences();
  TFM_ASSIGN_OR_RETURN(std::vector<int32_t> kept, state->cache.Reorder(rows, rows_per_sentence));
  if (state->input_tracker) state->input_tracker->Reorder(rows, kept);
  if (IsIdentity(kept, sentences)) return absl::OkStatus();
  // Sentences left: their memory and lengths follow (a copy once per
  // finished sentence, not per step).
  const Tensor& memory = state->memory;
  const int64_t columns = memory.dim(1), width = memory.dim(2);
  const int64_t count = static_cast<int64_t>(kept.size());
  TFM_ASSIGN_OR_RETURN(Tensor as_cache, memory.Reshape({sentences, 1, columns, width}));
  TFM_ASSIGN_OR_RETURN(Tensor kept_rows, KvCacheReorder(as_cache, kept, columns));
  TFM_ASSIGN_OR_RETURN(state->memory, kept_rows.Reshape({count, columns, width}));
  std::vector<int32_t> lengths(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) lengths[i] = state->lengths[kept[i]];
  state->lengths = std::move(lengths);
  TFM_ASSIGN_OR_RETURN(state->memory_lengths, Int32OnDevice(state->lengths, {count}, device_));
  return absl::OkStatus();
}

}  // namespace tfm

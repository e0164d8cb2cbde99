// The encoder-decoder Transformer of "Attention Is All You Need", assembled
// from the config's model section through the layer registry (embedding,
// stack of encoder_layer / decoder_layer, attention and feed-forward by the
// names the config gives), with the loss and its backward.
//
// Parameter names follow fairseq's state_dict keys ("encoder.layers.0.
// self_attn.q_proj.weight", "decoder.layers.2.encoder_attn_layer_norm.bias",
// "encoder.embed_tokens.weight" for the table that the source and target
// embeddings and the pre-softmax projection share; tests/
// transformer_parity_test.cc maps them onto torch.nn.Transformer's).
//
// Loss: label-smoothed cross entropy (eps = model.label_smoothing, as
// PyTorch's CrossEntropyLoss(label_smoothing=eps)) SUMMED over the non-pad
// target tokens of the batch. ForwardBackward adds the gradient of
// loss_scale * loss into every Parameter::grad: gradients accumulate over
// micro-batches until ZeroGrads (pass loss_scale = 1 / tokens of the whole
// step for a per-token mean).
//
// Decoding: the model implements core/incremental_model.h (one token
// per row and step against key/value caches, layers/transformer_decoding.cc)
// for the search strategies of runtime/decode.
#ifndef TFM_LAYERS_TRANSFORMER_H_
#define TFM_LAYERS_TRANSFORMER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/cpu_product_precision.h"
#include "core/config/task_config.pb.h"
#include "core/data/batch.h"
#include "layers/decoding_cache.h"
#include "layers/decoding_step_graph.h"
#include "core/incremental_model.h"
#include "core/device.h"
#include "core/layer_registry.h"
#include "core/trainable_model.h"
#include "core/vocabulary_shortlist.h"
#include "layers/decoder_input_hook.h"

namespace tfm {

// The shared vocabulary as the model needs it.
struct VocabularySpec {
  int64_t size = 0;
  int pad_id = 0;  // Batch padding; targets equal to it carry no loss.
  int bos_id = 2;  // First decoder input.
  int eos_id = 3;  // Ends a target; a search stops a hypothesis there.
  // The hook model.decoder_input_hook names, built for this vocabulary
  // (layers/decoder_input_hook.h); null when the config names none.
  std::shared_ptr<const DecoderInputHook> decoder_input_hook;
};

// StepContext and LossStats come from core/trainable_model.h: the trainer
// drives this model through that interface.
class Transformer : public TrainableModel, public IncrementalModel {
 public:
  // Parameters are initialised from Philox stream (init_seed, 0).
  static absl::StatusOr<std::unique_ptr<Transformer>> Create(const config::ModelConfig& model,
                                                             const VocabularySpec& vocabulary,
                                                             const Device& device,
                                                             uint64_t init_seed);
  // The same model to decode with, its parameters left for a checkpoint to
  // fill at once (LayerArgs::load_for_decoding): no random init, no
  // gradient buffers.
  static absl::StatusOr<std::unique_ptr<Transformer>> CreateForLoading(
      const config::ModelConfig& model, const VocabularySpec& vocabulary, const Device& device);

  // Loss of `batch` and its gradient added into Parameter::grad.
  absl::StatusOr<LossStats> ForwardBackward(const Batch& batch,
                                            const StepContext& context) override;
  // The same, the sums left on the model's device (the trainer reads them
  // when it logs).
  absl::StatusOr<DeviceLossStats> ForwardBackwardOnDevice(const Batch& batch,
                                                          const StepContext& context) override;
  bool TakesLossScaleOnDevice() const override { return true; }
  bool AccumulatesThroughAccumulateGrad() const override { return true; }
  // Loss only (validation), with dropout off and no gradient.
  absl::StatusOr<LossStats> Evaluate(const Batch& batch) override;
  // f32 (the default) or, where the device has the kernels
  // (core/config/training_dtype.h), bf16: whole-sequence passes (training,
  // validation, LogProbabilities) then compute in bf16 from copies of the
  // f32 parameters rounded at the start of each pass, the loss and the
  // softmax and LayerNorm statistics stay f32, and gradients are summed into
  // the f32 Parameter::grad. Decoding steps compute in f32. On the CPU,
  // bf16 keeps every tensor f32 and rounds only the products' inputs
  // (core/cpu_product_precision.h): the CPU's time goes to its products.
  absl::Status SetComputeDType(DType dtype) override;

  // Every parameter once, in a fixed order (embedding table first).
  std::vector<Parameter*> Parameters() override;
  int64_t NumParameters();
  absl::Status ZeroGrads();

  const config::ModelConfig& config() const { return model_; }
  const Device& device() const { return device_; }

  // log p(target token | earlier target tokens, source) at every target
  // position of `batch` from one whole-sequence pass without dropout:
  // [batch, target_length, vocabulary] (on the model's device). What the
  // incremental steps below must reproduce.
  absl::StatusOr<Tensor> LogProbabilities(const Batch& batch);

  // The decoder's products in the searches that start from now on
  // (DecodingCache: --quantize=int8 sets kInt8, SetDecodingDType(bf16) on
  // the CPU kBf16). f32 by default.
  void set_decoding_precision(DecodingPrecision precision) { decoding_precision_ = precision; }
  DecodingPrecision decoding_precision() const { return decoding_precision_; }
  // What the searches that start from now on compute in (decode.dtype):
  // f32, or on a GPU bf16 or f16: the weights rounded from the f32 masters
  // once per batch, the activations and the key/value caches in that dtype,
  // the log-probabilities in f32 (from the rounded logits). On the CPU bf16
  // is training's `train.dtype: bf16` there: the tensors stay f32 and every
  // linear product (projections, feed-forward, output) rounds its inputs
  // to bf16 and sums in f32 (decoding_precision() kBf16, ops/bf16_linear;
  // attention's products stay f32); f16 has no CPU products. int8 products
  // take f32 activations: FailedPrecondition for a 16-bit dtype, as f16 on
  // the CPU is. With `f32_residual`
  // (decode.f32_residual) a 16-bit search keeps its residual stream in f32
  // as mixed-precision training does: the embeddings, each sublayer's input
  // and the LayerNorms' outputs f32, the sublayers (products, attention,
  // caches) in the 16-bit dtype; the encoder's output is rounded once for
  // the cross-attention and the last hidden state for the output product.
  absl::Status SetDecodingDType(DType dtype, bool f32_residual = false);
  DType decoding_dtype() const { return decoding_dtype_; }
  // The dtype the searches that start from now on keep the attention keys
  // and values in (decode.kv_cache_dtype). Unset (auto, the default): the
  // dtype the search computes in, except int8 or bf16 products on the CPU,
  // which keep them in f16: half the bytes a step's attention reads and a
  // step's cache writes move, rounded once as they are written (the
  // arithmetic stays f32). f16 on the CPU takes any precision; f32 keeps
  // f32 caches. A GPU keeps them in its decoding dtype: asking for another
  // there is FailedPrecondition (here or when a search starts).
  absl::Status SetKvCacheDType(std::optional<DType> dtype);
  // The caches' dtype for the current settings (auto resolved); unset:
  // the step's own.
  std::optional<DType> KvCacheDType() const;
  // The shortlist the searches that start from now on decode with (null,
  // the default: the whole vocabulary). Each batch's steps then project
  // onto its candidates' rows of the output embedding only (gathered, and
  // laid out for the products, once per batch) and normalise over them;
  // every other token's log-probability is -infinity (StepTopK ranks the
  // candidates only). A shortlist of another vocabulary size is
  // InvalidArgument.
  absl::Status SetShortlist(std::shared_ptr<const VocabularyShortlist> shortlist);
  const VocabularyShortlist* shortlist() const { return shortlist_.get(); }
  // Whether the searches that start from now on replay their steps as CUDA
  // graphs where the layout holds (decode.cuda_graphs;
  // layers/decoding_step_graph.h). Off by default; the CPU then runs its
  // steps as a GPU's graphs would, eagerly (the same translations).
  void SetCudaGraphs(bool on);
  // Captures, replays and eager steps so far (all zero without graphs).
  StepGraphStats cuda_graph_stats() const;

  // Weights held only as what they are made from, for decoding on the CPU
  // (an int8 model directory's matrices as their int8 rows, a quarter of
  // their f32 size): each made when a search lays it out, then dropped.
  // Keyed by the address of the parameter's value, whose elements are then
  // not filled; the embedding tables, which lookups read, must not be
  // among them. Such a model decodes only: a training or evaluation pass
  // is refused (FailedPrecondition).
  void SetWeightSources(std::shared_ptr<const DecodingCache::WeightSources> sources);
  // `parameter`'s values as decoding uses them: its value, or made from its
  // weight source.
  absl::StatusOr<Tensor> DecodingValues(const Parameter& parameter) const;
  // The parameters the embedding lookups read (the source table and, if
  // unshared, the target table).
  std::vector<const Parameter*> LookupTables() const;

  // IncrementalModel (layers/transformer_decoding.cc).
  DecodingVocabulary vocabulary() const override;
  void BeginSearch() override;
  void EndSearch() override;
  absl::StatusOr<std::unique_ptr<DecoderState>> Start(const SourceBatch& sources,
                                                      int rows_per_sentence,
                                                      int max_steps) override;
  absl::StatusOr<Tensor> Step(DecoderState& state, absl::Span<const int> last_tokens) override;
  // Without a shortlist (whose steps have the batch's candidates as their
  // columns, not the vocabulary).
  bool HasStepLogProbs() const override { return shortlist_ == nullptr; }
  absl::StatusOr<Tensor> StepLogProbs(DecoderState& state,
                                      absl::Span<const int> last_tokens) override;
  // Every device ranks each row's best tokens itself (on the CPU without
  // writing the step's log-probabilities: ops/log_softmax_top_k).
  bool HasStepTopK() const override { return true; }
  // On the CPU (f32 or int8): a GPU's 16-bit decoding rounds its weight
  // copies at each batch's Start, and its ops share one stream.
  bool SearchesBatchesSideBySide() const override { return device_.is_cpu(); }
  // With `allowed` bits the step runs without a step graph.
  absl::StatusOr<StepTopTokens> StepTopK(DecoderState& state, absl::Span<const int> last_tokens,
                                         int count, int forbidden_token,
                                         absl::Span<const uint32_t> allowed) override;
  absl::Status Reorder(DecoderState& state, absl::Span<const int> rows,
                       int rows_per_sentence) override;

 private:
  static absl::StatusOr<std::unique_ptr<Transformer>> Build(const config::ModelConfig& model,
                                                            const VocabularySpec& vocabulary,
                                                            const Device& device,
                                                            uint64_t init_seed,
                                                            bool load_for_decoding);
  struct BatchTensors;
  struct ForwardResult;
  Transformer() = default;
  // One decoding step's f32 logits on device_: [rows, vocabulary], or with
  // a shortlist [rows, the batch's candidates].
  absl::StatusOr<Tensor> StepLogits(DecoderState& state, absl::Span<const int> last_tokens);
  // The work of a step between the cache's BeginStep and EndStep, from the
  // step's token ids on the device ([rows, 1] i32).
  absl::StatusOr<Tensor> StepLogitsOf(DecoderState& state, const Tensor& ids);
  // StepTopK's logits and ranking ({logits, values, columns}) through the
  // step graphs (decode.cuda_graphs).
  absl::StatusOr<std::vector<Tensor>> GraphedStepTopK(DecoderState& state,
                                                      absl::Span<const int> last_tokens,
                                                      int count, int64_t forbidden_column);
  absl::StatusOr<BatchTensors> ToTensors(const Batch& batch) const;
  absl::StatusOr<ForwardResult> Forward(ForwardContext& context, const Batch& batch);
  // The decoder's output [batch * target_length, d_model] for `tensors`.
  absl::StatusOr<Tensor> DecoderOutput(ForwardContext& context, const BatchTensors& tensors);
  // model.decoder_input_hook: `x` plus the rows `rows` (any shape, i32)
  // of `memory` [sentences, source_length, d_model] flattened to
  // [sentences * source_length, d_model]; rows.shape + [d_model] = x's.
  static absl::StatusOr<Tensor> AddMemoryRows(const Tensor& x, const Tensor& memory,
                                              const Tensor& rows);
  // The table the target embedding and the output projection use.
  Parameter& TargetTable() { return target_table_ ? *target_table_ : source_table_; }

  config::ModelConfig model_;
  VocabularySpec vocabulary_;
  Device device_;
  // Start runs one batch's encoder at a time: whole-sequence layers keep
  // their activations (for a backward pass), so two encoders at once would
  // share them. Decoding steps keep nothing (ForwardContext::keeps) and run
  // side by side (decode.inter_threads).
  absl::Mutex start_mu_;
  DType compute_dtype_ = DType::kF32;
  // The dtype of a whole-sequence pass's tensors: compute_dtype_ on a GPU,
  // f32 on the CPU.
  DType PassDType() const;
  // The products' precision for a pass on the CPU (bf16 when
  // compute_dtype_ is), held by each whole-sequence pass.
  CpuProductPrecision PassProducts() const;
  Parameter source_table_;                 // encoder.embed_tokens.weight
  std::optional<Parameter> target_table_;  // decoder.embed_tokens.weight, unshared only.
  std::unique_ptr<Layer> source_embedding_, target_embedding_, encoder_, decoder_;
  // model.decoder_input_hook: the last forward's rows of the flattened
  // encoder output added to the decoder inputs, and that output's shape,
  // for the backward.
  Tensor aligned_rows_;
  Shape memory_shape_;
  // Between BeginSearch and EndSearch: the decoding caches' shared entries
  // (weights packed for decoding), made once for all of a search's batches
  // (a model runs one search at a time; a state keeps its entries alive).
  std::shared_ptr<DecodingCache::SharedEntries> search_entries_;
  std::shared_ptr<const DecodingCache::WeightSources> weight_sources_;  // SetWeightSources.
  DecodingPrecision decoding_precision_ = DecodingPrecision::kF32;
  DType decoding_dtype_ = DType::kF32;
  bool decoding_f32_residual_ = false;  // Only with a 16-bit decoding_dtype_.
  std::optional<DType> kv_cache_dtype_;  // SetKvCacheDType; unset: auto.
  // SetKvCacheDType's FailedPrecondition for caches in `dtype` under the
  // current decoding dtype and device, if any.
  absl::Status CheckKvCacheDType(std::optional<DType> dtype) const;
  std::shared_ptr<const VocabularyShortlist> shortlist_;
  std::unique_ptr<StepGraphRunner> step_graphs_;  // Null: graphs off.
};

}  // namespace tfm

#endif  // TFM_LAYERS_TRANSFORMER_H_

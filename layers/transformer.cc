#include "layers/transformer.h"

#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/config/training_dtype.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "layers/parameter_gradients.h"
#include "layers/parameter_init.h"
#include "ops/add/add.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/embedding/embedding.h"
#include "ops/embedding/tied_projection.h"
#include "ops/fill/fill.h"
#include "ops/softmax/softmax.h"

namespace tfm {

// A batch's ids as device tensors (i32).
struct Transformer::BatchTensors {
  Tensor source;          // [batch, source_length]
  Tensor source_lengths;  // [batch]
  Tensor decoder_input;   // [batch, target_length]: bos, then the target shifted right.
  Tensor targets;         // [batch * target_length]
  // model.decoder_input_hook: [batch, target_length] rows of the
  // encoder output flattened to [batch * source_length, d_model].
  Tensor aligned_rows;
};

// What the loss's backward needs from a forward pass.
struct Transformer::ForwardResult {
  // The loss's sums, left on the model's device: reading them waits for the
  // forward pass, so a training step reads them only after its backward
  // pass is queued (on a GPU the CPU queues backward while forward runs).
  Tensor loss, nll, count;
  int64_t source_tokens = 0;
  Tensor decoder_out;  // [batch * target_length, d_model]
  Tensor logits, targets, lse;
};

namespace {

// A forward pass's loss sums on the host (one wait for the device).
absl::StatusOr<LossStats> ReadStats(const Tensor& loss, const Tensor& nll, const Tensor& count,
                                    int64_t source_tokens) {
  TFM_ASSIGN_OR_RETURN(const std::vector<Tensor> host, CopyAllToHost({loss, nll, count}));
  LossStats stats;
  stats.loss = host[0].data<float>()[0];
  stats.nll = host[1].data<float>()[0];
  stats.target_tokens = host[2].data<int64_t>()[0];
  stats.source_tokens = source_tokens;
  return stats;
}

// Every token id of `batch` within the vocabulary, checked here on the host
// where the ids are, so that the GPU's gathers need not check them and wait
// (ForwardContext::ids_checked); a corpus encoded with another vocabulary
// is the usual cause.
absl::Status CheckIdsInVocabulary(const Batch& batch, int64_t vocabulary) {
  for (const auto& [side, ids, length] :
       {std::tuple<const char*, const std::vector<int>*, int>{"source", &batch.source,
                                                               batch.source_length},
        {"target", &batch.target, batch.target_length}}) {
    for (size_t i = 0; i < ids->size(); ++i) {
      const int id = (*ids)[i];
      if (id < 0 || id >= vocabulary) {
        return absl::InvalidArgumentError(absl::StrCat(
            "batch: ", side, " token id ", id, " (row ", i / length, ", position ", i % length,
            ") is outside the model's vocabulary of ", vocabulary,
            " ids (data encoded with another vocabulary?)"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBatch(const Batch& batch) {
  const size_t rows = static_cast<size_t>(batch.size);
  if (batch.size < 1 || batch.source_length < 1 || batch.target_length < 1 ||
      batch.source.size() != rows * batch.source_length ||
      batch.target.size() != rows * batch.target_length || batch.source_lengths.size() != rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "malformed batch: ", batch.size, " rows, source ", batch.source_length, " x ",
        batch.source.size(), " ids, target ", batch.target_length, " x ", batch.target.size(),
        " ids, ", batch.source_lengths.size(), " source lengths"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::Create(const config::ModelConfig& model,
                                                                 const VocabularySpec& vocabulary,
                                                                 const Device& device,
                                                                 uint64_t init_seed) {
  return Build(model, vocabulary, device, init_seed, /*load_for_decoding=*/false);
}

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::CreateForLoading(
    const config::ModelConfig& model, const VocabularySpec& vocabulary, const Device& device) {
  return Build(model, vocabulary, device, /*init_seed=*/0, /*load_for_decoding=*/true);
}

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::Build(const config::ModelConfig& model,
                                                                const VocabularySpec& vocabulary,
                                                                const Device& device,
                                                                uint64_t init_seed,
                                                                bool load_for_decoding) {
  if (vocabulary.size < 1 || vocabulary.pad_id < 0 || vocabulary.pad_id >= vocabulary.size ||
      vocabulary.bos_id < 0 || vocabulary.bos_id >= vocabulary.size || vocabulary.eos_id < 0 ||
      vocabulary.eos_id >= vocabulary.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("vocabulary of ", vocabulary.size, " with pad id ", vocabulary.pad_id,
                     ", bos id ", vocabulary.bos_id, " and eos id ", vocabulary.eos_id,
                     ": the ids must be in the vocabulary"));
  }
  if (model.decoder_input_hook().empty() != (vocabulary.decoder_input_hook == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.decoder_input_hook '", model.decoder_input_hook(), "' and the hook built for the "
        "vocabulary (", vocabulary.decoder_input_hook ? "one" : "none",
        ") disagree: build the hook the config names (CreateDecoderInputHook)"));
  }
  std::unique_ptr<Transformer> transformer(new Transformer());
  transformer->model_ = model;
  transformer->vocabulary_ = vocabulary;
  transformer->device_ = device;
  Generator init_rng(init_seed, /*stream=*/0);
  const auto args_for = [&](const std::string& scope, Attrs attrs = {}) {
    return LayerArgs{model, std::move(attrs), device, scope, &init_rng, load_for_decoding};
  };
  const Shape table_shape = {vocabulary.size, model.d_model()};
  TFM_ASSIGN_OR_RETURN(transformer->source_table_,
                       MakeParameter(args_for("encoder."), "embed_tokens.weight", table_shape,
                                     ParameterInit::kScaledNormal));
  if (!model.share_embeddings()) {
    TFM_ASSIGN_OR_RETURN(transformer->target_table_.emplace(),
                         MakeParameter(args_for("decoder."), "embed_tokens.weight", table_shape,
                                       ParameterInit::kScaledNormal));
  }
  TFM_ASSIGN_OR_RETURN(transformer->source_embedding_,
                       CreateLayer(model.embedding_layer(), args_for("encoder.")));
  TFM_ASSIGN_OR_RETURN(
      transformer->encoder_,
      CreateLayer("stack",
                  args_for("encoder.", {{"layer", model.encoder_layer()},
                                        {"num_layers", int64_t{model.num_encoder_layers()}}})));
  TFM_ASSIGN_OR_RETURN(transformer->target_embedding_,
                       CreateLayer(model.embedding_layer(), args_for("decoder.")));
  TFM_ASSIGN_OR_RETURN(
      transformer->decoder_,
      CreateLayer("stack",
                  args_for("decoder.", {{"layer", model.decoder_layer()},
                                        {"num_layers", int64_t{model.num_decoder_layers()}}})));
  return transformer;
}

absl::StatusOr<Transformer::BatchTensors> Transformer::ToTensors(const Batch& batch) const {
  TFM_RETURN_IF_ERROR(CheckBatch(batch));
  TFM_RETURN_IF_ERROR(CheckIdsInVocabulary(batch, vocabulary_.size));
  const int rows = batch.size, target_length = batch.target_length;
  std::vector<int32_t> decoder_input(batch.target.size());
  for (int r = 0; r < rows; ++r) {
    const int* target = &batch.target[static_cast<size_t>(r) * target_length];
    int32_t* input = &decoder_input[static_cast<size_t>(r) * target_length];
    input[0] = vocabulary_.bos_id;
    for (int j = 1; j < target_length; ++j) input[j] = target[j - 1];
  }
  BatchTensors tensors;
  TFM_ASSIGN_OR_RETURN(tensors.source,
                       Int32OnDevice(batch.source, {rows, batch.source_length}, device_));
  TFM_ASSIGN_OR_RETURN(tensors.source_lengths,
                       Int32OnDevice(batch.source_lengths, {rows}, device_));
  TFM_ASSIGN_OR_RETURN(tensors.decoder_input,
                       Int32OnDevice(decoder_input, {rows, target_length}, device_));
  TFM_ASSIGN_OR_RETURN(
      tensors.targets,
      Int32OnDevice(batch.target, {static_cast<int64_t>(rows) * target_length}, device_));
  if (vocabulary_.decoder_input_hook) {
    TFM_ASSIGN_OR_RETURN(
        tensors.aligned_rows,
        Int32OnDevice(vocabulary_.decoder_input_hook->BatchMemoryRows(
                          batch.source, batch.source_length, batch.source_lengths,
                          decoder_input, target_length),
                      {rows, target_length}, device_));
  }
  return tensors;
}

absl::StatusOr<Tensor> Transformer::DecoderOutput(ForwardContext& context,
                                                  const BatchTensors& tensors) {
  // ToTensors checked the ids on the host.
  context.ids_checked = true;
  // Once per pass, after any update or checkpoint load since the last: the
  // tables' dtype sets the pass's, and every layer downstream follows it.
  TFM_RETURN_IF_ERROR(RoundComputeCopies(Parameters(), PassDType()));
  TFM_ASSIGN_OR_RETURN(const Tensor source_table, ValueFor(source_table_, PassDType()));
  TFM_ASSIGN_OR_RETURN(const Tensor target_table, ValueFor(TargetTable(), PassDType()));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> source,
                       source_embedding_->Forward(context, {source_table, tensors.source}));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> memory,
                       encoder_->Forward(context, {source[0], tensors.source_lengths}));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> target,
                       target_embedding_->Forward(context, {target_table, tensors.decoder_input}));
  aligned_rows_ = tensors.aligned_rows;
  if (aligned_rows_.defined()) {
    memory_shape_ = memory[0].shape();
    TFM_ASSIGN_OR_RETURN(target[0], AddMemoryRows(target[0], memory[0], aligned_rows_));
  }
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> decoded,
                       decoder_->Forward(context, {target[0], memory[0], tensors.source_lengths}));
  return decoded[0].Reshape({tensors.targets.dim(0), model_.d_model()});
}

absl::StatusOr<Tensor> Transformer::AddMemoryRows(const Tensor& x, const Tensor& memory,
                                                  const Tensor& rows) {
  TFM_ASSIGN_OR_RETURN(Tensor flat,
                       memory.Reshape({memory.dim(0) * memory.dim(1), memory.dim(2)}));
  TFM_ASSIGN_OR_RETURN(Tensor picked, Embedding(flat, rows));
  return Add(x, picked);
}

absl::StatusOr<Tensor> Transformer::LogProbabilities(const Batch& batch) {
  const ScopedCpuProductPrecision products(PassProducts());
  ForwardContext context{/*training=*/false, /*rng=*/nullptr};
  TFM_ASSIGN_OR_RETURN(BatchTensors tensors, ToTensors(batch));
  TFM_ASSIGN_OR_RETURN(Tensor decoder_out, DecoderOutput(context, tensors));
  TFM_ASSIGN_OR_RETURN(const Tensor table, ValueFor(TargetTable(), decoder_out.dtype()));
  TFM_ASSIGN_OR_RETURN(Tensor logits, TiedProjection(decoder_out, table));
  TFM_ASSIGN_OR_RETURN(Tensor log_probs, LogSoftmax(logits));
  return log_probs.Reshape({batch.size, batch.target_length, vocabulary_.size});
}

absl::StatusOr<Transformer::ForwardResult> Transformer::Forward(ForwardContext& context,
                                                                const Batch& batch) {
  if (weight_sources_ != nullptr && !weight_sources_->empty()) {
    return absl::FailedPreconditionError(
        "this model holds some weights only as int8 rows (an int8 model directory loaded for "
        "decoding): it decodes; train or evaluate a loss on its f32 checkpoint");
  }
  TFM_ASSIGN_OR_RETURN(BatchTensors tensors, ToTensors(batch));
  ForwardResult result;
  TFM_ASSIGN_OR_RETURN(result.decoder_out, DecoderOutput(context, tensors));
  TFM_ASSIGN_OR_RETURN(const Tensor table, ValueFor(TargetTable(), result.decoder_out.dtype()));
  TFM_ASSIGN_OR_RETURN(result.logits, TiedProjection(result.decoder_out, table));
  // ToTensors checked the targets on the host.
  const CrossEntropyOptions options{model_.label_smoothing(), vocabulary_.pad_id,
                                    /*targets_checked=*/true};
  TFM_ASSIGN_OR_RETURN(CrossEntropyOutput loss,
                       LabelSmoothedCrossEntropy(result.logits, tensors.targets, options));
  result.loss = loss.loss;
  result.nll = loss.nll;
  result.count = loss.count;
  result.source_tokens = batch.source_tokens();
  result.targets = tensors.targets;
  result.lse = loss.lse;
  return result;
}

absl::StatusOr<LossStats> Transformer::ForwardBackward(const Batch& batch,
                                                       const StepContext& step) {
  TFM_ASSIGN_OR_RETURN(const DeviceLossStats sums, ForwardBackwardOnDevice(batch, step));
  TFM_ASSIGN_OR_RETURN(const std::vector<Tensor> host, CopyAllToHost({sums.loss, sums.nll}));
  return LossStats{host[0].data<float>()[0], host[1].data<float>()[0], sums.source_tokens,
                   sums.target_tokens};
}

absl::StatusOr<DeviceLossStats> Transformer::ForwardBackwardOnDevice(const Batch& batch,
                                                                     const StepContext& step) {
  const ScopedCpuProductPrecision products(PassProducts());
  Generator rng(step.seed, step.counter);
  ForwardContext context{step.training, &rng};
  TFM_ASSIGN_OR_RETURN(ForwardResult forward, Forward(context, batch));
  const CrossEntropyOptions options{model_.label_smoothing(), vocabulary_.pad_id,
                                    /*targets_checked=*/true};
  Tensor d_loss = step.loss_scale_on_device;
  if (!d_loss.defined()) {
    TFM_ASSIGN_OR_RETURN(d_loss, Fill({}, step.loss_scale, DType::kF32, device_));
  }
  TFM_ASSIGN_OR_RETURN(Tensor d_logits,
                       LabelSmoothedCrossEntropyBackward(forward.logits, forward.targets,
                                                         forward.lse, d_loss, options));
  forward.logits = Tensor();  // The largest activation: free it before the rest.
  Parameter& target_table = TargetTable();
  TFM_ASSIGN_OR_RETURN(const Tensor table, ValueFor(target_table, forward.decoder_out.dtype()));
  TFM_ASSIGN_OR_RETURN(TiedProjectionGrads projection,
                       TiedProjectionBackward(forward.decoder_out, table, d_logits));
  d_logits = Tensor();
  TFM_RETURN_IF_ERROR(AccumulateGrad(target_table, projection.dtable));
  TFM_ASSIGN_OR_RETURN(Tensor d_decoded,
                       projection.dh.Reshape({batch.size, batch.target_length, model_.d_model()}));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> decoder_grads, decoder_->Backward({d_decoded}));
  if (aligned_rows_.defined()) {
    // The encoder rows added to the decoder inputs take their gradient too.
    TFM_ASSIGN_OR_RETURN(Tensor d_rows,
                         EmbeddingBackward(aligned_rows_, decoder_grads[0],
                                           memory_shape_[0] * memory_shape_[1]));
    TFM_ASSIGN_OR_RETURN(d_rows, d_rows.Reshape(memory_shape_));
    TFM_ASSIGN_OR_RETURN(decoder_grads[1], Add(decoder_grads[1], d_rows));
    aligned_rows_ = Tensor();
  }
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> target_grads,
                       target_embedding_->Backward({decoder_grads[0]}));
  TFM_RETURN_IF_ERROR(AccumulateGrad(target_table, target_grads[0]));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> encoder_grads, encoder_->Backward({decoder_grads[1]}));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> source_grads,
                       source_embedding_->Backward({encoder_grads[0]}));
  TFM_RETURN_IF_ERROR(AccumulateGrad(source_table_, source_grads[0]));
  // The count of real targets is the batch's, known here (ToTensors built
  // the targets from it).
  return DeviceLossStats{forward.loss, forward.nll, forward.source_tokens,
                         batch.target_tokens()};
}

absl::StatusOr<LossStats> Transformer::Evaluate(const Batch& batch) {
  const ScopedCpuProductPrecision products(PassProducts());
  ForwardContext context{/*training=*/false, /*rng=*/nullptr};
  TFM_ASSIGN_OR_RETURN(ForwardResult forward, Forward(context, batch));
  return ReadStats(forward.loss, forward.nll, forward.count, forward.source_tokens);
}

absl::Status Transformer::SetComputeDType(DType dtype) {
  TFM_RETURN_IF_ERROR(CheckCanTrainIn(device_, dtype));
  compute_dtype_ = dtype;
  return absl::OkStatus();
}

DType Transformer::PassDType() const {
  return device_.type == DeviceType::kCPU ? DType::kF32 : compute_dtype_;
}

CpuProductPrecision Transformer::PassProducts() const {
  return device_.type == DeviceType::kCPU && compute_dtype_ == DType::kBF16
             ? CpuProductPrecision::kBf16
             : CpuProductPrecision::kF32;
}

std::vector<Parameter*> Transformer::Parameters() {
  std::vector<Parameter*> parameters = {&source_table_};
  if (target_table_) parameters.push_back(&*target_table_);
  for (Layer* layer :
       {source_embedding_.get(), encoder_.get(), target_embedding_.get(), decoder_.get()}) {
    for (Parameter* p : layer->Parameters()) parameters.push_back(p);
  }
  return parameters;
}

int64_t Transformer::NumParameters() {
  int64_t count = 0;
  for (const Parameter* p : Parameters()) count += p->value.num_elements();
  return count;
}

absl::Status Transformer::ZeroGrads() {
  for (Parameter* p : Parameters()) {
    TFM_ASSIGN_OR_RETURN(p->grad, Fill(p->value.shape(), 0.0, DType::kF32, device_));
  }
  return absl::OkStatus();
}

}  // namespace tfm

// A trained model ready to decode: the Transformer with a checkpoint's
// weights, the checkpoint's own config (its model section fixes the
// architecture, whatever --config says) and its SentencePiece vocabulary.
// Or an ensemble (--model=A,B,...): several checkpoints of one task and
// one vocabulary, each with its own architecture, decoding as one
// (runtime/decode/ensemble_model.h); the first gives the config and tokenizer.
#ifndef TFM_TASKS_COMMON_TRAINED_MODEL_H_
#define TFM_TASKS_COMMON_TRAINED_MODEL_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "core/data/tokenizer.h"
#include "core/device.h"
#include "core/vocabulary_shortlist.h"
#include "layers/transformer.h"
#include "runtime/decode/ensemble_model.h"
#include "runtime/train/task_files.h"

namespace tfm {

struct TrainedModel {
  std::string checkpoint_dir;  // The checkpoint the weights came from.
  config::TaskConfig config;   // As saved in it.
  Tokenizer tokenizer;
  std::unique_ptr<Transformer> model;
  // What the checkpoint keeps for its task (an ensemble's first member's).
  TaskFiles task_files;
  // The ensemble's other members, in --model's order (empty: one model).
  std::vector<std::unique_ptr<Transformer>> other_members;
  std::vector<std::string> other_checkpoint_dirs;
  // Per member (`model` first): whether its weights are int8 rows
  // dequantized (an int8 model directory, or quantized at load by
  // --quantize=int8; tasks/common/quantized_model.h). Such a member decodes
  // in int8 whatever later searches ask: its f32 weights are gone.
  std::vector<bool> int8_weights;
  // The shortlist the members decode with and what it was loaded from
  // ("file frequent best"; empty: none).
  std::shared_ptr<const VocabularyShortlist> shortlist;
  std::string shortlist_source;

  int ensemble_size() const { return 1 + static_cast<int>(other_members.size()); }
  // Every member's decoder products from the next search on: f32, or int8
  // (decode.quantize, --quantize=int8) on the CPU, which first quantizes
  // the weights of members still f32 (int8_weights); a change is written to
  // `log` (may be null) with the int8 kernel this CPU runs. int8 with the
  // weights on a GPU is FailedPrecondition (the int8 kernels are the CPU's;
  // decoding would silently stay f32).
  absl::Status SetDecodingPrecision(config::DecodeConfig::Quantization quantize,
                                    std::ostream* log);
  // decode.dtype (f32, bf16, f16) for every member: what the searches
  // compute in (Transformer::SetDecodingDType; 16-bit on a GPU only).
  absl::Status SetDecodingDType(const std::string& dtype, bool f32_residual = false);
  // decode.kv_cache_dtype (auto, f32, f16) for every member
  // (Transformer::SetKvCacheDType); after SetDecodingDType, which it is
  // checked against. Says on `log` (may be null) when the caches' dtype is
  // not the one decoding computes in.
  absl::Status SetKvCacheDType(const std::string& dtype, std::ostream* log = nullptr);
  // decode.cuda_graphs for every member (Transformer::SetCudaGraphs).
  void SetCudaGraphs(bool on);
  // decode.shortlist (with shortlist_frequent and shortlist_best) for every
  // member from the next search on: the file loaded and checked against
  // this model's vocabulary (runtime/decode/shortlist_file.h), or none when
  // the setting is empty. Loaded once per file and counts; a change is
  // written to `log` (may be null).
  absl::Status SetShortlist(const config::DecodeConfig& decode, std::ostream* log);
  // What a search decodes with: `model`, or every member combined as
  // `combination` says (the returned model points into this one).
  absl::StatusOr<std::unique_ptr<EnsembleModel>> Decoder(
      config::DecodeConfig::EnsembleCombination combination);
};

// TrainedModel::SetDecodingPrecision for models `members` (the first's
// precision decides whether to log a change).
absl::Status SetDecodingPrecision(const std::vector<Transformer*>& members,
                                  config::DecodeConfig::Quantization quantize, std::ostream* log);

// What a Transformer needs of `tokenizer`'s vocabulary for `config`'s model
// (with the hook model.decoder_input_hook names, built over its pieces); the
// model being trained and the one loaded to decode take it from here alike.
// An unknown hook is NotFound listing the known ones.
absl::StatusOr<VocabularySpec> ModelVocabulary(const config::TaskConfig& config,
                                               const Tokenizer& tokenizer);

// The checkpoint directory `path` names, or the one to use in the work
// directory `path` (the averaged, else the best, else the latest; the
// choice is written to `log`, may be null).
absl::StatusOr<std::string> ChooseCheckpoint(const std::string& path, std::ostream* log);

// `path` is a checkpoint directory (f32, or an int8 model directory, which
// loads only on the CPU), or a work directory, in which case the
// averaged checkpoint, else the best by validation, else the latest is used
// (the choice is written to `log`). Errors name the path and what is wrong:
// not there, no checkpoint in it, corrupt files (with the file), or weights
// that do not fit the saved config. Several paths separated by commas load
// an ensemble; a member whose task or SentencePiece model differs from the
// first's, or that its task's TaskDef::ensemble_mismatch rejects (parsing:
// other tree leaves), is an error naming both. (ReadCheckpoint upgrades configs
// saved before a task's settings moved into its extension.) Every member's
// weights are placed on `device` (the checkpoint's host tensors are copied).
// With `task` (the command's own task), a checkpoint of another task is an
// error naming both (a parsing model would otherwise "translate" into
// trees, and the other way round).
absl::StatusOr<TrainedModel> LoadTrainedModel(const std::string& path, const Device& device,
                                              std::ostream* log, absl::string_view task = {});

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_TRAINED_MODEL_H_

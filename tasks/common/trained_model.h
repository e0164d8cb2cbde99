// A trained model ready to decode: the Transformer with a checkpoint's
// weights, the checkpoint's own config (its model section fixes the
// architecture, whatever --config says) and its SentencePiece vocabulary.
#ifndef TFM_TASKS_COMMON_TRAINED_MODEL_H_
#define TFM_TASKS_COMMON_TRAINED_MODEL_H_

#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "core/data/tokenizer.h"
#include "layers/transformer.h"

namespace tfm {

struct TrainedModel {
  std::string checkpoint_dir;  // The checkpoint the weights came from.
  config::TaskConfig config;   // As saved in it.
  Tokenizer tokenizer;
  std::unique_ptr<Transformer> model;
};

// What a Transformer needs of `tokenizer`'s vocabulary for `model` (which
// pieces start a leaf or a word only with model.decoder_leaf_alignment); the
// model being trained and the one loaded to decode take it from here alike.
VocabularySpec ModelVocabulary(const config::ModelConfig& model, const Tokenizer& tokenizer);

// `path` is a checkpoint directory, or a work directory, in which case the
// averaged checkpoint, else the best by validation, else the latest is used
// (the choice is written to `log`). Errors name the path and what is wrong:
// not there, no checkpoint in it, corrupt files (with the file), or weights
// that do not fit the saved config.
absl::StatusOr<TrainedModel> LoadTrainedModel(const std::string& path, std::ostream* log);

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_TRAINED_MODEL_H_

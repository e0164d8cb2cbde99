// The `shortlist` command: a vocabulary shortlist (core/vocabulary_shortlist.h)
// learned for a trained model from the training data its saved config names,
// for decoding with --shortlist=FILE.
#ifndef TFM_TASKS_COMMON_SHORTLIST_COMMAND_H_
#define TFM_TASKS_COMMON_SHORTLIST_COMMAND_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"

namespace tfm {

// Learns from data.train of the config saved with `model_path` (a checkpoint
// directory or a work directory, chosen as decoding chooses; read from
// `data_dir` instead when it is not empty, as --data does), tokenized with
// the model's own vocabulary, and writes the shortlist to `output`
// atomically. An empty `output` is an error (no default place: a
// checkpoint directory's files are fixed by its MANIFEST).
absl::Status RunShortlistCommand(const std::string& model_path, const std::string& output,
                                 const std::string& data_dir, std::ostream& log);

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_SHORTLIST_COMMAND_H_

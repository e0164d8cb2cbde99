// Files a task keeps with its model, by file name: what decoding needs
// beyond the weights, config and vocabulary (parsing's tag counts), so that
// a checkpoint directory decodes on a machine without the training data.
// Checkpoints (checkpoint.h) write them beside their own files, list them
// in the MANIFEST under the same checksums, read them back and carry them
// through averaging. A header of its own so that plugins (//tasks:task_api)
// see the type without the checkpoint format.
#ifndef TFM_RUNTIME_TRAIN_TASK_FILES_H_
#define TFM_RUNTIME_TRAIN_TASK_FILES_H_

#include <map>
#include <string>

namespace tfm {

// Every name starts with this and holds no '/', so that a task file can
// never replace one of the checkpoint's own.
inline constexpr char kTaskFilePrefix[] = "task_";

using TaskFiles = std::map<std::string, std::string>;

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_TASK_FILES_H_

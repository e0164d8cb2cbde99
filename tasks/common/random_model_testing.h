// Test helper: a Transformer with random weights saved as training saves a
// checkpoint, for the decoding commands' tests (no training needed).
#ifndef TFM_TASKS_COMMON_RANDOM_MODEL_TESTING_H_
#define TFM_TASKS_COMMON_RANDOM_MODEL_TESTING_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "core/data/tokenizer.h"

namespace tfm {
namespace testing {

// The model `config` describes over `tokenizer`'s vocabulary, its weights
// from Philox stream (init_seed, 0), written with the config and the
// vocabulary as the checkpoint of update 1 in `work_dir`; returns the
// checkpoint's directory.
absl::StatusOr<std::string> WriteRandomModelCheckpoint(const config::TaskConfig& config,
                                                       const Tokenizer& tokenizer,
                                                       const std::string& work_dir,
                                                       uint64_t init_seed);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TASKS_COMMON_RANDOM_MODEL_TESTING_H_

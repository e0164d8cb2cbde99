// The training corpora tokenized once into a binary corpus
// (core/data/binary_corpus_format.h), as fairseq-preprocess does, and the
// training batches read from it or from the text.
#ifndef TFM_RUNTIME_TRAIN_BINARY_TRAINING_CORPUS_H_
#define TFM_RUNTIME_TRAIN_BINARY_TRAINING_CORPUS_H_

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "core/data/batch_stream.h"
#include "core/data/skip_report.h"
#include "core/data/tokenizer.h"
#include "core/task_registry.h"

namespace tfm {

// <work_dir>/data.binary_train_path, or the setting itself where it is an
// absolute path.
std::string BinaryTrainingCorpusPath(const config::DataConfig& data, const std::string& work_dir);

// What a binary corpus of `data` was made from: data.train and the length
// limits applied. A change to either makes training refuse an old file.
uint64_t TrainingDataChecksum(const config::DataConfig& data);

struct PreprocessSummary {
  int64_t pairs = 0;  // Written.
  int64_t tokens = 0;
  uint32_t token_bytes = 0;
  SkipReport skips;  // The readers' bad records and the length filters' pairs.
};

// Streams data.train once through the readers' sentence checks, `tokenizer`
// and training's length limits (LengthRejection) into a binary corpus at
// `path`, written atomically; tokenized on every core of the default thread
// pool, the file the same whatever their number.
absl::StatusOr<PreprocessSummary> WriteBinaryTrainingCorpus(const config::DataConfig& data,
                                                            const Tokenizer& tokenizer,
                                                            const std::string& path);

// The `preprocess` command: the tokenizer as training trains or loads it,
// then the binary corpus at BinaryTrainingCorpusPath.
absl::Status RunPreprocess(const TaskContext& context);

// Training batches: from the binary corpus at `binary_path` (globally
// shuffled each epoch) when it is not empty, else from the text corpora;
// built on a background thread when data.batching.prefetch_batches > 0.
// `tokenizer` must outlive the stream. Logs which.
absl::StatusOr<std::unique_ptr<BatchStream>> OpenTrainingBatches(const config::DataConfig& data,
                                                                 const Tokenizer& tokenizer,
                                                                 const std::string& binary_path,
                                                                 std::ostream& log);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_BINARY_TRAINING_CORPUS_H_

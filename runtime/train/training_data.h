// The data side of a training run, from a task config's `data` section: the
// shared subword vocabulary (trained once per work directory, then reused so
// that a resumed run and the decoder see the same ids), the streaming batcher
// over the training corpora, and the validation set's batches.
#ifndef TFM_RUNTIME_TRAIN_TRAINING_DATA_H_
#define TFM_RUNTIME_TRAIN_TRAINING_DATA_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "core/data/batch.h"
#include "core/data/pair_reader.h"
#include "core/data/skip_report.h"
#include "core/data/token_batcher.h"
#include "core/data/tokenizer.h"

namespace tfm {

// The corpora of a repeated `train`/`valid` field read one after another as
// one stream. `field` names them in errors ("data.train").
absl::StatusOr<std::unique_ptr<PairReader>> OpenCorpora(
    const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora,
    const std::string& field);

// Streams data.train once, in corpus order: each pair that passes the
// readers' sentence checks and training's length limits (LengthRejection),
// tokenized by `tokenizer` as training sees it (source and target with eos),
// goes to `visit` with its index among the pairs read. Chunks of pairs are
// tokenized on every core (SentencePiece's encoding is thread-safe) and
// visited on this thread, so that only a chunk is in memory whatever the
// corpus size. A `visit` error stops the stream and is returned; the
// readers' skipped records and the pairs over the limits are added to
// `skips`.
absl::Status ForEachTokenizedTrainingPair(
    const config::DataConfig& data, const Tokenizer& tokenizer,
    const std::function<absl::Status(int64_t index, const Example& example)>& visit,
    SkipReport* skips);

// The first `limit` pairs of `corpora` as raw text (sources and targets in
// order): what decoded output is scored on.
absl::Status ReadCorpusPairs(
    const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora,
    const std::string& field, int limit, std::vector<std::string>* sources,
    std::vector<std::string>* targets);

// The tokenizer at work_dir/tokenizer.model_path; when absent, trained on
// both sides of the training corpora and saved there (atomically) first.
absl::StatusOr<Tokenizer> LoadOrTrainTokenizer(const config::DataConfig& data,
                                               const std::string& work_dir, std::ostream* log);

// Token-budget batches over the training corpora; `tokenizer` must outlive it.
std::unique_ptr<TokenBatcher> MakeTrainingBatcher(const config::DataConfig& data,
                                                  const Tokenizer& tokenizer);

// Every batch of the validation corpora (empty when there are none), with
// the training batch budget, no length filter beyond max_length, in order.
absl::StatusOr<std::vector<Batch>> LoadValidationBatches(const config::DataConfig& data,
                                                         const Tokenizer& tokenizer);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_TRAINING_DATA_H_

// The subword tokenizer: a SentencePiece model (BPE or unigram) trained on
// the corpus, with the pad/unk/bos/eos ids of the task's TokenizerConfig,
// shared by source and target (the paper's shared vocabulary).
//
// Training is deterministic: the same config (seed included) and the same
// sentences in the same order give the same model bytes, on any run.
#ifndef TFM_CORE_DATA_TOKENIZER_H_
#define TFM_CORE_DATA_TOKENIZER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/config/task_config.pb.h"
#include "core/data/pair_reader.h"
#include "core/data/sentencepiece_backend.h"

namespace tfm {

class Tokenizer {
 public:
  // Yields the next training sentence; false at the end, or an error.
  using SentenceSource = std::function<absl::StatusOr<bool>(std::string* sentence)>;

  // Trains on the sentences of `next` (config.input_sentence_size of them
  // are sampled with config.seed when there are more).
  static absl::StatusOr<Tokenizer> Train(const config::TokenizerConfig& config,
                                         const SentenceSource& next);
  // Trains on every line of the given text files (plain or gzip), skipping
  // lines that corpus readers would skip.
  static absl::StatusOr<Tokenizer> TrainOnFiles(const config::TokenizerConfig& config,
                                                const std::vector<std::string>& paths);
  // Trains on both sides of every pair `reader` yields (shared vocabulary).
  static absl::StatusOr<Tokenizer> TrainOnPairs(const config::TokenizerConfig& config,
                                                PairReader* reader);

  static absl::StatusOr<Tokenizer> FromModel(std::string model);
  static absl::StatusOr<Tokenizer> Load(const std::string& path);
  // Writes the model atomically (temporary file, then rename).
  absl::Status Save(const std::string& path) const;

  // Subword ids of `text`, without bos/eos.
  std::vector<int> Encode(absl::string_view text) const;
  // The text of `ids`; pad, bos and eos decode to nothing. Ids outside the
  // vocabulary are InvalidArgument.
  absl::StatusOr<std::string> Decode(absl::Span<const int> ids) const;

  int vocab_size() const { return vocab_size_; }
  int pad_id() const { return special_ids_.pad; }
  int unk_id() const { return special_ids_.unk; }
  int bos_id() const { return special_ids_.bos; }
  int eos_id() const { return special_ids_.eos; }
  // The piece of an id inside the vocabulary.
  std::string IdToPiece(int id) const;
  // The serialized model: what Save writes and checkpoints embed.
  const std::string& model() const { return model_; }

 private:
  Tokenizer(const spm::Api* api, std::string model, std::shared_ptr<void> processor);

  const spm::Api* api_;
  std::string model_;
  // Read-only once loaded, so copies of a Tokenizer share it and may encode
  // from several threads.
  std::shared_ptr<void> processor_;
  int vocab_size_;
  spm::SpecialIds special_ids_;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_TOKENIZER_H_

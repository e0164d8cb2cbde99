// Token-budget batches of similar-length pairs, in a seeded order, streamed
// from a corpus of any size with bounded memory, resumable exactly.
//
// How (per epoch): the corpus is read in windows of shuffle_buffer pairs.
// Each window is tokenized, length-filtered, sorted by length (longer side
// first, then source, then target length, ties broken by a seeded random
// key) and cut greedily into batches while rows x longest row stays within
// max_source_tokens and max_target_tokens (padded tokens, as in the paper's
// ~25k + 25k a step). The window's batches are then emitted in a seeded
// random order. Sorting by the longer side bounds both sides' padding at
// once; sorting by one side alone leaves the other side's lengths spread.
//
// Randomness comes from Philox keyed by shuffle_seed with the epoch as the
// stream, a pure function of (seed, epoch, pair index), so the order is the
// same on every run and machine and differs between epochs. A window is a
// contiguous stretch of the corpus: for corpora far larger than the buffer,
// shuffle the files' lines once beforehand so windows mix all sources.
#ifndef TFM_CORE_DATA_TOKEN_BATCHER_H_
#define TFM_CORE_DATA_TOKEN_BATCHER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "core/data/batch.h"
#include "core/data/pair_reader.h"
#include "core/data/skip_report.h"
#include "core/data/tokenizer.h"

namespace tfm {

inline constexpr char kSkipTooManyTokens[] = "longer than max_length";
inline constexpr char kSkipTooFewTokens[] = "shorter than min_length";
inline constexpr char kSkipOverBudget[] = "longer than the token budget";

// Where the batch sequence stands: the next batch is batch `batch` of the
// window that starts after `pairs` pairs of epoch `epoch`. Saving it with a
// checkpoint and passing it to Seek resumes the exact same sequence.
struct BatchPosition {
  int64_t epoch = 0;
  int64_t pairs = 0;
  int64_t batch = 0;

  bool operator==(const BatchPosition& other) const {
    return epoch == other.epoch && pairs == other.pairs && batch == other.batch;
  }
};

class TokenBatcher {
 public:
  // Opens the corpus from its beginning; called once per epoch.
  using OpenCorpus = std::function<absl::StatusOr<std::unique_ptr<PairReader>>()>;
  // Turns a pair into token ids (each side ending in eos).
  using MakeExample = std::function<Example(const SentencePair&)>;

  TokenBatcher(const config::BatchingConfig& config, OpenCorpus open, MakeExample make,
               int pad_id);

  // The tokenizer's encoding with eos appended to both sides; `tokenizer`
  // must outlive the batcher.
  static MakeExample Tokenize(const Tokenizer& tokenizer);

  // Fills *batch with the next batch and returns true, or returns false at
  // the end of an epoch; the next call starts the following epoch.
  absl::StatusOr<bool> Next(Batch* batch);

  // The position of the batch Next returns next.
  const BatchPosition& position() const { return position_; }
  // Continues from a position() saved earlier (with the same config, seed
  // and corpus); the pairs before it are read but not tokenized.
  void Seek(const BatchPosition& position);

  // Skipped so far this epoch (after Next returns false: in the epoch just
  // finished): the corpus reader's records and the length
  // filters' pairs.
  SkipReport skips() const;
  // Padding of all batches returned since construction.
  const BatchStats& stats() const { return stats_; }

 private:
  struct Keyed {
    Example example;
    uint64_t key;
  };

  // Reads, tokenizes and batches the window at position_.pairs.
  absl::Status FillWindow();
  Batch Pad(const std::vector<const Example*>& rows) const;

  config::BatchingConfig config_;
  OpenCorpus open_;
  MakeExample make_;
  int pad_id_;

  BatchPosition position_;
  std::unique_ptr<PairReader> reader_;
  bool reopen_ = true;                  // reader_ must be (re)opened at position_.
  int64_t reader_pairs_ = 0;            // Pairs read from reader_.
  bool window_ready_ = false;
  bool corpus_done_ = false;
  std::vector<Batch> window_;           // Batches of the current window, in order.
  SkipReport length_skips_;
  BatchStats stats_;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_TOKEN_BATCHER_H_

// Token-budget batches of similar-length pairs, in a seeded order, streamed
// from a corpus of any size with bounded memory, resumable exactly.
//
// How (per epoch): the epoch's examples (example_reader.h: a text corpus
// tokenized as it is read, or a binary corpus in a shuffled order) are read
// in windows of shuffle_buffer pairs.
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
// same on every run and machine and differs between epochs. Read from text,
// a window is a contiguous stretch of the corpus: for corpora far larger than
// the buffer, preprocess them (binary_corpus.h), whose reader shuffles the
// whole corpus each epoch so that windows mix all sources.
#ifndef TFM_CORE_DATA_TOKEN_BATCHER_H_
#define TFM_CORE_DATA_TOKEN_BATCHER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "core/data/batch.h"
#include "core/data/batch_stream.h"
#include "core/data/example_reader.h"
#include "core/data/pair_reader.h"
#include "core/data/skip_report.h"
#include "core/data/tokenizer.h"
#include "core/data/tokenizing_reader.h"

namespace tfm {

inline constexpr char kSkipTooManyTokens[] = "longer than max_length";
inline constexpr char kSkipTooFewTokens[] = "shorter than min_length";
inline constexpr char kSkipOverBudget[] = "longer than the token budget";

// Why training leaves out a tokenized pair (the length limits and the token
// budget of `config`), or nullptr to keep it. Preprocessing applies the same
// rule, so a binary corpus holds what training would use.
const char* LengthRejection(const Example& example, const config::BatchingConfig& config);

class TokenBatcher : public BatchStream {
 public:
  // Opens a text corpus from its beginning; called once per epoch.
  using OpenCorpus = std::function<absl::StatusOr<std::unique_ptr<PairReader>>()>;
  using MakeExample = ::tfm::MakeExample;
  // Opens epoch `epoch`'s examples from their beginning.
  using OpenExamples = std::function<absl::StatusOr<std::unique_ptr<ExampleReader>>(int64_t epoch)>;

  // Over a text corpus, tokenized by `make` as it is read.
  TokenBatcher(const config::BatchingConfig& config, OpenCorpus open, MakeExample make,
               int pad_id);
  TokenBatcher(const config::BatchingConfig& config, OpenExamples open, int pad_id);

  // The tokenizer's encoding with eos appended to both sides; `tokenizer`
  // must outlive the batcher.
  static MakeExample Tokenize(const Tokenizer& tokenizer) { return TokenizeWithEos(tokenizer); }

  // Changes each example of a window after it is read, given the epoch and
  // the example's index in the epoch's order, before the window is sorted:
  // BPE-dropout (bpe_dropout.h) splits each training pair anew every epoch.
  // Called from several threads at once (a pure function of its arguments
  // keeps the batches independent of the thread count). Set before the
  // first Next.
  using Transform = std::function<void(int64_t epoch, int64_t index, Example* example)>;
  void SetTransform(Transform transform) { transform_ = std::move(transform); }

  absl::StatusOr<bool> Next(Batch* batch) override;
  const BatchPosition& position() const override { return position_; }
  // The examples before the position are skipped, not decoded (a text
  // corpus is read up to it).
  void Seek(const BatchPosition& position) override;
  // Checked at every pair read into a window.
  void Cancel() override { cancelled_.store(true, std::memory_order_relaxed); }

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
    int64_t index;  // In the epoch's order.
  };

  // Reads, tokenizes and batches the window at position_.pairs.
  absl::Status FillWindow();
  // transform_ over the window's examples, side by side on the default
  // thread pool, then the length limits again.
  void TransformWindow(std::vector<Keyed>* examples);
  Batch Pad(const std::vector<const Example*>& rows) const;

  config::BatchingConfig config_;
  OpenExamples open_;
  int pad_id_;
  Transform transform_;

  BatchPosition position_;
  std::atomic<bool> cancelled_{false};
  std::unique_ptr<ExampleReader> reader_;
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

// Learning a vocabulary shortlist (core/vocabulary_shortlist.h) from the
// training pairs: the `shortlist` command. For each source token, the target
// tokens that co-occur with it in the same pairs, ranked by the Dice
// coefficient 2 c(s, t) / (c(s) + c(t)) over pair counts (a rare source
// word's rare translation ranks first, where p(t | s) would rank "the"'s
// translation first everywhere); and the target tokens by frequency.
// Marian learns its lexical shortlist from fast_align's word alignments;
// co-occurrence needs no aligner and, with the frequent tokens beside it,
// keeps nearly every reference token (the benchmark reports the BLEU).
//
// Memory is bounded for WMT-sized corpora: at most `max_pairs` distinct
// (source, target) counts are kept; past it the rarest are dropped (lossy
// counting: pairs seen at most the count reported in the file's comments
// may be undercounted or missing).
#ifndef TFM_RUNTIME_TRAIN_SHORTLIST_LEARNING_H_
#define TFM_RUNTIME_TRAIN_SHORTLIST_LEARNING_H_

#include <cstdint>
#include <ostream>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/config/task_config.pb.h"
#include "core/data/batch.h"
#include "core/data/tokenizer.h"
#include "runtime/decode/shortlist_file.h"

namespace tfm {

struct ShortlistLearningOptions {
  int stored_frequent = 2000;   // Frequent targets written (decoding takes a prefix).
  int stored_best = 100;        // Targets written per source token.
  int64_t max_pairs = int64_t{1} << 25;  // Distinct pair counts kept in memory.
};

// Pair counts over examples, then the ranked lists.
class ShortlistCounter {
 public:
  // Ids `excluded` (padding, bos, eos: eos is always a candidate) are
  // neither counted as sources nor listed as targets.
  ShortlistCounter(int64_t vocabulary_size, absl::Span<const int> excluded, int64_t max_pairs);

  // One training pair: each distinct source token with each distinct target
  // token. Ids outside the vocabulary are ignored.
  void Add(const Example& example);

  int64_t pairs_added() const { return pairs_added_; }
  // Pairs seen at most this many times may have been dropped to keep
  // within max_pairs (0: none dropped).
  uint32_t dropped_up_to() const { return dropped_up_to_; }

  // The lists (table.best[s]: best first, ties by more co-occurrences then
  // smaller id; table.frequent: most frequent first, ties by smaller id).
  ShortlistTable Table(int stored_frequent, int stored_best) const;

 private:
  void DropRarest();

  int64_t vocabulary_size_, max_pairs_;
  std::vector<char> excluded_;
  std::vector<int64_t> source_pairs_, target_pairs_;  // Pairs each token is in.
  std::vector<int64_t> target_tokens_;                // Occurrences as a target.
  absl::flat_hash_map<uint64_t, uint32_t> pair_counts_;
  int64_t pairs_added_ = 0;
  uint32_t dropped_up_to_ = 0;
  std::vector<int> distinct_source_, distinct_target_;  // Scratch.
  std::vector<char> seen_;                               // Scratch.
};

// The `shortlist` command's learning: data.train streamed once through
// `tokenizer` (training's length limits applied), then the table with the
// vocabulary's size and checksum. Progress and a summary go to `log`.
absl::StatusOr<ShortlistTable> LearnShortlist(const config::DataConfig& data,
                                              const Tokenizer& tokenizer,
                                              const ShortlistLearningOptions& options,
                                              std::ostream& log);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_SHORTLIST_LEARNING_H_

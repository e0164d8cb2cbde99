#include "runtime/train/shortlist_learning.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/data/skip_report.h"
#include "core/status_macros.h"
#include "runtime/train/training_data.h"

namespace tfm {
namespace {

uint64_t PairKey(int source, int target) {
  return (static_cast<uint64_t>(source) << 32) | static_cast<uint32_t>(target);
}

// A ranked target: Dice, then co-occurrences, then the smaller id.
struct Ranked {
  double dice;
  uint32_t count;
  int32_t target;
};
// True when a ranks before b.
bool Before(const Ranked& a, const Ranked& b) {
  if (a.dice != b.dice) return a.dice > b.dice;
  if (a.count != b.count) return a.count > b.count;
  return a.target < b.target;
}

}  // namespace

ShortlistCounter::ShortlistCounter(int64_t vocabulary_size, absl::Span<const int> excluded,
                                   int64_t max_pairs)
    : vocabulary_size_(vocabulary_size),
      max_pairs_(std::max<int64_t>(max_pairs, 1)),
      excluded_(vocabulary_size, 0),
      source_pairs_(vocabulary_size, 0),
      target_pairs_(vocabulary_size, 0),
      target_tokens_(vocabulary_size, 0),
      seen_(vocabulary_size, 0) {
  for (const int id : excluded) {
    if (id >= 0 && id < vocabulary_size) excluded_[id] = 1;
  }
}

void ShortlistCounter::Add(const Example& example) {
  // The distinct usable ids of one side, marks cleared after.
  const auto distinct = [&](const std::vector<int>& ids, std::vector<int>* out) {
    out->clear();
    for (const int id : ids) {
      if (id < 0 || id >= vocabulary_size_ || excluded_[id] || seen_[id]) continue;
      seen_[id] = 1;
      out->push_back(id);
    }
    for (const int id : *out) seen_[id] = 0;
  };
  distinct(example.source, &distinct_source_);
  distinct(example.target, &distinct_target_);
  for (const int id : example.target) {
    if (id >= 0 && id < vocabulary_size_ && !excluded_[id]) ++target_tokens_[id];
  }
  for (const int s : distinct_source_) ++source_pairs_[s];
  for (const int t : distinct_target_) ++target_pairs_[t];
  for (const int s : distinct_source_) {
    for (const int t : distinct_target_) ++pair_counts_[PairKey(s, t)];
  }
  ++pairs_added_;
  if (static_cast<int64_t>(pair_counts_.size()) > max_pairs_) DropRarest();
}

void ShortlistCounter::DropRarest() {
  // Raise the threshold until a quarter of the budget is free: rare pairs
  // go first, and the work is amortised over many Add calls.
  while (static_cast<int64_t>(pair_counts_.size()) > max_pairs_ / 4 * 3) {
    ++dropped_up_to_;
    absl::erase_if(pair_counts_, [&](const std::pair<const uint64_t, uint32_t>& entry) {
      return entry.second <= dropped_up_to_;
    });
  }
}

ShortlistTable ShortlistCounter::Table(int stored_frequent, int stored_best) const {
  ShortlistTable table;
  table.vocabulary_size = vocabulary_size_;
  std::vector<int32_t> targets;
  for (int64_t t = 0; t < vocabulary_size_; ++t) {
    if (target_tokens_[t] > 0) targets.push_back(static_cast<int32_t>(t));
  }
  std::stable_sort(targets.begin(), targets.end(),
                   [&](int32_t a, int32_t b) { return target_tokens_[a] > target_tokens_[b]; });
  if (static_cast<int>(targets.size()) > stored_frequent) targets.resize(stored_frequent);
  table.frequent = std::move(targets);

  // Per source, a heap of its `stored_best` best so far: ordered by Before,
  // the worst on top.
  std::vector<std::vector<Ranked>> heaps(vocabulary_size_);
  for (const auto& [key, count] : pair_counts_) {
    const int source = static_cast<int>(key >> 32);
    const int target = static_cast<int>(key & 0xffffffffu);
    const Ranked ranked{2.0 * count / (source_pairs_[source] + target_pairs_[target]), count,
                        target};
    std::vector<Ranked>& heap = heaps[source];
    if (static_cast<int>(heap.size()) < stored_best) {
      heap.push_back(ranked);
      std::push_heap(heap.begin(), heap.end(), Before);
    } else if (stored_best > 0 && Before(ranked, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), Before);
      heap.back() = ranked;
      std::push_heap(heap.begin(), heap.end(), Before);
    }
  }
  table.best.resize(vocabulary_size_);
  for (int64_t s = 0; s < vocabulary_size_; ++s) {
    std::vector<Ranked>& heap = heaps[s];
    std::sort(heap.begin(), heap.end(), Before);
    for (const Ranked& ranked : heap) table.best[s].push_back(ranked.target);
  }
  return table;
}

absl::StatusOr<ShortlistTable> LearnShortlist(const config::DataConfig& data,
                                              const Tokenizer& tokenizer,
                                              const ShortlistLearningOptions& options,
                                              std::ostream& log) {
  if (options.stored_frequent < 0 || options.stored_best < 0) {
    return absl::InvalidArgumentError(absl::StrCat("a shortlist of ", options.stored_frequent,
                                                   " frequent and ", options.stored_best,
                                                   " best targets: each must be >= 0"));
  }
  ShortlistCounter counter(tokenizer.vocab_size(),
                           {tokenizer.pad_id(), tokenizer.bos_id(), tokenizer.eos_id()},
                           options.max_pairs);
  SkipReport skips;
  log << "shortlist: counting co-occurrences in data.train\n" << std::flush;
  TFM_RETURN_IF_ERROR(ForEachTokenizedTrainingPair(
      data, tokenizer,
      [&](int64_t, const Example& example) -> absl::Status {
        counter.Add(example);
        if ((counter.pairs_added() & ((1 << 20) - 1)) == 0) {
          log << "shortlist: " << counter.pairs_added() << " pairs\n" << std::flush;
        }
        return absl::OkStatus();
      },
      &skips));
  if (counter.pairs_added() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("shortlist: no training pairs in data.train (", skips.Summary(), ")"));
  }
  ShortlistTable table = counter.Table(options.stored_frequent, options.stored_best);
  table.vocabulary_checksum = VocabularyChecksum(tokenizer);
  table.comments.push_back(absl::StrFormat(
      "learned from %d training pairs: targets ranked by the Dice coefficient of pair "
      "co-occurrence, frequent targets by token count",
      counter.pairs_added()));
  if (counter.dropped_up_to() > 0) {
    table.comments.push_back(absl::StrFormat(
        "pairs seen at most %d times may be missing: at most %d distinct pairs are kept in "
        "memory",
        counter.dropped_up_to(), options.max_pairs));
  }
  log << absl::StrFormat("shortlist: %d pairs counted; %s\n", counter.pairs_added(),
                         skips.Summary());
  return table;
}

}  // namespace tfm

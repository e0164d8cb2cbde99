#include "core/data/token_batcher.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/philox.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"

namespace tfm {
namespace {

// Philox streams: sort keys of pairs and order keys of batches never share
// counters.
uint64_t PairKey(uint64_t seed, int64_t epoch, int64_t pair_index) {
  const philox::Uint4 block = philox::Block(seed, 2 * static_cast<uint64_t>(epoch), pair_index);
  return uint64_t{block.x} << 32 | block.y;
}

uint64_t BatchKey(uint64_t seed, int64_t epoch, int64_t window_start, int64_t batch_index) {
  const philox::Uint4 block = philox::Block(seed, 2 * static_cast<uint64_t>(epoch) + 1,
                                            static_cast<uint64_t>(window_start) + batch_index);
  return uint64_t{block.x} << 32 | block.y;
}

}  // namespace

const char* LengthRejection(const Example& example, const config::BatchingConfig& config) {
  const int longest = std::max(example.source.size(), example.target.size());
  const int shortest = std::min(example.source.size(), example.target.size());
  if (longest > config.max_length()) return kSkipTooManyTokens;
  if (shortest < config.min_length()) return kSkipTooFewTokens;
  if (static_cast<int>(example.source.size()) > config.max_source_tokens() ||
      static_cast<int>(example.target.size()) > config.max_target_tokens()) {
    return kSkipOverBudget;
  }
  return nullptr;
}

TokenBatcher::TokenBatcher(const config::BatchingConfig& config, OpenCorpus open,
                           MakeExample make, int pad_id)
    : TokenBatcher(
          config,
          [open = std::move(open),
           make = std::move(make)](int64_t) -> absl::StatusOr<std::unique_ptr<ExampleReader>> {
            TFM_ASSIGN_OR_RETURN(std::unique_ptr<PairReader> pairs, open());
            return std::unique_ptr<ExampleReader>(new TokenizingReader(std::move(pairs), make));
          },
          pad_id) {}

TokenBatcher::TokenBatcher(const config::BatchingConfig& config, OpenExamples open, int pad_id)
    : config_(config), open_(std::move(open)), pad_id_(pad_id) {}

void TokenBatcher::Seek(const BatchPosition& position) {
  cancelled_.store(false, std::memory_order_relaxed);
  position_ = position;
  reopen_ = true;
  window_ready_ = false;
}

SkipReport TokenBatcher::skips() const {
  SkipReport report = length_skips_;
  if (reader_ != nullptr) report.Merge(reader_->skips());
  return report;
}

Batch TokenBatcher::Pad(const std::vector<const Example*>& rows) const {
  Batch batch;
  batch.size = rows.size();
  for (const Example* row : rows) {
    batch.source_length = std::max<int>(batch.source_length, row->source.size());
    batch.target_length = std::max<int>(batch.target_length, row->target.size());
  }
  batch.source.assign(int64_t{batch.size} * batch.source_length, pad_id_);
  batch.target.assign(int64_t{batch.size} * batch.target_length, pad_id_);
  for (int i = 0; i < batch.size; ++i) {
    std::copy(rows[i]->source.begin(), rows[i]->source.end(),
              batch.source.begin() + int64_t{i} * batch.source_length);
    std::copy(rows[i]->target.begin(), rows[i]->target.end(),
              batch.target.begin() + int64_t{i} * batch.target_length);
    batch.source_lengths.push_back(rows[i]->source.size());
    batch.target_lengths.push_back(rows[i]->target.size());
  }
  return batch;
}

void TokenBatcher::TransformWindow(std::vector<Keyed>* examples) {
  // A pure function of (epoch, index, example), so the threads change no
  // bit; the pool's other threads are idle while a GPU trains.
  ThreadPool::Default()->ParallelFor(
      examples->size(), 16, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          Keyed& keyed = (*examples)[i];
          transform_(position_.epoch, keyed.index, &keyed.example);
        }
      });
  // The length limits again: a pair's new split may be longer. The reader
  // no longer knows where such a pair came from; its index says.
  size_t kept = 0;
  for (size_t i = 0; i < examples->size(); ++i) {
    if (const char* reason = LengthRejection((*examples)[i].example, config_); reason != nullptr) {
      length_skips_.Skip(reason, absl::StrCat("epoch ", position_.epoch, " pair ",
                                              (*examples)[i].index,
                                              " as the transform (BPE-dropout) split it"));
      continue;
    }
    if (kept != i) (*examples)[kept] = std::move((*examples)[i]);
    ++kept;
  }
  examples->resize(kept);
}

absl::Status TokenBatcher::FillWindow() {
  if (reopen_) {
    reader_.reset();
    TFM_ASSIGN_OR_RETURN(reader_, open_(position_.epoch));
    reopen_ = false;
    reader_pairs_ = 0;
    corpus_done_ = false;
    length_skips_ = SkipReport();
  }
  // Examples before the window (after a Seek) are skipped, not decoded.
  if (reader_pairs_ < position_.pairs) {
    TFM_RETURN_IF_ERROR(reader_->Skip(position_.pairs - reader_pairs_));
    reader_pairs_ = position_.pairs;
  }
  const int64_t capacity = std::max(1, config_.shuffle_buffer());
  std::vector<Keyed> examples;
  Example example;
  while (reader_pairs_ < position_.pairs + capacity) {
    if (cancelled_.load(std::memory_order_relaxed)) {
      // The half-read window is dropped; Seek reopens the reader.
      return absl::CancelledError("batching cancelled");
    }
    TFM_ASSIGN_OR_RETURN(const bool more, reader_->Next(&example));
    if (!more) {
      corpus_done_ = true;
      break;
    }
    const int64_t index = reader_pairs_++;
    if (const char* reason = LengthRejection(example, config_); reason != nullptr) {
      // By file and line where the reader knows them.
      std::string where = reader_->Where();
      if (where.empty()) where = absl::StrCat("epoch ", position_.epoch, " pair ", index);
      length_skips_.Skip(reason, where);
      continue;
    }
    examples.push_back(
        {std::move(example), PairKey(config_.shuffle_seed(), position_.epoch, index), index});
  }
  if (transform_) TransformWindow(&examples);

  // Similar lengths next to each other; the random key shuffles equals.
  auto sort_key = [](const Keyed& k) {
    const int source = k.example.source.size(), target = k.example.target.size();
    return std::make_tuple(std::max(source, target), source, target, k.key);
  };
  std::sort(examples.begin(), examples.end(),
            [&](const Keyed& a, const Keyed& b) { return sort_key(a) < sort_key(b); });

  std::vector<Batch> batches;
  std::vector<const Example*> rows;
  int source_length = 0, target_length = 0;
  for (const Keyed& keyed : examples) {
    const int source = std::max<int>(source_length, keyed.example.source.size());
    const int target = std::max<int>(target_length, keyed.example.target.size());
    const int64_t n = rows.size() + 1;
    if (!rows.empty() &&
        (n * source > config_.max_source_tokens() || n * target > config_.max_target_tokens())) {
      batches.push_back(Pad(rows));
      rows.clear();
      source_length = target_length = 0;
    }
    rows.push_back(&keyed.example);
    source_length = std::max<int>(source_length, keyed.example.source.size());
    target_length = std::max<int>(target_length, keyed.example.target.size());
  }
  if (!rows.empty()) batches.push_back(Pad(rows));

  // A seeded order of the window's batches, so lengths do not come in order.
  std::vector<std::pair<uint64_t, int>> order;
  for (int i = 0; i < static_cast<int>(batches.size()); ++i) {
    order.emplace_back(BatchKey(config_.shuffle_seed(), position_.epoch, position_.pairs, i), i);
  }
  std::sort(order.begin(), order.end());
  window_.clear();
  for (const auto& [key, i] : order) window_.push_back(std::move(batches[i]));
  window_ready_ = true;
  return absl::OkStatus();
}

absl::StatusOr<bool> TokenBatcher::Next(Batch* batch) {
  while (true) {
    if (!window_ready_) TFM_RETURN_IF_ERROR(FillWindow());
    if (position_.batch < static_cast<int64_t>(window_.size())) {
      *batch = std::move(window_[position_.batch++]);
      stats_.Add(*batch);
      return true;
    }
    window_ready_ = false;
    if (corpus_done_) {
      // The reader stays until the next epoch opens, so skips() still
      // reports the finished epoch.
      position_ = BatchPosition{position_.epoch + 1, 0, 0};
      reopen_ = true;
      return false;
    }
    position_.pairs = reader_pairs_;
    position_.batch = 0;
  }
}

}  // namespace tfm

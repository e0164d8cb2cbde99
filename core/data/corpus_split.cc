#include "core/data/corpus_split.h"

#include <utility>

#include "core/status_macros.h"

namespace tfm {
namespace {

class SplitFilter : public PairReader {
 public:
  SplitFilter(std::unique_ptr<PairReader> inner, config::CorpusConfig::Split split)
      : inner_(std::move(inner)), split_(split) {}

  absl::StatusOr<bool> Next(SentencePair* pair) override {
    while (true) {
      TFM_ASSIGN_OR_RETURN(const bool more, inner_->Next(pair));
      if (!more) return false;
      if (SplitOfSource(pair->source) == split_) return true;
    }
  }
  const SkipReport& skips() const override { return inner_->skips(); }
  std::string Where() const override { return inner_->Where(); }

 private:
  std::unique_ptr<PairReader> inner_;
  config::CorpusConfig::Split split_;
};

}  // namespace

uint64_t StableTextHash(absl::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis.
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;  // FNV-1a 64 prime.
  }
  hash ^= hash >> 30;  // SplitMix64 finaliser.
  hash *= 0xbf58476d1ce4e5b9ull;
  hash ^= hash >> 27;
  hash *= 0x94d049bb133111ebull;
  hash ^= hash >> 31;
  return hash;
}

config::CorpusConfig::Split SplitOfSource(absl::string_view source) {
  const int bucket = static_cast<int>(StableTextHash(source) % kSplitBuckets);
  if (bucket < kTrainBuckets) return config::CorpusConfig::TRAIN;
  if (bucket < kTrainBuckets + kValidBuckets) return config::CorpusConfig::VALID;
  return config::CorpusConfig::TEST;
}

std::unique_ptr<PairReader> FilterSplit(std::unique_ptr<PairReader> inner,
                                        config::CorpusConfig::Split split) {
  if (split == config::CorpusConfig::ALL) return inner;
  return std::make_unique<SplitFilter>(std::move(inner), split);
}

}  // namespace tfm

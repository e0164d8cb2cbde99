// One epoch of a binary corpus in a global random order: a permutation of
// all pairs drawn from (seed, epoch), so every epoch mixes every source (WMT14's
// Europarl, CommonCrawl and News Commentary no longer arrive in blocks), the
// order is the same on every run and machine, and resuming at a position
// inside an epoch costs nothing (Skip moves a cursor).
#ifndef TFM_CORE_DATA_SHUFFLED_CORPUS_READER_H_
#define TFM_CORE_DATA_SHUFFLED_CORPUS_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/data/binary_corpus.h"
#include "core/data/example_reader.h"

namespace tfm {

// The epoch's order of pair indices 0..size-1 (Fisher-Yates on a Philox
// stream of its own, apart from the batcher's sort and batch keys).
std::vector<uint32_t> EpochPermutation(int64_t size, uint64_t seed, int64_t epoch);

class ShuffledCorpusReader : public ExampleReader {
 public:
  // The corpus has fewer than 2^32 pairs (checked by the caller).
  ShuffledCorpusReader(std::shared_ptr<const BinaryCorpus> corpus, uint64_t seed, int64_t epoch)
      : corpus_(std::move(corpus)), order_(EpochPermutation(corpus_->size(), seed, epoch)) {}

  absl::Status Skip(int64_t count) override;
  absl::StatusOr<bool> Next(Example* example) override;
  // Preprocessing skipped the bad pairs already.
  SkipReport skips() const override { return SkipReport(); }
  // "corpus.bin pair N" (N from 0 in the file's order, which is the text's
  // order less the pairs preprocessing skipped).
  std::string Where() const override;

 private:
  std::shared_ptr<const BinaryCorpus> corpus_;
  std::vector<uint32_t> order_;  // 4 bytes a pair: WMT14's 4.5M pairs take 18 MB.
  int64_t next_ = 0;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_SHUFFLED_CORPUS_READER_H_

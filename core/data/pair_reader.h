// The streaming interface every corpus reader implements: aligned sentence
// pairs, one at a time, so a corpus far larger than memory can be read.
#ifndef TFM_CORE_DATA_PAIR_READER_H_
#define TFM_CORE_DATA_PAIR_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/data/skip_report.h"

namespace tfm {

struct SentencePair {
  std::string source;
  std::string target;
};

class PairReader {
 public:
  virtual ~PairReader() = default;

  // Reads the next well-formed pair into *pair; false at the end. Malformed
  // records are skipped (both sides together, keeping the alignment) and
  // counted in skips(). Errors are for what cannot be skipped: an unreadable
  // file, files of different lengths.
  virtual absl::StatusOr<bool> Next(SentencePair* pair) = 0;

  // What was skipped so far, by reason.
  virtual const SkipReport& skips() const = 0;

  // Where the pair that Next last returned came from, for messages about it
  // ("train.en.gz:1234": the source file and line); empty where the reader
  // cannot say. Called only for pairs that are reported, so it may build
  // its string then.
  virtual std::string Where() const { return std::string(); }
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_PAIR_READER_H_

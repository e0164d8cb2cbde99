// PLAIN_TEXT corpora: two files, one sentence a line, line i of the source
// translating line i of the target (optionally gzip).
#ifndef TFM_CORE_DATA_ALIGNED_TEXT_READER_H_
#define TFM_CORE_DATA_ALIGNED_TEXT_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/data/line_reader.h"
#include "core/data/pair_reader.h"
#include "core/data/sentence_checks.h"

namespace tfm {

class AlignedTextReader : public PairReader {
 public:
  static absl::StatusOr<std::unique_ptr<AlignedTextReader>> Open(
      const std::string& source_path, const std::string& target_path,
      int64_t max_sentence_bytes = kDefaultMaxSentenceBytes);

  // Fails, naming both files and both line counts, when one file ends before
  // the other. The count check happens at the end of the stream, so pairs
  // read before it were already handed out: callers treat the error as
  // fatal for the corpus.
  absl::StatusOr<bool> Next(SentencePair* pair) override;
  const SkipReport& skips() const override { return skips_; }
  // The source file and its line (the target's is the same line).
  std::string Where() const override;

 private:
  AlignedTextReader(std::unique_ptr<LineReader> source, std::unique_ptr<LineReader> target)
      : source_(std::move(source)), target_(std::move(target)) {}

  // Counts the lines left in `reader` (for the mismatch error).
  absl::StatusOr<int64_t> CountToEnd(LineReader* reader);

  std::unique_ptr<LineReader> source_;
  std::unique_ptr<LineReader> target_;
  SkipReport skips_;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_ALIGNED_TEXT_READER_H_

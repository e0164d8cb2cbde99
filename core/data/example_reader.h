// One epoch's tokenized pairs in reading order, the input of TokenBatcher:
// from a text corpus tokenized as it is read (TokenizingReader), or from a
// preprocessed binary corpus in a shuffled order (ShuffledCorpusReader).
#ifndef TFM_CORE_DATA_EXAMPLE_READER_H_
#define TFM_CORE_DATA_EXAMPLE_READER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/data/batch.h"
#include "core/data/skip_report.h"

namespace tfm {

class ExampleReader {
 public:
  virtual ~ExampleReader() = default;

  // Moves past the next `count` examples without decoding them (fewer at the
  // end of the epoch); used to resume inside an epoch.
  virtual absl::Status Skip(int64_t count) = 0;

  // Reads the next example into *example and returns true, or false at the
  // end of the epoch.
  virtual absl::StatusOr<bool> Next(Example* example) = 0;

  // Records the reader itself skipped (bad lines of a text corpus).
  virtual SkipReport skips() const = 0;

  // Where the example that Next last returned came from (PairReader::Where;
  // a binary corpus: its path and pair), for the batcher's length
  // rejections; empty where the reader cannot say.
  virtual std::string Where() const { return std::string(); }
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_EXAMPLE_READER_H_

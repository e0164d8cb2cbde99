// A binary corpus (binary_corpus_format.h) mapped into memory: pairs read by
// index, touching only their pages, so a corpus far larger than memory
// costs nothing to open beyond checking its index.
#ifndef TFM_CORE_DATA_BINARY_CORPUS_H_
#define TFM_CORE_DATA_BINARY_CORPUS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/data/batch.h"
#include "core/data/binary_corpus_format.h"

namespace tfm {

// What the corpus must have been made with.
struct BinaryCorpusExpectation {
  int vocab_size = 0;
  uint64_t vocabulary_checksum = 0;
  uint64_t data_checksum = 0;
};

class BinaryCorpus {
 public:
  // Maps `path` and checks its header (magic, version, id width, the
  // expected vocabulary and data), its size and its whole index (checksum,
  // every entry inside the tokens section). Errors name the path and, for
  // the index, the pair.
  static absl::StatusOr<std::unique_ptr<const BinaryCorpus>> Open(
      const std::string& path, const BinaryCorpusExpectation& expected);
  ~BinaryCorpus();
  BinaryCorpus(const BinaryCorpus&) = delete;
  BinaryCorpus& operator=(const BinaryCorpus&) = delete;

  int64_t size() const { return header_.pairs; }
  int64_t tokens() const { return header_.tokens; }
  uint32_t token_bytes() const { return header_.token_bytes; }
  const std::string& path() const { return path_; }

  // Pair `index` (0 <= index < size()); an id outside the vocabulary (a
  // damaged file) is DataLoss naming the path, the pair and the byte offset.
  absl::Status Read(int64_t index, Example* example) const;

 private:
  BinaryCorpus(std::string path, const char* data, size_t size, const BinaryCorpusHeader& header);
  absl::Status ReadSide(int64_t index, uint64_t offset, uint32_t length,
                        std::vector<int>* ids) const;

  std::string path_;
  const char* data_;  // The mapping.
  size_t size_;
  BinaryCorpusHeader header_;
  const char* tokens_;  // Inside the mapping.
  const char* index_;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_BINARY_CORPUS_H_

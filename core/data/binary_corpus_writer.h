// Writes a binary corpus (binary_corpus_format.h) one pair at a time: the ids
// go straight to the file, only the index (16 bytes a pair) stays in memory,
// and the file appears under its name complete or not at all (file_io.h's
// AtomicFileWriter: a symbolic link stays a link, a file's mode is kept).
#ifndef TFM_CORE_DATA_BINARY_CORPUS_WRITER_H_
#define TFM_CORE_DATA_BINARY_CORPUS_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/data/batch.h"
#include "core/data/binary_corpus_format.h"
#include "core/data/file_io.h"

namespace tfm {

class BinaryCorpusWriter {
 public:
  // Writes to a temporary file beside `path` until Finish renames it.
  static absl::StatusOr<std::unique_ptr<BinaryCorpusWriter>> Create(const std::string& path,
                                                                    int vocab_size,
                                                                    uint64_t vocabulary_checksum,
                                                                    uint64_t data_checksum);
  // Without Finish, the temporary file is removed.
  ~BinaryCorpusWriter();

  // Appends a pair; an id outside the vocabulary is InvalidArgument.
  absl::Status Add(const Example& example);
  // Writes the index and header, flushes to disk and renames into place.
  absl::Status Finish();

  int64_t pairs() const { return index_.size(); }
  int64_t tokens() const { return tokens_; }
  uint32_t token_bytes() const { return header_.token_bytes; }

 private:
  BinaryCorpusWriter(std::string path, AtomicFileWriter file, BinaryCorpusHeader header);
  // Appends through buffer_: pairs are small and many.
  absl::Status WriteBytes(const void* data, size_t size);
  absl::Status FlushBuffer();
  absl::Status AppendIds(const std::vector<int>& ids);

  std::string path_;
  AtomicFileWriter file_;
  std::string buffer_;
  BinaryCorpusHeader header_;
  std::vector<BinaryCorpusIndexEntry> index_;
  std::vector<char> scratch_;  // One side's ids in the file's width.
  int64_t tokens_ = 0;
  uint32_t tokens_crc32c_ = 0;  // Of every id written so far.
  bool finished_ = false;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_BINARY_CORPUS_WRITER_H_

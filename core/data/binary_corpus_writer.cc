#include "core/data/binary_corpus_writer.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/data/crc32c.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// Large writes: the corpus is written once, sequentially.
constexpr size_t kWriteBuffer = 1 << 20;

}  // namespace

absl::StatusOr<std::unique_ptr<BinaryCorpusWriter>> BinaryCorpusWriter::Create(
    const std::string& path, int vocab_size, uint64_t vocabulary_checksum, uint64_t data_checksum) {
  if (vocab_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": vocabulary size ", vocab_size));
  }
  TFM_ASSIGN_OR_RETURN(AtomicFileWriter file, AtomicFileWriter::Create(path));
  BinaryCorpusHeader header{};
  std::memcpy(header.magic, kBinaryCorpusMagic, sizeof(header.magic));
  header.version = kBinaryCorpusVersion;
  header.token_bytes = TokenBytesFor(vocab_size);
  header.vocabulary_checksum = vocabulary_checksum;
  header.vocab_size = vocab_size;
  header.data_checksum = data_checksum;
  std::unique_ptr<BinaryCorpusWriter> writer(new BinaryCorpusWriter(path, std::move(file), header));
  // The header's place; its counts are written by Finish.
  TFM_RETURN_IF_ERROR(writer->WriteBytes(&header, sizeof(header)));
  return writer;
}

BinaryCorpusWriter::BinaryCorpusWriter(std::string path, AtomicFileWriter file,
                                       BinaryCorpusHeader header)
    : path_(std::move(path)), file_(std::move(file)), header_(header) {
  buffer_.reserve(kWriteBuffer);
}

// An unfinished file_ removes its temporary file itself.
BinaryCorpusWriter::~BinaryCorpusWriter() = default;

absl::Status BinaryCorpusWriter::WriteBytes(const void* data, size_t size) {
  buffer_.append(static_cast<const char*>(data), size);
  return buffer_.size() >= kWriteBuffer ? FlushBuffer() : absl::OkStatus();
}

absl::Status BinaryCorpusWriter::FlushBuffer() {
  absl::Status status = file_.Append(buffer_);
  buffer_.clear();
  return status;
}

absl::Status BinaryCorpusWriter::AppendIds(const std::vector<int>& ids) {
  const uint32_t width = header_.token_bytes;
  scratch_.resize(ids.size() * width);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= static_cast<int>(header_.vocab_size)) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": pair ", index_.size(), ": token id ",
                                                     ids[i], " outside the vocabulary of ",
                                                     header_.vocab_size));
    }
    if (width == kTokenBytesUint16) {
      const uint16_t id = ids[i];
      std::memcpy(&scratch_[i * width], &id, width);
    } else {
      const int32_t id = ids[i];
      std::memcpy(&scratch_[i * width], &id, width);
    }
  }
  tokens_crc32c_ =
      ExtendCrc32c(tokens_crc32c_, absl::string_view(scratch_.data(), scratch_.size()));
  return WriteBytes(scratch_.data(), scratch_.size());
}

absl::Status BinaryCorpusWriter::Add(const Example& example) {
  if (finished_) return absl::FailedPreconditionError(absl::StrCat(path_, ": already finished"));
  TFM_RETURN_IF_ERROR(AppendIds(example.source));
  TFM_RETURN_IF_ERROR(AppendIds(example.target));
  index_.push_back({static_cast<uint64_t>(tokens_), static_cast<uint32_t>(example.source.size()),
                    static_cast<uint32_t>(example.target.size())});
  tokens_ += example.source.size() + example.target.size();
  return absl::OkStatus();
}

absl::Status BinaryCorpusWriter::Finish() {
  if (finished_) return absl::FailedPreconditionError(absl::StrCat(path_, ": already finished"));
  const int64_t token_bytes = tokens_ * header_.token_bytes;
  const std::vector<char> padding(AlignedTokenBytes(tokens_, header_.token_bytes) - token_bytes, 0);
  TFM_RETURN_IF_ERROR(WriteBytes(padding.data(), padding.size()));
  const size_t index_bytes = index_.size() * sizeof(BinaryCorpusIndexEntry);
  TFM_RETURN_IF_ERROR(WriteBytes(index_.data(), index_bytes));
  header_.pairs = index_.size();
  header_.tokens = tokens_;
  header_.tokens_crc32c = tokens_crc32c_;
  header_.index_checksum =
      Fnv1a64(absl::string_view(reinterpret_cast<const char*>(index_.data()), index_bytes));
  TFM_RETURN_IF_ERROR(FlushBuffer());
  // The placeholder written by Create gets its counts (a FIFO cannot seek:
  // an error naming the path; a corpus is for memory-mapping anyway).
  TFM_RETURN_IF_ERROR(file_.WriteAt(
      0, absl::string_view(reinterpret_cast<const char*>(&header_), sizeof(header_))));
  TFM_RETURN_IF_ERROR(file_.Commit());
  finished_ = true;
  return absl::OkStatus();
}

}  // namespace tfm

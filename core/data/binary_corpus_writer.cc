#include "core/data/binary_corpus_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// Large writes: the corpus is written once, sequentially.
constexpr size_t kWriteBuffer = 1 << 20;

absl::Status ErrnoError(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(path, ": ", what, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<BinaryCorpusWriter>> BinaryCorpusWriter::Create(
    const std::string& path, int vocab_size, uint64_t vocabulary_checksum, uint64_t data_checksum) {
  if (vocab_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": vocabulary size ", vocab_size));
  }
  const std::string temp_path = absl::StrCat(path, ".tmp.", getpid());
  std::FILE* file = std::fopen(temp_path.c_str(), "wb");
  if (file == nullptr) return ErrnoError("cannot create", temp_path);
  std::setvbuf(file, nullptr, _IOFBF, kWriteBuffer);
  BinaryCorpusHeader header{};
  std::memcpy(header.magic, kBinaryCorpusMagic, sizeof(header.magic));
  header.version = kBinaryCorpusVersion;
  header.token_bytes = TokenBytesFor(vocab_size);
  header.vocabulary_checksum = vocabulary_checksum;
  header.vocab_size = vocab_size;
  header.data_checksum = data_checksum;
  std::unique_ptr<BinaryCorpusWriter> writer(new BinaryCorpusWriter(path, temp_path, file, header));
  // The header's place; its counts are written by Finish.
  TFM_RETURN_IF_ERROR(writer->WriteBytes(&header, sizeof(header)));
  return writer;
}

BinaryCorpusWriter::BinaryCorpusWriter(std::string path, std::string temp_path, std::FILE* file,
                                       BinaryCorpusHeader header)
    : path_(std::move(path)), temp_path_(std::move(temp_path)), file_(file), header_(header) {}

BinaryCorpusWriter::~BinaryCorpusWriter() {
  if (file_ != nullptr) std::fclose(file_);
  if (!finished_) std::remove(temp_path_.c_str());
}

absl::Status BinaryCorpusWriter::WriteBytes(const void* data, size_t size) {
  if (size > 0 && std::fwrite(data, 1, size, file_) != size) {
    return ErrnoError("cannot write", temp_path_);
  }
  return absl::OkStatus();
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
  header_.index_checksum =
      Fnv1a64(absl::string_view(reinterpret_cast<const char*>(index_.data()), index_bytes));
  if (std::fseek(file_, 0, SEEK_SET) != 0) return ErrnoError("cannot seek", temp_path_);
  TFM_RETURN_IF_ERROR(WriteBytes(&header_, sizeof(header_)));
  if (std::fflush(file_) != 0 || fsync(fileno(file_)) != 0) {
    return ErrnoError("cannot flush", temp_path_);
  }
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0) return ErrnoError("cannot close", temp_path_);
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    return ErrnoError(absl::StrCat("cannot rename ", temp_path_, " to"), path_);
  }
  finished_ = true;
  return absl::OkStatus();
}

}  // namespace tfm

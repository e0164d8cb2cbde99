#include "core/data/binary_corpus.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/data/crc32c.h"

namespace tfm {
namespace {

absl::Status Corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

// The header's checks; `file_size` is what the file holds.
absl::Status CheckHeader(const std::string& path, const BinaryCorpusHeader& header,
                         uint64_t file_size, const BinaryCorpusExpectation& expected) {
  if (std::memcmp(header.magic, kBinaryCorpusMagic, sizeof(header.magic)) != 0) {
    return Corrupt(path, "not a binary corpus (wrong magic; make one with the preprocess command)");
  }
  if (header.version != kBinaryCorpusVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": binary corpus version ", header.version, ", this build reads ",
                     kBinaryCorpusVersion, "; run preprocess again"));
  }
  if (header.token_bytes != kTokenBytesUint16 && header.token_bytes != kTokenBytesInt32) {
    return Corrupt(path, absl::StrCat("token width ", header.token_bytes, " bytes (2 or 4)"));
  }
  if (header.vocabulary_checksum != expected.vocabulary_checksum ||
      header.vocab_size != static_cast<uint32_t>(expected.vocab_size)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": made with another vocabulary (", header.vocab_size, " pieces, checksum ",
        absl::Hex(header.vocabulary_checksum), "; this run's: ", expected.vocab_size,
        " pieces, checksum ", absl::Hex(expected.vocabulary_checksum),
        "); run preprocess again or remove it"));
  }
  if (header.data_checksum != expected.data_checksum) {
    return absl::FailedPreconditionError(
        absl::StrCat(path,
                     ": made from other data.train corpora or length limits than this "
                     "run's; run preprocess again or remove it"));
  }
  // Counts this large are damage, and would overflow the size below.
  constexpr uint64_t kCountLimit = uint64_t{1} << 56;
  const bool counts_plausible = header.tokens < kCountLimit && header.pairs < kCountLimit;
  const uint64_t needed = counts_plausible
                              ? sizeof(BinaryCorpusHeader) +
                                    AlignedTokenBytes(header.tokens, header.token_bytes) +
                                    header.pairs * sizeof(BinaryCorpusIndexEntry)
                              : 0;
  if (!counts_plausible || file_size != needed) {
    return Corrupt(
        path, absl::StrCat("truncated or damaged: ", file_size,
                           " bytes, but the "
                           "header's ",
                           header.pairs, " pairs and ", header.tokens, " tokens need ", needed));
  }
  return absl::OkStatus();
}

BinaryCorpusIndexEntry EntryAt(const char* index, int64_t i) {
  BinaryCorpusIndexEntry entry;
  std::memcpy(&entry, index + i * sizeof(entry), sizeof(entry));
  return entry;
}

}  // namespace

absl::StatusOr<std::unique_ptr<const BinaryCorpus>> BinaryCorpus::Open(
    const std::string& path, const BinaryCorpusExpectation& expected) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return errno == ENOENT ? absl::NotFoundError(absl::StrCat(path, ": no such file"))
                           : absl::InternalError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  struct stat info;
  if (fstat(fd, &info) != 0) {
    const int error = errno;
    close(fd);
    return absl::InternalError(absl::StrCat(path, ": ", std::strerror(error)));
  }
  const size_t size = info.st_size;
  if (size < sizeof(BinaryCorpusHeader)) {
    close(fd);
    return Corrupt(path, absl::StrCat("truncated: ", size, " bytes, shorter than the ",
                                      sizeof(BinaryCorpusHeader), "-byte header"));
  }
  void* mapped = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);  // The mapping keeps the file.
  if (mapped == MAP_FAILED) {
    return absl::InternalError(absl::StrCat(path, ": cannot map: ", std::strerror(error)));
  }
  BinaryCorpusHeader header;
  std::memcpy(&header, mapped, sizeof(header));
  // Owned from here on, so every error below unmaps it.
  std::unique_ptr<const BinaryCorpus> corpus(
      new BinaryCorpus(path, static_cast<const char*>(mapped), size, header));
  absl::Status checked = CheckHeader(path, header, size, expected);
  if (!checked.ok()) return checked;
  // The ids' checksum, read with pread rather than through the mapping, so
  // that checking a corpus of gigabytes does not map all of it into this
  // process (it stays in the page cache, not in our resident memory).
  const uint64_t id_bytes = header.tokens * header.token_bytes;
  absl::StatusOr<uint32_t> crc = FileRangeCrc32c(path, sizeof(BinaryCorpusHeader), id_bytes);
  if (!crc.ok()) return crc.status();
  if (*crc != header.tokens_crc32c) {
    return Corrupt(path, absl::StrCat("the token ids (bytes ", sizeof(BinaryCorpusHeader), "..",
                                      sizeof(BinaryCorpusHeader) + id_bytes,
                                      ") do not match their checksum; run preprocess again"));
  }
  // Pairs are read in a random order: no read-ahead over the ids (the index
  // after them is read in order, to check it).
  const size_t page = sysconf(_SC_PAGESIZE);
  const size_t ids_pages = (corpus->index_ - corpus->data_) / page * page;
  if (ids_pages > 0) madvise(mapped, ids_pages, MADV_RANDOM);
  const size_t index_bytes = header.pairs * sizeof(BinaryCorpusIndexEntry);
  if (Fnv1a64(absl::string_view(corpus->index_, index_bytes)) != header.index_checksum) {
    return Corrupt(path, absl::StrCat("the index (byte ", corpus->index_ - corpus->data_,
                                      " on) does not match its checksum"));
  }
  for (int64_t i = 0; i < static_cast<int64_t>(header.pairs); ++i) {
    const BinaryCorpusIndexEntry entry = EntryAt(corpus->index_, i);
    const uint64_t length = uint64_t{entry.source_length} + entry.target_length;
    if (entry.offset > header.tokens || length > header.tokens - entry.offset) {
      return Corrupt(
          path, absl::StrCat("pair ", i, ": tokens ", entry.offset, "..", entry.offset + length,
                             " out of range (the corpus has ", header.tokens, ")"));
    }
  }
  return corpus;
}

BinaryCorpus::BinaryCorpus(std::string path, const char* data, size_t size,
                           const BinaryCorpusHeader& header)
    : path_(std::move(path)),
      data_(data),
      size_(size),
      header_(header),
      tokens_(data + sizeof(BinaryCorpusHeader)),
      index_(data + sizeof(BinaryCorpusHeader) +
             AlignedTokenBytes(header.tokens, header.token_bytes)) {}

BinaryCorpus::~BinaryCorpus() { munmap(const_cast<char*>(data_), size_); }

absl::Status BinaryCorpus::ReadSide(int64_t index, uint64_t offset, uint32_t length,
                                    std::vector<int>* ids) const {
  ids->resize(length);
  const uint32_t width = header_.token_bytes;
  const char* at = tokens_ + offset * width;
  for (uint32_t i = 0; i < length; ++i, at += width) {
    int id;
    if (width == kTokenBytesUint16) {
      uint16_t narrow;
      std::memcpy(&narrow, at, sizeof(narrow));
      id = narrow;
    } else {
      int32_t wide;
      std::memcpy(&wide, at, sizeof(wide));
      id = wide;
    }
    if (id < 0 || id >= static_cast<int>(header_.vocab_size)) {
      return Corrupt(path_, absl::StrCat("pair ", index, ": token id ", id, " at byte ", at - data_,
                                         " outside the vocabulary of ", header_.vocab_size));
    }
    (*ids)[i] = id;
  }
  return absl::OkStatus();
}

absl::Status BinaryCorpus::Read(int64_t index, Example* example) const {
  if (index < 0 || index >= size()) {
    return absl::OutOfRangeError(
        absl::StrCat(path_, ": pair ", index, " out of range (", size(), " pairs)"));
  }
  const BinaryCorpusIndexEntry entry = EntryAt(index_, index);
  if (absl::Status read = ReadSide(index, entry.offset, entry.source_length, &example->source);
      !read.ok()) {
    return read;
  }
  return ReadSide(index, entry.offset + entry.source_length, entry.target_length, &example->target);
}

}  // namespace tfm

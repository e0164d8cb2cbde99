// The file a `preprocess` command writes and training maps: a tokenized
// parallel corpus, read by index without parsing text (fairseq-preprocess's
// .bin/.idx in one file).
//
//   header (64 bytes, BinaryCorpusHeader)
//   tokens: every pair's source ids then target ids (each side ending in
//           eos), back to back, as uint16 when the vocabulary fits, else
//           int32; zero-padded to a multiple of 16 bytes
//   index:  one BinaryCorpusIndexEntry (16 bytes) per pair
//
// All integers little-endian (the only byte order we build for). The
// vocabulary checksum refuses a corpus made with another vocabulary, the
// data checksum one made from other corpora or length limits, and the index
// and token checksums a damaged index or damaged ids (an id flipped to
// another valid one would otherwise train silently), all when the file is
// opened: the token check reads the ids once, at a few GB/s.
#ifndef TFM_CORE_DATA_BINARY_CORPUS_FORMAT_H_
#define TFM_CORE_DATA_BINARY_CORPUS_FORMAT_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace tfm {

inline constexpr char kBinaryCorpusMagic[8] = {'T', 'F', 'M', 'C', 'O', 'R', 'P', '\n'};
// 2: tokens_crc32c (version 1 had no check of the ids; run preprocess again).
inline constexpr uint32_t kBinaryCorpusVersion = 2;
// Byte widths of a token id (BinaryCorpusHeader::token_bytes).
inline constexpr uint32_t kTokenBytesUint16 = 2;
inline constexpr uint32_t kTokenBytesInt32 = 4;
inline constexpr int64_t kBinaryCorpusAlignment = 16;

struct BinaryCorpusHeader {
  char magic[8];
  uint32_t version;
  uint32_t token_bytes;
  uint64_t pairs;
  uint64_t tokens;               // Token ids in the tokens section (no padding).
  uint64_t vocabulary_checksum;  // VocabularyChecksum of the tokenizer's model.
  uint32_t vocab_size;           // Every id is below it.
  uint32_t tokens_crc32c;        // CRC-32C of the ids' bytes (not the padding).
  uint64_t index_checksum;  // Fnv1a64 of the index section.
  uint64_t data_checksum;   // What the pairs were made from (the caller's choice).
};
static_assert(sizeof(BinaryCorpusHeader) == 64, "the header is 64 bytes on disk");

struct BinaryCorpusIndexEntry {
  uint64_t offset;  // In token ids from the start of the tokens section.
  uint32_t source_length;
  uint32_t target_length;
};
static_assert(sizeof(BinaryCorpusIndexEntry) == 16, "an index entry is 16 bytes on disk");

// FNV-1a, 64 bits: stable across runs and machines (absl::Hash is not).
inline uint64_t Fnv1a64(absl::string_view bytes, uint64_t hash = 14695981039346656037ull) {
  for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// The id width for a vocabulary: uint16 when every id fits.
inline uint32_t TokenBytesFor(int vocab_size) {
  return vocab_size <= 65536 ? kTokenBytesUint16 : kTokenBytesInt32;
}

inline int64_t AlignedTokenBytes(uint64_t tokens, uint32_t token_bytes) {
  const int64_t bytes = static_cast<int64_t>(tokens) * token_bytes;
  return (bytes + kBinaryCorpusAlignment - 1) / kBinaryCorpusAlignment * kBinaryCorpusAlignment;
}

}  // namespace tfm

#endif  // TFM_CORE_DATA_BINARY_CORPUS_FORMAT_H_

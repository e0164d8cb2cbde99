// Shortlist files: what the `shortlist` command learns (runtime/train/
// shortlist_learning.h) and decoding loads (--shortlist=FILE,
// decode.shortlist). Text, one record a line, so that a user can read and
// edit one:
//
//   tfm-shortlist 2
//   vocabulary_size 8000
//   vocabulary_checksum 9f86d081884c7d65   (Fnv1a64 of the SentencePiece model)
//   frequent 5 12 7 ...                    (target ids, most frequent first)
//   source 17 4051 933 12 ...              (source id 17's targets, best first)
//   ...
//   end                                    (a file without it was cut short)
//
// Format 1, without the end line, is still read.
// Lines starting with '#' are comments; a source with no line has no
// targets of its own. The checksum ties the file to the vocabulary it was
// learned with: another model's ids would mean other tokens.
#ifndef TFM_RUNTIME_DECODE_SHORTLIST_FILE_H_
#define TFM_RUNTIME_DECODE_SHORTLIST_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/data/tokenizer.h"
#include "core/vocabulary_shortlist.h"

namespace tfm {

struct ShortlistTable {
  int64_t vocabulary_size = 0;
  uint64_t vocabulary_checksum = 0;
  std::vector<int32_t> frequent;            // Most frequent first.
  std::vector<std::vector<int32_t>> best;   // [vocabulary_size]: best first.
  std::vector<std::string> comments;        // Written as "# ..." lines.
};

// Writes `table` to `path` atomically.
absl::Status WriteShortlistFile(const std::string& path, const ShortlistTable& table);

// Reads a shortlist file. Errors name the path and line and say what is
// wrong (not a shortlist, a bad or out-of-range id, a repeated source, a
// missing header line, a truncated file).
absl::StatusOr<ShortlistTable> ReadShortlistFile(const std::string& path);

// What ties a shortlist to a vocabulary: Fnv1a64 of its SentencePiece
// model (vocabulary_checksum).
uint64_t VocabularyChecksum(const Tokenizer& tokenizer);

// The shortlist decoding uses: `path` read, checked against the model's
// vocabulary (its size and SentencePiece checksum: a mismatch is an error
// naming the file), each list cut to `frequent_count` and `best_count`.
absl::StatusOr<VocabularyShortlist> LoadShortlist(const std::string& path,
                                                  int64_t vocabulary_size,
                                                  uint64_t vocabulary_checksum,
                                                  int frequent_count, int best_count);
// The same for the model whose vocabulary is `tokenizer`'s.
absl::StatusOr<VocabularyShortlist> LoadShortlist(const std::string& path,
                                                  const Tokenizer& tokenizer, int frequent_count,
                                                  int best_count);

}  // namespace tfm

#endif  // TFM_RUNTIME_DECODE_SHORTLIST_FILE_H_

// WMT_SGML corpora: the WMT test sets (newstest2013/2014), a source and a
// reference file of <doc docid="..."> elements holding one
// <seg id="N">text</seg> per line, text with SGML entities (&amp; &#39;).
#ifndef TFM_CORE_DATA_WMT_SGML_READER_H_
#define TFM_CORE_DATA_WMT_SGML_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/data/line_reader.h"
#include "core/data/pair_reader.h"
#include "core/data/sentence_checks.h"

namespace tfm {

inline constexpr char kSkipMalformedSeg[] = "malformed seg";

// Replaces the named entities amp, lt, gt, quot, apos and numeric ones
// (&#233; &#xE9;) by their characters; anything else stays as written.
std::string DecodeSgmlEntities(absl::string_view text);

// One <seg> of an SGML file.
struct SgmlSegment {
  std::string doc_id;
  std::string seg_id;
  std::string text;       // Entities decoded.
  bool malformed = false;  // No closing </seg> on its line.
  bool too_long = false;
  int64_t line = 0;
};

// Streams the segments of one SGML file; lines without <seg> are read for
// their docid or ignored.
class SgmlSegmentReader {
 public:
  static absl::StatusOr<std::unique_ptr<SgmlSegmentReader>> Open(const std::string& path,
                                                                 int64_t max_line_bytes);
  absl::StatusOr<bool> Next(SgmlSegment* segment);
  const std::string& path() const { return lines_->path(); }

 private:
  explicit SgmlSegmentReader(std::unique_ptr<LineReader> lines) : lines_(std::move(lines)) {}

  std::unique_ptr<LineReader> lines_;
  std::string doc_id_;
};

// Pairs the segments of a source and a reference file. Both must hold the
// same documents and segment ids in the same order, else an error names both
// files and the first mismatch (or both segment counts).
class WmtSgmlReader : public PairReader {
 public:
  static absl::StatusOr<std::unique_ptr<WmtSgmlReader>> Open(
      const std::string& source_path, const std::string& target_path,
      int64_t max_sentence_bytes = kDefaultMaxSentenceBytes);

  absl::StatusOr<bool> Next(SentencePair* pair) override;
  const SkipReport& skips() const override { return skips_; }
  // The source file and the line of the segment's <seg>.
  std::string Where() const override;

 private:
  WmtSgmlReader(std::unique_ptr<SgmlSegmentReader> source,
                std::unique_ptr<SgmlSegmentReader> target, int64_t max_bytes)
      : source_(std::move(source)), target_(std::move(target)), max_bytes_(max_bytes) {}

  std::unique_ptr<SgmlSegmentReader> source_;
  std::unique_ptr<SgmlSegmentReader> target_;
  int64_t max_bytes_;
  int64_t segments_ = 0;
  int64_t line_ = 0;  // Of the last segment read.
  SkipReport skips_;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_WMT_SGML_READER_H_

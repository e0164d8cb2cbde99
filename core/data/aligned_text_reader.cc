#include "core/data/aligned_text_reader.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tfm {

absl::StatusOr<std::unique_ptr<AlignedTextReader>> AlignedTextReader::Open(
    const std::string& source_path, const std::string& target_path,
    int64_t max_sentence_bytes) {
  TFM_ASSIGN_OR_RETURN(auto source, LineReader::Open(source_path, max_sentence_bytes));
  TFM_ASSIGN_OR_RETURN(auto target, LineReader::Open(target_path, max_sentence_bytes));
  return std::unique_ptr<AlignedTextReader>(
      new AlignedTextReader(std::move(source), std::move(target)));
}

absl::StatusOr<int64_t> AlignedTextReader::CountToEnd(LineReader* reader) {
  std::string line;
  bool too_long;
  while (true) {
    TFM_ASSIGN_OR_RETURN(const bool more, reader->Next(&line, &too_long));
    if (!more) return reader->line_number();
  }
}

std::string AlignedTextReader::Where() const {
  return absl::StrCat(source_->path(), ":", source_->line_number());
}

absl::StatusOr<bool> AlignedTextReader::Next(SentencePair* pair) {
  while (true) {
    bool source_too_long, target_too_long;
    TFM_ASSIGN_OR_RETURN(const bool has_source, source_->Next(&pair->source, &source_too_long));
    TFM_ASSIGN_OR_RETURN(const bool has_target, target_->Next(&pair->target, &target_too_long));
    if (!has_source && !has_target) return false;
    if (has_source != has_target) {
      TFM_ASSIGN_OR_RETURN(const int64_t source_lines, CountToEnd(source_.get()));
      TFM_ASSIGN_OR_RETURN(const int64_t target_lines, CountToEnd(target_.get()));
      return absl::FailedPreconditionError(absl::StrCat(
          "source and target are not aligned: ", source_->path(), " has ", source_lines,
          " lines, ", target_->path(), " has ", target_lines, " lines"));
    }
    const char* reason =
        PairRejection(pair->source, source_too_long, pair->target, target_too_long);
    if (reason == nullptr) return true;
    skips_.Skip(reason, Where());
  }
}

}  // namespace tfm

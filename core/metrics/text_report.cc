#include "core/metrics/text_report.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/metrics/text_lines.h"
#include "core/status_macros.h"

namespace tfm {

absl::StatusOr<FileScores> ScoreFiles(const std::string& hypothesis_path,
                                      const std::vector<std::string>& reference_paths,
                                      bool with_chrf) {
  if (reference_paths.empty()) return absl::InvalidArgumentError("no reference file given");
  TFM_ASSIGN_OR_RETURN(std::vector<std::string> hypotheses, ReadStrippedTextLines(hypothesis_path));
  std::vector<std::vector<std::string>> references;
  for (const std::string& path : reference_paths) {
    TFM_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadStrippedTextLines(path));
    if (lines.size() != hypotheses.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line counts differ: hypothesis file '", hypothesis_path, "' has ", hypotheses.size(),
          " lines, reference file '", path, "' has ", lines.size()));
    }
    references.push_back(std::move(lines));
  }
  if (hypotheses.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("hypothesis file '", hypothesis_path, "' has no lines"));
  }
  FileScores scores;
  scores.num_refs = static_cast<int>(references.size());
  TFM_ASSIGN_OR_RETURN(scores.bleu, CorpusBleu(hypotheses, references));
  if (with_chrf) {
    TFM_ASSIGN_OR_RETURN(scores.chrf, CorpusChrf(hypotheses, references));
    scores.has_chrf = true;
  }
  return scores;
}

std::string FileScores::Format() const {
  std::string text = absl::StrCat(bleu.Format(), "\n", "BLEU details: correct ",
                                  absl::StrJoin(bleu.correct, "/"), " total ",
                                  absl::StrJoin(bleu.total, "/"), "\n",
                                  "BLEU signature: ", BleuSignature(num_refs), "\n");
  if (has_chrf) {
    absl::StrAppend(&text, chrf.Format(), "\n", "chrF signature: ", ChrfSignature(num_refs),
                    "\n");
  }
  return text;
}

}  // namespace tfm

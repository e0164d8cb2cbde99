// Streams Penn Treebank trees from .mrg files (or files with one tree per
// line) without ever failing on a malformed tree: bad trees are skipped and
// counted by reason in a SkipReport ("unbalanced brackets", "text outside
// brackets", "malformed tree", "empty tree").
#ifndef TFM_TASKS_PARSING_PTB_READER_H_
#define TFM_TASKS_PARSING_PTB_READER_H_

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/data/skip_report.h"
#include "tasks/parsing/tree.h"

namespace tfm {

// The text of one top-level bracketed tree (line breaks turned into spaces)
// and where it starts, "path:line".
struct TreeText {
  std::string text;
  std::string where;
};

class PtbReader {
 public:
  // Fails with NotFound naming the first path that cannot be opened, before
  // anything is read.
  static absl::StatusOr<std::unique_ptr<PtbReader>> Open(std::vector<std::string> paths);

  // The next tree's text with balanced brackets, or false at the end. A tree
  // whose brackets do not balance is skipped: in .mrg files every tree
  // starts with '(' in the first column and continuation lines are
  // indented, so such a line ends a tree that lacks ')'.
  bool NextText(TreeText* text);

  // The next well-formed tree, cleaned with NormalizePtbTree, or false at
  // the end.
  bool Next(Tree* tree);
  // Where the tree Next last returned starts, "path:line".
  const std::string& where() const { return where_; }

  const SkipReport& skips() const { return skips_; }

  // Non-OK when a file became unreadable part-way (the reader then stops).
  const absl::Status& status() const { return status_; }

 private:
  explicit PtbReader(std::vector<std::string> paths) : paths_(std::move(paths)) {}

  // Loads the next line into line_, moving on to the next file as needed.
  bool NextLine();

  std::vector<std::string> paths_;
  size_t file_index_ = 0;
  std::ifstream file_;
  bool file_open_ = false;
  int line_number_ = 0;
  std::string line_;
  size_t pos_ = 0;  // Next unread character of line_.
  bool have_line_ = false;
  std::string where_;  // Of the last tree Next returned.
  SkipReport skips_;
  absl::Status status_;
};

// The .mrg files of WSJ sections `first`..`last` (inclusive) under `wsj_root`
// laid out as the treebank ships them: wsj_root/SS/wsj_SSNN.mrg, sorted.
// A missing section folder is NotFound naming it.
absl::StatusOr<std::vector<std::string>> WsjSectionFiles(const std::string& wsj_root, int first,
                                                          int last);

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_PTB_READER_H_

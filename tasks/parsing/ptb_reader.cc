#include "tasks/parsing/ptb_reader.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tfm {

absl::StatusOr<std::unique_ptr<PtbReader>> PtbReader::Open(std::vector<std::string> paths) {
  for (const std::string& path : paths) {
    std::ifstream probe(path);
    if (!probe) return absl::NotFoundError(absl::StrCat("cannot open treebank file '", path, "'"));
  }
  return std::unique_ptr<PtbReader>(new PtbReader(std::move(paths)));
}

bool PtbReader::NextLine() {
  while (true) {
    if (!file_open_) {
      if (file_index_ >= paths_.size()) return false;
      file_.open(paths_[file_index_]);
      if (!file_) {
        status_ = absl::NotFoundError(
            absl::StrCat("cannot open treebank file '", paths_[file_index_], "'"));
        file_index_ = paths_.size();
        return false;
      }
      file_open_ = true;
      line_number_ = 0;
    }
    if (std::getline(file_, line_)) {
      ++line_number_;
      pos_ = 0;
      return true;
    }
    if (file_.bad()) {
      status_ = absl::DataLossError(absl::StrCat("error reading '", paths_[file_index_], "'"));
      file_index_ = paths_.size();
      return false;
    }
    file_.close();
    file_.clear();
    file_open_ = false;
    ++file_index_;
  }
}

bool PtbReader::NextText(TreeText* out) {
  std::string text;
  std::string where;
  int depth = 0;
  while (true) {
    if (!have_line_ || pos_ >= line_.size()) {
      const size_t file_before = file_index_;
      have_line_ = NextLine();
      // A tree cannot continue into the next file.
      if (depth > 0 && (!have_line_ || file_index_ != file_before)) {
        skips_.Skip("unbalanced brackets", where);
        depth = 0;
        text.clear();
      }
      if (!have_line_) return false;
      if (depth > 0 && !line_.empty() && line_[0] == '(') {
        skips_.Skip("unbalanced brackets", where);
        depth = 0;
        text.clear();
      }
      if (depth > 0) text.push_back(' ');
    }
    if (depth == 0) {
      while (pos_ < line_.size() && std::isspace(static_cast<unsigned char>(line_[pos_]))) ++pos_;
      if (pos_ >= line_.size()) continue;
      const std::string here = absl::StrCat(paths_[file_index_], ":", line_number_);
      if (line_[pos_] == ')') {
        skips_.Skip("unbalanced brackets", here);
        ++pos_;
        continue;
      }
      if (line_[pos_] != '(') {
        // Skip up to the next bracket on this line.
        skips_.Skip("text outside brackets", here);
        while (pos_ < line_.size() && line_[pos_] != '(' && line_[pos_] != ')') ++pos_;
        continue;
      }
      where = here;
    }
    while (pos_ < line_.size()) {
      const char c = line_[pos_++];
      text.push_back(c);
      if (c == '(') {
        ++depth;
      } else if (c == ')' && --depth == 0) {
        out->text = std::move(text);
        out->where = std::move(where);
        return true;
      }
    }
  }
}

bool PtbReader::Next(Tree* tree) {
  TreeText text;
  while (NextText(&text)) {
    absl::StatusOr<Tree> parsed = ParseBracketedTree(text.text);
    if (!parsed.ok()) {
      skips_.Skip("malformed tree", text.where);
      continue;
    }
    absl::StatusOr<Tree> normalized = NormalizePtbTree(*std::move(parsed));
    if (!normalized.ok()) {
      skips_.Skip("empty tree", text.where);
      continue;
    }
    *tree = *std::move(normalized);
    where_ = std::move(text.where);
    return true;
  }
  return false;
}

absl::StatusOr<std::vector<std::string>> WsjSectionFiles(const std::string& wsj_root, int first,
                                                          int last) {
  std::vector<std::string> files;
  for (int section = first; section <= last; ++section) {
    const std::string name = absl::StrFormat("%02d", section);
    const std::filesystem::path folder = std::filesystem::path(wsj_root) / name;
    std::error_code error;
    std::filesystem::directory_iterator it(folder, error);
    if (error) {
      return absl::NotFoundError(
          absl::StrCat("cannot read WSJ section folder '", folder.string(), "'"));
    }
    std::vector<std::string> section_files;
    for (const std::filesystem::directory_entry& entry : it) {
      const std::string file = entry.path().filename().string();
      if (absl::StartsWith(file, absl::StrCat("wsj_", name)) && absl::EndsWith(file, ".mrg")) {
        section_files.push_back(entry.path().string());
      }
    }
    std::sort(section_files.begin(), section_files.end());
    files.insert(files.end(), section_files.begin(), section_files.end());
  }
  return files;
}

}  // namespace tfm

#include "tasks/parsing/ptb_corpus.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/data/corpus_format_registry.h"
#include "core/paths.h"
#include "core/status_macros.h"
#include "tasks/parsing/linearize.h"
#include "tasks/parsing/ptb_reader.h"

namespace tfm {
namespace {

// The document number of "wsj_NNNN.mrg", or -1.
int DocumentNumber(const std::string& name) {
  constexpr char kPrefix[] = "wsj_", kSuffix[] = ".mrg";
  if (name.size() != 12 || name.compare(0, 4, kPrefix) != 0 || name.compare(8, 4, kSuffix) != 0) {
    return -1;
  }
  int number = 0;
  for (size_t i = 4; i < 8; ++i) {
    if (!absl::ascii_isdigit(name[i])) return -1;
    number = number * 10 + (name[i] - '0');
  }
  return number;
}

class PtbCorpusReader : public PairReader {
 public:
  PtbCorpusReader(std::unique_ptr<PtbReader> trees, LeafStyle leaves, int subtree_min_words)
      : trees_(std::move(trees)), leaves_(leaves), subtree_min_words_(subtree_min_words) {}

  absl::StatusOr<bool> Next(SentencePair* pair) override {
    if (next_subtree_ < subtrees_.size()) {
      *pair = std::move(subtrees_[next_subtree_++]);
      return true;
    }
    Tree tree;
    if (!trees_->Next(&tree)) {
      TFM_RETURN_IF_ERROR(trees_->status());
      return false;
    }
    *pair = MakePair(tree);
    subtrees_.clear();
    next_subtree_ = 0;
    if (subtree_min_words_ > 0) {
      for (const Tree& child : tree.children) AddSubtrees(child);
    }
    return true;
  }

  const SkipReport& skips() const override { return trees_->skips(); }
  // The tree's start; its subtrees' pairs say so.
  std::string Where() const override {
    return next_subtree_ == 0 ? trees_->where() : absl::StrCat(trees_->where(), " (a subtree)");
  }

 private:
  SentencePair MakePair(const Tree& tree) const {
    SentencePair pair;
    pair.source = absl::StrJoin(TreeWords(tree), " ");
    pair.target = absl::StrJoin(Linearize(tree, leaves_), " ");
    return pair;
  }

  // `tree` and its constituents, in preorder; returns its word count.
  // Part-of-speech leaves are words, not constituents.
  int AddSubtrees(const Tree& tree) {
    if (tree.is_leaf()) return 1;
    const size_t slot = subtrees_.size();
    subtrees_.emplace_back();
    int words = 0;
    for (const Tree& child : tree.children) words += AddSubtrees(child);
    if (words >= subtree_min_words_) {
      subtrees_[slot] = MakePair(tree);
    } else {
      // Too short, and so is everything under it.
      subtrees_.resize(slot);
    }
    return words;
  }

  std::unique_ptr<PtbReader> trees_;
  LeafStyle leaves_;
  int subtree_min_words_;
  std::vector<SentencePair> subtrees_;  // Of the last tree, not yet returned.
  size_t next_subtree_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<std::string>> PtbCorpusFiles(const config::CorpusConfig& corpus,
                                                        const std::string& root) {
  const std::string name = corpus.has_name() ? corpus.name() : "(unnamed)";
  std::vector<std::pair<int, std::string>> found;
  std::error_code error;
  // The root itself, then its section folders.
  std::vector<std::filesystem::path> folders = {root};
  for (std::filesystem::directory_iterator it(root, error), end; !error && it != end;
       it.increment(error)) {
    const std::string folder = it->path().filename().string();
    if (folder.size() == 2 && absl::ascii_isdigit(folder[0]) && absl::ascii_isdigit(folder[1]) &&
        it->is_directory()) {
      folders.push_back(it->path());
    }
  }
  if (error) {
    return absl::NotFoundError(
        absl::StrCat("corpus ", name, ": cannot read treebank directory '", root, "'"));
  }
  for (const std::filesystem::path& folder : folders) {
    for (std::filesystem::directory_iterator it(folder, error), end; !error && it != end;
         it.increment(error)) {
      const int number = DocumentNumber(it->path().filename().string());
      if (number >= corpus.first_document() && number <= corpus.last_document()) {
        found.emplace_back(number, it->path().string());
      }
    }
  }
  if (found.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "corpus ", name, ": no wsj_NNNN.mrg files with NNNN in ", corpus.first_document(), "..",
        corpus.last_document(), " under '", root, "' or its section folders"));
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> files;
  for (auto& [number, path] : found) files.push_back(std::move(path));
  return files;
}

LeafStyle TreeLeafStyle(config::CorpusConfig::TreeLeaves leaves) {
  switch (leaves) {
    case config::CorpusConfig::WORDS:
      return LeafStyle::kWord;
    case config::CorpusConfig::INDEXED:
      return LeafStyle::kIndexed;
    case config::CorpusConfig::POS_TAGS:
      return LeafStyle::kPosTag;
    default:
      return LeafStyle::kPlaceholder;
  }
}

LeafStyle ConfigLeafStyle(const config::TaskConfig& config) {
  const config::DataConfig& data = config.data();
  return data.train().empty() ? LeafStyle::kPlaceholder
                              : TreeLeafStyle(data.train(0).tree_leaves());
}

absl::StatusOr<std::unique_ptr<PairReader>> OpenPtbCorpus(std::vector<std::string> files,
                                                          LeafStyle leaves,
                                                          int subtree_min_words) {
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<PtbReader> trees, PtbReader::Open(std::move(files)));
  return std::unique_ptr<PairReader>(
      std::make_unique<PtbCorpusReader>(std::move(trees), leaves, subtree_min_words));
}

absl::StatusOr<std::string> DescribePtbCorpus(const config::CorpusConfig& corpus) {
  const std::string root = ResolveDataPath(corpus.root());
  TFM_ASSIGN_OR_RETURN(const std::vector<std::string> files, PtbCorpusFiles(corpus, root));
  std::string found = absl::StrCat(files.size(), " documents (",
                                   std::filesystem::path(files.front()).filename().string(), " .. ",
                                   std::filesystem::path(files.back()).filename().string(),
                                   ") under ", root);
  // An explicit range that is not all there: a partial copy of the treebank
  // would otherwise train on what it holds without a word.
  const int64_t asked = int64_t{corpus.last_document()} - corpus.first_document() + 1;
  if (corpus.has_last_document() && static_cast<int64_t>(files.size()) < asked) {
    std::vector<bool> present(asked, false);
    for (const std::string& file : files) {
      present[DocumentNumber(std::filesystem::path(file).filename().string()) -
              corpus.first_document()] = true;
    }
    const int64_t first_missing = corpus.first_document() +
                                  (std::find(present.begin(), present.end(), false) -
                                   present.begin());
    absl::StrAppend(&found, "; warning: ", asked - static_cast<int64_t>(files.size()), " of the ",
                    asked, " documents ", corpus.first_document(), "..", corpus.last_document(),
                    " are missing (the first: wsj_", absl::Dec(first_missing, absl::kZeroPad4),
                    ".mrg)");
  }
  return found;
}

namespace {

// The parsing task's corpus format: OpenCorpus reads treebanks through it.
TFM_REGISTER_CORPUS_FORMAT(CorpusFormatDef{
    .name = "PTB_MRG",
    .doc = "Penn Treebank .mrg files: (words, linearised tree) pairs for parsing",
    .open = [](const config::CorpusConfig& corpus, int64_t /*max_sentence_bytes*/)
        -> absl::StatusOr<std::unique_ptr<PairReader>> {
      if (corpus.root().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("corpus ", corpus.has_name() ? corpus.name() : "(unnamed)",
                         ": root (the treebank directory) is required"));
      }
      TFM_ASSIGN_OR_RETURN(std::vector<std::string> files,
                           PtbCorpusFiles(corpus, ResolveDataPath(corpus.root())));
      return OpenPtbCorpus(std::move(files), TreeLeafStyle(corpus.tree_leaves()),
                           corpus.subtree_min_words());
    },
    .check = DescribePtbCorpus,
});

}  // namespace
}  // namespace tfm

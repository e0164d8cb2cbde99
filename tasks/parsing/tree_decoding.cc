#include "tasks/parsing/tree_decoding.h"

#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/data/linearize.h"
#include "core/data/tree.h"
#include "core/decode/tree_constraint.h"
#include "core/status_macros.h"

namespace tfm {

std::vector<std::string> InputWords(const std::string& line) {
  std::vector<std::string> words = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  for (std::string& word : words) {
    word = absl::StrReplaceAll(word, {{"(", "-LRB-"}, {")", "-RRB-"}});
  }
  return words;
}

std::string TreeLine(const std::string& line, const std::string& linearised) {
  const std::vector<std::string> tokens =
      absl::StrSplit(linearised, ' ', absl::SkipEmpty());
  return FormatTree(Delinearize(tokens, InputWords(line)));
}

absl::StatusOr<std::unique_ptr<DecodingConstraint>> MakeTreeConstraint(const Tokenizer& tokenizer) {
  std::vector<std::string> pieces(tokenizer.vocab_size());
  for (int id = 0; id < tokenizer.vocab_size(); ++id) pieces[id] = tokenizer.IdToPiece(id);
  TFM_ASSIGN_OR_RETURN(
      std::unique_ptr<TreeConstraint> constraint,
      TreeConstraint::Create(pieces, tokenizer.eos_id(),
                             {tokenizer.pad_id(), tokenizer.unk_id(), tokenizer.bos_id()}));
  return std::unique_ptr<DecodingConstraint>(std::move(constraint));
}

DecodingHooks TreeDecodingHooks() {
  DecodingHooks hooks;
  hooks.constraint = MakeTreeConstraint;
  hooks.format = TreeLine;
  return hooks;
}

}  // namespace tfm

#include "core/data/tokenizing_reader.h"

#include "core/status_macros.h"

namespace tfm {

MakeExample TokenizeWithEos(const Tokenizer& tokenizer) {
  return [&tokenizer](const SentencePair& pair) {
    Example example{tokenizer.Encode(pair.source), tokenizer.Encode(pair.target)};
    example.source.push_back(tokenizer.eos_id());
    example.target.push_back(tokenizer.eos_id());
    return example;
  };
}

absl::Status TokenizingReader::Skip(int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    TFM_ASSIGN_OR_RETURN(const bool more, pairs_->Next(&pair_));
    if (!more) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> TokenizingReader::Next(Example* example) {
  TFM_ASSIGN_OR_RETURN(const bool more, pairs_->Next(&pair_));
  if (more) *example = make_(pair_);
  return more;
}

}  // namespace tfm

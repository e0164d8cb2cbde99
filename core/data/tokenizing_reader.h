// An ExampleReader over a text corpus: each pair is tokenized as it is read.
#ifndef TFM_CORE_DATA_TOKENIZING_READER_H_
#define TFM_CORE_DATA_TOKENIZING_READER_H_

#include <functional>
#include <memory>

#include "core/data/example_reader.h"
#include "core/data/pair_reader.h"
#include "core/data/tokenizer.h"

namespace tfm {

// Turns a pair into token ids (each side ending in eos).
using MakeExample = std::function<Example(const SentencePair&)>;

// The tokenizer's encoding with eos appended to both sides; `tokenizer`
// must outlive the function.
MakeExample TokenizeWithEos(const Tokenizer& tokenizer);

class TokenizingReader : public ExampleReader {
 public:
  TokenizingReader(std::unique_ptr<PairReader> pairs, MakeExample make)
      : pairs_(std::move(pairs)), make_(std::move(make)) {}

  // Reads the skipped pairs (a text corpus has no index) but does not
  // tokenize them.
  absl::Status Skip(int64_t count) override;
  absl::StatusOr<bool> Next(Example* example) override;
  SkipReport skips() const override { return pairs_->skips(); }
  std::string Where() const override { return pairs_->Where(); }

 private:
  std::unique_ptr<PairReader> pairs_;
  MakeExample make_;
  SentencePair pair_;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_TOKENIZING_READER_H_

#include "core/data/tokenizer.h"

#include <limits>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/data/file_io.h"
#include "core/data/line_reader.h"
#include "core/data/sentence_checks.h"
#include "core/data/sentencepiece_loader.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::StatusOr<spm::TrainOptions> OptionsFromConfig(const config::TokenizerConfig& config) {
  if (config.vocab_size() < 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokenizer vocab_size must be at least 8, got ", config.vocab_size()));
  }
  spm::TrainOptions options;
  options.unigram = config.model_type() == config::TokenizerConfig::UNIGRAM;
  options.vocab_size = config.vocab_size();
  options.character_coverage = config.character_coverage();
  options.pad_id = config.pad_id();
  options.unk_id = config.unk_id();
  options.bos_id = config.bos_id();
  options.eos_id = config.eos_id();
  // SentencePiece takes a 32-bit seed and reserves 0xFFFFFFFF ("seed from
  // std::random_device"): fold the 64-bit config seed and avoid that value.
  uint32_t seed = static_cast<uint32_t>(config.seed() ^ (config.seed() >> 32));
  if (seed == std::numeric_limits<uint32_t>::max()) seed = 0;
  options.seed = seed;
  options.input_sentence_size = config.input_sentence_size();
  return options;
}

}  // namespace

absl::StatusOr<Tokenizer> Tokenizer::Train(const config::TokenizerConfig& config,
                                           const SentenceSource& next) {
  TFM_ASSIGN_OR_RETURN(const spm::TrainOptions options, OptionsFromConfig(config));
  TFM_ASSIGN_OR_RETURN(const spm::Api* api, LoadSentencePiece());
  // The backend's source cannot fail; a read error ends the input early and
  // is reported here after training.
  absl::Status read_status;
  int64_t sentences = 0;
  const spm::SentenceSource source = [&](std::string* sentence) {
    if (!read_status.ok()) return false;
    absl::StatusOr<bool> more = next(sentence);
    if (!more.ok()) read_status = more.status();
    if (more.ok() && *more) ++sentences;
    return more.ok() && *more;
  };
  std::string model;
  const std::string error = api->train(options, source, &model);
  TFM_RETURN_IF_ERROR(read_status);
  // SentencePiece's own message for this is an assertion in its sources.
  if (sentences == 0) {
    return absl::InvalidArgumentError("no sentence to train the vocabulary on");
  }
  if (!error.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("SentencePiece training failed: ", error));
  }
  return FromModel(std::move(model));
}

absl::StatusOr<Tokenizer> Tokenizer::TrainOnFiles(const config::TokenizerConfig& config,
                                                  const std::vector<std::string>& paths) {
  std::vector<std::unique_ptr<LineReader>> readers;
  for (const std::string& path : paths) {
    TFM_ASSIGN_OR_RETURN(auto reader, LineReader::Open(path, kDefaultMaxSentenceBytes));
    readers.push_back(std::move(reader));
  }
  size_t current = 0;
  return Train(config, [&](std::string* sentence) -> absl::StatusOr<bool> {
    while (current < readers.size()) {
      bool too_long;
      TFM_ASSIGN_OR_RETURN(const bool more, readers[current]->Next(sentence, &too_long));
      if (!more) {
        ++current;
        continue;
      }
      if (SentenceRejection(*sentence, too_long) == nullptr) return true;
    }
    return false;
  });
}

absl::StatusOr<Tokenizer> Tokenizer::TrainOnPairs(const config::TokenizerConfig& config,
                                                  PairReader* reader) {
  SentencePair pair;
  bool target_pending = false;
  return Train(config, [&](std::string* sentence) -> absl::StatusOr<bool> {
    if (target_pending) {
      target_pending = false;
      *sentence = std::move(pair.target);
      return true;
    }
    TFM_ASSIGN_OR_RETURN(const bool more, reader->Next(&pair));
    if (!more) return false;
    target_pending = true;
    *sentence = std::move(pair.source);
    return true;
  });
}

Tokenizer::Tokenizer(const spm::Api* api, std::string model, std::shared_ptr<void> processor)
    : api_(api),
      model_(std::move(model)),
      processor_(std::move(processor)),
      vocab_size_(api->piece_size(processor_.get())),
      special_ids_(api->special_ids(processor_.get())) {}

absl::StatusOr<Tokenizer> Tokenizer::FromModel(std::string model) {
  TFM_ASSIGN_OR_RETURN(const spm::Api* api, LoadSentencePiece());
  std::shared_ptr<void> processor(api->new_processor(), api->delete_processor);
  const std::string error = api->load(processor.get(), model);
  if (!error.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("not a SentencePiece model: ", error));
  }
  return Tokenizer(api, std::move(model), std::move(processor));
}

absl::StatusOr<Tokenizer> Tokenizer::Load(const std::string& path) {
  TFM_ASSIGN_OR_RETURN(std::string model, ReadFileToString(path));
  absl::StatusOr<Tokenizer> tokenizer = FromModel(std::move(model));
  if (!tokenizer.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", tokenizer.status().message()));
  }
  return tokenizer;
}

absl::Status Tokenizer::Save(const std::string& path) const {
  return WriteFileAtomically(path, model_);
}

std::vector<int> Tokenizer::Encode(absl::string_view text) const {
  std::vector<int> ids;
  api_->encode(processor_.get(), std::string(text), &ids);
  return ids;
}

std::string Tokenizer::IdToPiece(int id) const {
  std::string piece;
  api_->id_to_piece(processor_.get(), id, &piece);
  return piece;
}

absl::StatusOr<std::string> Tokenizer::Decode(absl::Span<const int> ids) const {
  const int size = vocab_size();
  for (int id : ids) {
    if (id < 0 || id >= size) {
      return absl::InvalidArgumentError(
          absl::StrCat("token id ", id, " is outside the vocabulary of ", size));
    }
  }
  std::string text;
  api_->decode(processor_.get(), std::vector<int>(ids.begin(), ids.end()), &text);
  return text;
}

}  // namespace tfm

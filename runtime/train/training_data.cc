#include "runtime/train/training_data.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/data/corpus.h"
#include "core/data/file_io.h"
#include "core/data/tokenizing_reader.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"

namespace tfm {
namespace {

// Pairs read and tokenized at a time by ForEachTokenizedTrainingPair.
constexpr int64_t kTokenizedChunk = 8192;

// Reads several corpora back to back.
class ConcatenatedCorpora : public PairReader {
 public:
  ConcatenatedCorpora(std::vector<config::CorpusConfig> corpora, std::string field)
      : corpora_(std::move(corpora)), field_(std::move(field)) {}

  absl::StatusOr<bool> Next(SentencePair* pair) override {
    while (true) {
      if (current_ == nullptr) {
        if (next_ == corpora_.size()) return false;
        absl::StatusOr<std::unique_ptr<PairReader>> opened = OpenCorpus(corpora_[next_]);
        if (!opened.ok()) {
          return absl::Status(opened.status().code(),
                              absl::StrCat(field_, "[", next_, "]: ", opened.status().message()));
        }
        current_ = std::move(*opened);
        ++next_;
      }
      TFM_ASSIGN_OR_RETURN(const bool more, current_->Next(pair));
      if (more) return true;
      skips_.Merge(current_->skips());
      current_.reset();
    }
  }

  const SkipReport& skips() const override { return skips_; }
  std::string Where() const override {
    return current_ != nullptr ? current_->Where() : std::string();
  }

 private:
  std::vector<config::CorpusConfig> corpora_;
  std::string field_;
  size_t next_ = 0;
  std::unique_ptr<PairReader> current_;
  SkipReport skips_;
};

bool Exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PairReader>> OpenCorpora(
    const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora,
    const std::string& field) {
  if (corpora.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": no corpus"));
  return std::unique_ptr<PairReader>(new ConcatenatedCorpora(
      std::vector<config::CorpusConfig>(corpora.begin(), corpora.end()), field));
}

absl::Status ReadCorpusPairs(
    const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora,
    const std::string& field, int limit, std::vector<std::string>* sources,
    std::vector<std::string>* targets) {
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<PairReader> reader, OpenCorpora(corpora, field));
  SentencePair pair;
  for (int read = 0; read < limit; ++read) {
    TFM_ASSIGN_OR_RETURN(const bool more, reader->Next(&pair));
    if (!more) break;
    sources->push_back(std::move(pair.source));
    targets->push_back(std::move(pair.target));
  }
  return absl::OkStatus();
}

namespace {

// "a.en, b.en" for messages: each corpus by its source file (a treebank by
// its root).
std::string CorpusNames(const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora) {
  std::vector<std::string> names;
  for (const config::CorpusConfig& corpus : corpora) {
    names.push_back(!corpus.source_path().empty() ? corpus.source_path() : corpus.root());
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::StatusOr<Tokenizer> LoadOrTrainTokenizer(const config::DataConfig& data,
                                               const std::string& work_dir, std::ostream* log) {
  const std::string path = absl::StrCat(work_dir, "/", data.tokenizer().model_path());
  if (Exists(path)) {
    absl::StatusOr<Tokenizer> loaded = Tokenizer::Load(path);
    if (!loaded.ok()) {
      return absl::Status(loaded.status().code(),
                          absl::StrCat(path, ": ", loaded.status().message()));
    }
    if (log) *log << "tokenizer: " << path << " (" << loaded->vocab_size() << " pieces)\n";
    return loaded;
  }
  TFM_RETURN_IF_ERROR(MakeDirectories(path.substr(0, path.rfind('/'))));
  // Whole sentences only: subtrees repeat their words, and a vocabulary that
  // does not depend on them lets models trained with and without them be
  // ensembled.
  google::protobuf::RepeatedPtrField<config::CorpusConfig> corpora = data.train();
  for (config::CorpusConfig& corpus : corpora) corpus.clear_subtree_min_words();
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<PairReader> reader, OpenCorpora(corpora, "data.train"));
  if (log)
    *log << "tokenizer: training " << data.tokenizer().vocab_size() << " pieces on "
         << "data.train\n"
         << std::flush;
  absl::StatusOr<Tokenizer> trained = Tokenizer::TrainOnPairs(data.tokenizer(), reader.get());
  if (!trained.ok()) {
    // SentencePiece's messages name neither the corpus nor the setting.
    return absl::Status(
        trained.status().code(),
        absl::StrCat("tokenizer: training data.tokenizer.vocab_size = ",
                     data.tokenizer().vocab_size(), " pieces on data.train (",
                     CorpusNames(corpora), "): ", trained.status().message(),
                     reader->skips().total() > 0 ? absl::StrCat(" (", reader->skips().Summary(), ")")
                                                 : ""));
  }
  Tokenizer tokenizer = *std::move(trained);
  // This pass reads the whole corpus before training: the place to say which
  // pairs every epoch will leave out (invalid UTF-8, over-long or empty
  // lines, malformed trees), with where the first ones are, as preprocess
  // does.
  if (log && reader->skips().total() > 0) {
    *log << "data.train: " << reader->skips().Summary() << "\n";
  }
  TFM_RETURN_IF_ERROR(tokenizer.Save(path));
  if (log) *log << "tokenizer: saved " << path << " (" << tokenizer.vocab_size() << " pieces)\n";
  return tokenizer;
}

std::unique_ptr<TokenBatcher> MakeTrainingBatcher(const config::DataConfig& data,
                                                  const Tokenizer& tokenizer) {
  const auto corpora = data.train();
  return std::make_unique<TokenBatcher>(
      data.batching(), [corpora] { return OpenCorpora(corpora, "data.train"); },
      TokenBatcher::Tokenize(tokenizer), tokenizer.pad_id());
}

absl::StatusOr<std::vector<Batch>> LoadValidationBatches(const config::DataConfig& data,
                                                         const Tokenizer& tokenizer) {
  std::vector<Batch> batches;
  if (data.valid().empty()) return batches;
  const auto corpora = data.valid();
  TokenBatcher batcher(
      data.batching(), [corpora] { return OpenCorpora(corpora, "data.valid"); },
      TokenBatcher::Tokenize(tokenizer), tokenizer.pad_id());
  Batch batch;
  while (true) {
    TFM_ASSIGN_OR_RETURN(const bool more, batcher.Next(&batch));
    if (!more) break;
    batches.push_back(batch);
  }
  // A validation set that was asked for but holds nothing would leave the run
  // without validation, best checkpoint or early stopping, silently.
  if (batches.empty()) {
    const SkipReport skips = batcher.skips();
    return absl::FailedPreconditionError(absl::StrCat(
        "data.valid (", CorpusNames(corpora), ") yields no pair to validate on",
        skips.total() > 0 ? absl::StrCat(": ", skips.Summary()) : ": it is empty",
        "; fix it, or leave data.valid out to train without validation"));
  }
  return batches;
}

absl::Status ForEachTokenizedTrainingPair(
    const config::DataConfig& data, const Tokenizer& tokenizer,
    const std::function<absl::Status(int64_t index, const Example& example)>& visit,
    SkipReport* skips) {
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<PairReader> reader, OpenCorpora(data.train(), "data.train"));
  const MakeExample make = TokenizeWithEos(tokenizer);
  std::vector<SentencePair> chunk(kTokenizedChunk);
  std::vector<Example> examples(kTokenizedChunk);
  // Each pair's origin (PairReader::Where), for the report of the pairs its
  // tokens' lengths reject: asked as it is read, since the rejection comes
  // after the chunk's tokenization (a short string a pair, next to
  // tokenizing it).
  std::vector<std::string> wheres(kTokenizedChunk);
  int64_t read = 0;
  bool more = true;
  while (more) {
    int64_t filled = 0;
    while (filled < kTokenizedChunk) {
      TFM_ASSIGN_OR_RETURN(more, reader->Next(&chunk[filled]));
      if (!more) break;
      if (skips != nullptr) wheres[filled] = reader->Where();
      ++filled;
    }
    ThreadPool::Default()->ParallelFor(filled, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) examples[i] = make(chunk[i]);
    });
    for (int64_t i = 0; i < filled; ++i, ++read) {
      if (const char* reason = LengthRejection(examples[i], data.batching()); reason != nullptr) {
        if (skips != nullptr) {
          skips->Skip(reason, wheres[i].empty() ? absl::StrCat("data.train pair ", read)
                                                : std::move(wheres[i]));
        }
        continue;
      }
      TFM_RETURN_IF_ERROR(visit(read, examples[i]));
    }
  }
  if (skips != nullptr) skips->Merge(reader->skips());
  return absl::OkStatus();
}

}  // namespace tfm

#include "runtime/train/binary_training_corpus.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/data/binary_corpus.h"
#include "core/data/binary_corpus_format.h"
#include "core/data/binary_corpus_writer.h"
#include "core/data/bpe_dropout.h"
#include "core/data/file_io.h"
#include "core/data/prefetching_batch_stream.h"
#include "core/data/shuffled_corpus_reader.h"
#include "core/data/token_batcher.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "runtime/train/training_data.h"

namespace tfm {
namespace {

BinaryCorpusExpectation Expectation(const config::DataConfig& data, const Tokenizer& tokenizer) {
  return {tokenizer.vocab_size(), Fnv1a64(tokenizer.model()), TrainingDataChecksum(data)};
}

}  // namespace

std::string BinaryTrainingCorpusPath(const config::DataConfig& data, const std::string& work_dir) {
  // An absolute path is where the user keeps it (a corpus shared by runs).
  const std::string& path = data.binary_train_path();
  return !path.empty() && path.front() == '/' ? path : absl::StrCat(work_dir, "/", path);
}

uint64_t TrainingDataChecksum(const config::DataConfig& data) {
  config::DataConfig made_from;
  *made_from.mutable_train() = data.train();
  const config::BatchingConfig& batching = data.batching();
  made_from.mutable_batching()->set_max_length(batching.max_length());
  made_from.mutable_batching()->set_min_length(batching.min_length());
  made_from.mutable_batching()->set_max_source_tokens(batching.max_source_tokens());
  made_from.mutable_batching()->set_max_target_tokens(batching.max_target_tokens());
  // Deterministic serialization: the same message gives the same bytes.
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    made_from.SerializeToCodedStream(&coded);
  }
  return Fnv1a64(bytes);
}

absl::StatusOr<PreprocessSummary> WriteBinaryTrainingCorpus(const config::DataConfig& data,
                                                            const Tokenizer& tokenizer,
                                                            const std::string& path) {
  const BinaryCorpusExpectation expected = Expectation(data, tokenizer);
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<BinaryCorpusWriter> writer,
                       BinaryCorpusWriter::Create(path, expected.vocab_size,
                                                  expected.vocabulary_checksum,
                                                  expected.data_checksum));
  PreprocessSummary summary;
  // Written in corpus order: the file is the same whatever the thread count.
  TFM_RETURN_IF_ERROR(ForEachTokenizedTrainingPair(
      data, tokenizer,
      [&](int64_t, const Example& example) { return writer->Add(example); }, &summary.skips));
  TFM_RETURN_IF_ERROR(writer->Finish());
  summary.pairs = writer->pairs();
  summary.tokens = writer->tokens();
  summary.token_bytes = writer->token_bytes();
  return summary;
}

absl::Status RunPreprocess(const TaskContext& context) {
  const config::DataConfig& data = context.config.config.data();
  std::ostream& log = context.log != nullptr ? *context.log : std::cout;
  TFM_RETURN_IF_ERROR(MakeDirectories(context.work_dir));
  TFM_ASSIGN_OR_RETURN(const Tokenizer tokenizer,
                       LoadOrTrainTokenizer(data, context.work_dir, &log));
  const std::string path = BinaryTrainingCorpusPath(data, context.work_dir);
  log << "preprocess: data.train -> " << path << "\n" << std::flush;
  TFM_ASSIGN_OR_RETURN(const PreprocessSummary summary,
                       WriteBinaryTrainingCorpus(data, tokenizer, path));
  log << absl::StrFormat(
      "preprocess: %d pairs, %d tokens as %s; %s\n", summary.pairs, summary.tokens,
      summary.token_bytes == kTokenBytesUint16 ? "uint16" : "int32", summary.skips.Summary());
  log << "preprocess: training in " << context.work_dir << " now reads " << path
      << " (a global shuffle each epoch)\n";
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BatchStream>> OpenTrainingBatches(const config::DataConfig& data,
                                                                 const Tokenizer& tokenizer,
                                                                 const std::string& binary_path,
                                                                 std::ostream& log) {
  std::unique_ptr<TokenBatcher> batcher;
  if (binary_path.empty()) {
    batcher = MakeTrainingBatcher(data, tokenizer);
    log << "data: data.train read as text (run the preprocess command for a global shuffle)\n";
  } else {
    TFM_ASSIGN_OR_RETURN(std::shared_ptr<const BinaryCorpus> corpus,
                         BinaryCorpus::Open(binary_path, Expectation(data, tokenizer)));
    if (corpus->size() >= (int64_t{1} << 32)) {
      return absl::InvalidArgumentError(
          absl::StrCat(binary_path, ": ", corpus->size(), " pairs; at most 2^32 - 1"));
    }
    log << "data: " << binary_path << " (" << corpus->size() << " pairs, " << corpus->tokens()
        << " tokens), shuffled each epoch\n";
    const uint64_t seed = data.batching().shuffle_seed();
    batcher = std::make_unique<TokenBatcher>(
        data.batching(),
        [corpus, seed](int64_t epoch) -> absl::StatusOr<std::unique_ptr<ExampleReader>> {
          return std::unique_ptr<ExampleReader>(new ShuffledCorpusReader(corpus, seed, epoch));
        },
        tokenizer.pad_id());
  }
  if (const float probability = data.tokenizer().bpe_dropout(); probability > 0) {
    // From the ids either source gives (a binary corpus holds SentencePiece's
    // own encoding), with the seed of the epochs' order.
    absl::StatusOr<BpeDropout> dropout =
        BpeDropout::Create(tokenizer, probability, data.batching().shuffle_seed());
    if (!dropout.ok()) {
      return absl::Status(dropout.status().code(), absl::StrCat("data.tokenizer.bpe_dropout: ",
                                                                dropout.status().message()));
    }
    auto shared = std::make_shared<const BpeDropout>(*std::move(dropout));
    batcher->SetTransform([shared](int64_t epoch, int64_t index, Example* example) {
      shared->Apply(epoch, index, example);
    });
    log << "data: BPE-dropout " << probability
        << ": each training pair split anew every epoch (validation and decoding are not)\n";
  }
  std::unique_ptr<BatchStream> batches = std::move(batcher);
  if (data.batching().prefetch_batches() > 0) {
    batches = std::make_unique<PrefetchingBatchStream>(std::move(batches),
                                                       data.batching().prefetch_batches());
  }
  return batches;
}

}  // namespace tfm

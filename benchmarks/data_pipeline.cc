// Batches per second the training data pipeline delivers on this machine's
// cores: from text (read and tokenized as training goes, today's path) and
// from the preprocessed binary corpus (mapped, globally shuffled), with and
// without the background thread; against what a GPU consumes (target
// tokens/s, --gpu_target_tokens_per_second).
//
//   bazel run //benchmarks:data_pipeline [-- --pairs=200000]
//
// The corpus is synthetic (Zipf-like words, 3-60 per sentence, WMT-like
// lengths), written to a temporary directory; the tokenizer is SentencePiece
// as in training (2000 pieces: the synthetic words allow no more). Batches hold 4096 source and
// 4096 target tokens, the small model's GPU batch.
//
// Before its figures count, the rows must have delivered the same work
// (check: PASS / FAIL; FAIL fails the run): with and without the
// background thread, the same batches in the same order; text and binary,
// the same sentence pairs and tokens over the epoch (in other orders: the
// binary corpus shuffles globally). Rows cut short by --seconds are not
// compared. The BPE-dropout rows (from the binary corpus, each pair split
// anew as it is read) must give the same batches with and without the
// thread, and the same pairs as the binary rows with more tokens.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "core/environment_report.h"
#include "core/philox.h"
#include "runtime/train/binary_training_corpus.h"
#include "runtime/train/training_data.h"

ABSL_FLAG(int, pairs, 100000, "sentence pairs in the synthetic corpus");
ABSL_FLAG(double, seconds, 120, "how long each row runs at most (rows stop after one epoch)");
ABSL_FLAG(double, bpe_dropout, 0.1,
          "the BPE-dropout rows' probability (data.tokenizer.bpe_dropout; 0: no such rows)");
ABSL_FLAG(double, gpu_target_tokens_per_second, 437813,
          "what training on a GPU consumes, in target tokens/s: default, the fastest measured, "
          "Transformer base in bf16 at ~25k target tokens an update on an H200 "
          "(benchmarks/results/train_step_h200_bf16.txt)");

namespace tfm {
namespace {

void WriteSyntheticCorpus(const std::string& dir, int pairs) {
  std::ofstream en(dir + "/train.en"), de(dir + "/train.de");
  for (int i = 0; i < pairs; ++i) {
    const philox::Uint4 lengths = philox::Block(1, 0, i);
    for (std::ofstream* side : {&en, &de}) {
      const int words = 3 + (side == &en ? lengths.x : lengths.y) % 58;
      for (int w = 0; w < words; ++w) {
        const philox::Uint4 r = philox::Block(2, side == &en, int64_t{i} * 64 + w);
        // Zipf-like: small word numbers are far more frequent.
        const int word = (r.x % 3000) * (r.y % 3000) / 3000;
        *side << (w ? " " : "") << (side == &en ? "w" : "v") << word;
      }
      *side << "\n";
    }
  }
}

// What a row delivered, for the checks.
struct Delivered {
  bool ok = false;
  bool whole_epoch = false;
  int64_t batches = 0, pairs = 0, source_tokens = 0, target_tokens = 0;
  uint64_t order_hash = 1469598103934665603ull;  // FNV-1a over the batches in order.
};

void HashInto(uint64_t* hash, int64_t value) {
  for (int byte = 0; byte < 8; ++byte) {
    *hash = (*hash ^ ((static_cast<uint64_t>(value) >> (8 * byte)) & 0xff)) * 1099511628211ull;
  }
}

// One epoch (or `seconds`): batches per second over it, and how long the
// first batch took (text tokenizes a whole shuffle window before its first
// batch: the trainer waits that long at every window).
Delivered Measure(const std::string& name, BatchStream* batches, double seconds) {
  Delivered delivered;
  const auto start = std::chrono::steady_clock::now();
  auto since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  Batch batch;
  int64_t count = 0, tokens = 0;
  double first = 0, elapsed = 0;
  while (elapsed < seconds) {
    absl::StatusOr<bool> more = batches->Next(&batch);
    if (!more.ok()) {
      std::printf("%s: %s\n", name.c_str(), more.status().ToString().c_str());
      return delivered;
    }
    if (!*more) {
      delivered.whole_epoch = true;
      break;
    }
    if (count++ == 0) first = since_start();
    tokens += batch.target_tokens();
    delivered.pairs += batch.size;
    delivered.source_tokens += batch.source_tokens();
    for (const std::vector<int>* ids : {&batch.source, &batch.target}) {
      for (int id : *ids) HashInto(&delivered.order_hash, id);
    }
    elapsed = since_start();
  }
  delivered.ok = true;
  delivered.batches = count;
  delivered.target_tokens = tokens;
  const double rate = count / elapsed;
  std::printf(
      "%-38s %8.1f batches/s %10.0f tgt tok/s  first batch %6.2f s  (%lld batches, %.1f s)"
      "  %.1fx the GPU's need\n",
      name.c_str(), rate, tokens / elapsed, first, static_cast<long long>(count), elapsed,
      tokens / elapsed / absl::GetFlag(FLAGS_gpu_target_tokens_per_second));
  return delivered;
}

// One kind of rows, with and without the background thread: the same
// batches in the same order; false on a mismatch or an error.
bool CheckThreadChangesNothing(const char* kind, const Delivered& plain,
                               const Delivered& threaded) {
  if (!plain.ok || !threaded.ok) {
    std::printf("check: FAIL %s: a row stopped with an error\n", kind);
    return false;
  }
  if (!plain.whole_epoch || !threaded.whole_epoch) {
    std::printf("check: skipped %s with and without the thread: a row stopped at --seconds\n",
                kind);
    return true;
  }
  const bool same = plain.order_hash == threaded.order_hash && plain.batches == threaded.batches;
  std::printf("check: %s %s with and without the thread: %lld and %lld batches, %s\n",
              same ? "PASS" : "FAIL", kind, static_cast<long long>(plain.batches),
              static_cast<long long>(threaded.batches),
              same ? "the same ids in the same order" : "different batches");
  return same;
}

// The checks over the four rows (text, text + thread, binary, binary +
// thread); false on a mismatch.
bool CheckSameWork(const Delivered (&rows)[2][2]) {
  bool pass = true;
  for (int binary = 0; binary < 2; ++binary) {
    pass = CheckThreadChangesNothing(binary ? "binary" : "text", rows[binary][0],
                                     rows[binary][1]) &&
           pass;
  }
  const Delivered& text = rows[0][0];
  const Delivered& binary = rows[1][0];
  if (text.ok && binary.ok && text.whole_epoch && binary.whole_epoch) {
    const bool same = text.pairs == binary.pairs && text.source_tokens == binary.source_tokens &&
                      text.target_tokens == binary.target_tokens;
    std::printf(
        "check: %s text and binary epochs: %lld and %lld pairs, %lld and %lld source "
        "tokens, %lld and %lld target tokens\n",
        same ? "PASS" : "FAIL", static_cast<long long>(text.pairs),
        static_cast<long long>(binary.pairs), static_cast<long long>(text.source_tokens),
        static_cast<long long>(binary.source_tokens), static_cast<long long>(text.target_tokens),
        static_cast<long long>(binary.target_tokens));
    pass = pass && same;
  } else {
    std::printf("check: skipped text against binary: a row stopped at --seconds\n");
  }
  return pass;
}

// The benchmark in `dir`, a fresh directory.
int RunIn(const std::string& dir) {
  const int pairs = absl::GetFlag(FLAGS_pairs);
  WriteSyntheticCorpus(dir, pairs);
  config::DataConfig data;
  config::CorpusConfig* corpus = data.add_train();
  corpus->set_format(config::CorpusConfig::PLAIN_TEXT);
  corpus->set_source_path(dir + "/train.en");
  corpus->set_target_path(dir + "/train.de");
  data.mutable_tokenizer()->set_vocab_size(2000);
  data.mutable_batching()->set_max_source_tokens(4096);
  data.mutable_batching()->set_max_target_tokens(4096);
  // A window of the whole synthetic corpus (the presets' is 1M pairs).
  data.mutable_batching()->set_shuffle_buffer(100000);
  absl::StatusOr<Tokenizer> tokenizer = LoadOrTrainTokenizer(data, dir, nullptr);
  if (!tokenizer.ok()) {
    std::printf("tokenizer: %s\n", tokenizer.status().ToString().c_str());
    return 1;
  }
  const std::string path = BinaryTrainingCorpusPath(data, dir);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<PreprocessSummary> summary = WriteBinaryTrainingCorpus(data, *tokenizer, path);
  if (!summary.ok()) {
    std::printf("preprocess: %s\n", summary.status().ToString().c_str());
    return 1;
  }
  std::printf("corpus: %d pairs, %lld tokens; preprocess took %.1f s\n", pairs,
              static_cast<long long>(summary->tokens),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  const double seconds = absl::GetFlag(FLAGS_seconds);
  std::ostringstream log;
  Delivered rows[2][2];
  for (const bool binary : {false, true}) {
    for (const int prefetch : {0, 16}) {
      data.mutable_batching()->set_prefetch_batches(prefetch);
      absl::StatusOr<std::unique_ptr<BatchStream>> batches =
          OpenTrainingBatches(data, *tokenizer, binary ? path : "", log);
      if (!batches.ok()) {
        std::printf("%s\n", batches.status().ToString().c_str());
        return 1;
      }
      rows[binary][prefetch != 0] =
          Measure(absl::StrCat(binary ? "binary (mmap, global shuffle)" : "text (tokenized)",
                               prefetch ? ", thread" : ""),
                  batches->get(), seconds);
    }
  }
  bool dropout_pass = true;
  if (const double probability = absl::GetFlag(FLAGS_bpe_dropout); probability > 0) {
    data.mutable_tokenizer()->set_bpe_dropout(probability);
    Delivered dropped[2];
    for (const int prefetch : {0, 16}) {
      data.mutable_batching()->set_prefetch_batches(prefetch);
      absl::StatusOr<std::unique_ptr<BatchStream>> batches =
          OpenTrainingBatches(data, *tokenizer, path, log);
      if (!batches.ok()) {
        std::printf("%s\n", batches.status().ToString().c_str());
        return 1;
      }
      dropped[prefetch != 0] =
          Measure(absl::StrCat("binary, BPE-dropout ", probability, prefetch ? ", thread" : ""),
                  batches->get(), seconds);
    }
    const Delivered& binary = rows[1][0];
    dropout_pass = CheckThreadChangesNothing("BPE-dropout", dropped[0], dropped[1]);
    if (dropped[0].ok && dropped[0].whole_epoch && binary.whole_epoch) {
      const bool same_pairs = dropped[0].pairs == binary.pairs &&
                              dropped[0].source_tokens > binary.source_tokens &&
                              dropped[0].target_tokens > binary.target_tokens;
      std::printf("check: %s BPE-dropout and binary epochs: %lld and %lld pairs, %lld and %lld "
                  "target tokens (%.3f times)\n",
                  same_pairs ? "PASS" : "FAIL", static_cast<long long>(dropped[0].pairs),
                  static_cast<long long>(binary.pairs),
                  static_cast<long long>(dropped[0].target_tokens),
                  static_cast<long long>(binary.target_tokens),
                  static_cast<double>(dropped[0].target_tokens) / binary.target_tokens);
      dropout_pass = dropout_pass && same_pairs;
    } else if (dropped[0].ok) {
      std::printf("check: skipped BPE-dropout and binary epochs: a row stopped at --seconds\n");
    }
  }
  std::printf("GPU bar: %.0f target tokens/s (--gpu_target_tokens_per_second: Transformer base, "
              "bf16, an H200)\n",
              absl::GetFlag(FLAGS_gpu_target_tokens_per_second));
  return CheckSameWork(rows) && dropout_pass ? 0 : 1;
}

int Run() {
  for (const auto& [label, text] : EnvironmentReport())
    std::printf("%s: %s\n", label.c_str(), text.c_str());
  const std::string dir = absl::StrCat("/tmp/tfm_data_pipeline_", getpid());
  if (system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()) != 0) return 1;
  const int status = RunIn(dir);
  return system(("rm -rf " + dir).c_str()) == 0 ? status : 1;
}

}  // namespace
}  // namespace tfm

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return tfm::Run();
}

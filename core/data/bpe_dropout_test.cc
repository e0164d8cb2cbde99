#include "core/data/bpe_dropout.h"

#include <cstdio>
#include <string>
#include <vector>

#include "core/data/line_reader.h"
#include "core/data/sentence_checks.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::tfm::testing::SharedDataPath;

config::TokenizerConfig SmallConfig(config::TokenizerConfig::ModelType type) {
  config::TokenizerConfig config;
  config.set_model_type(type);
  config.set_vocab_size(2000);
  config.set_seed(7);
  return config;
}

// The vocabulary is trained on the validation files and used on the
// training files, so rare words split into many pieces and some characters
// may be unknown.
const Tokenizer& Bpe() {
  static const Tokenizer* tokenizer = [] {
    absl::StatusOr<Tokenizer> trained =
        Tokenizer::TrainOnFiles(SmallConfig(config::TokenizerConfig::BPE),
                                {SharedDataPath("multi30k/val.en.gz"),
                                 SharedDataPath("multi30k/val.de.gz")});
    EXPECT_TRUE(trained.ok()) << trained.status();
    return new Tokenizer(*std::move(trained));
  }();
  return *tokenizer;
}

std::vector<std::string> Lines(const std::string& relative) {
  auto reader = LineReader::Open(SharedDataPath(relative), kDefaultMaxSentenceBytes);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> lines;
  std::string line;
  bool too_long;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&line, &too_long);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    lines.push_back(line);
  }
  return lines;
}

// At probability 0 the re-merge is SentencePiece's own encoding, on every
// line of both sides of the training set (58,000 sentences).
TEST(BpeDropoutTest, WithoutDropoutItIsSentencePiecesEncodingOnEveryTrainingLine) {
  absl::StatusOr<BpeDropout> merge = BpeDropout::Create(Bpe(), 0.0f, 1);
  ASSERT_TRUE(merge.ok()) << merge.status();
  int64_t lines = 0, unknown = 0;
  for (const char* file : {"multi30k/train.en.gz", "multi30k/train.de.gz"}) {
    for (const std::string& line : Lines(file)) {
      const std::vector<int> ids = Bpe().Encode(line);
      for (int id : ids) unknown += id == Bpe().unk_id();
      ASSERT_EQ(merge->Resample(ids, lines), ids) << file << ": " << line;
      ++lines;
    }
  }
  EXPECT_EQ(lines, 58000);
  std::printf("%lld lines re-merged as SentencePiece encodes them; %lld unknown pieces among "
              "them\n",
              static_cast<long long>(lines), static_cast<long long>(unknown));
}

TEST(BpeDropoutTest, DropoutSplitsMoreButSpellsTheSameText) {
  const float probability = 0.1f;
  absl::StatusOr<BpeDropout> dropout = BpeDropout::Create(Bpe(), probability, 1);
  ASSERT_TRUE(dropout.ok()) << dropout.status();
  int64_t before = 0, after = 0, changed = 0, lines = 0;
  for (const std::string& line : Lines("multi30k/val.de.gz")) {
    std::vector<int> ids = Bpe().Encode(line);
    ids.push_back(Bpe().eos_id());
    const std::vector<int> sampled = dropout->Resample(ids, lines++);
    ASSERT_FALSE(sampled.empty());
    EXPECT_EQ(sampled.back(), Bpe().eos_id()) << line;
    EXPECT_EQ(*Bpe().Decode(sampled), *Bpe().Decode(ids)) << line;
    before += ids.size();
    after += sampled.size();
    changed += sampled != ids;
  }
  const double growth = static_cast<double>(after) / before;
  std::printf("probability %.2f: %lld of %lld lines split otherwise, %.3f times the pieces\n",
              probability, static_cast<long long>(changed), static_cast<long long>(lines),
              growth);
  // Most sentences take a few merges each, so most change; a merge skipped
  // usually costs a piece or two, never more than the word's characters.
  EXPECT_GT(changed, lines / 2);
  EXPECT_GT(growth, 1.05);
  EXPECT_LT(growth, 2.0);
}

// The same dropout as SentencePiece's own BPE-dropout (SampleEncode with
// alpha, the same library version, through its Python module): over the
// validation set's German side, 5 draws a line, the pieces per line and the
// share of lines split otherwise agree within sampling noise (about 1.35
// times the pieces, and nearly every line split otherwise, at 0.1).
TEST(BpeDropoutTest, SplitsAsOftenAsSentencePiecesSampleEncode) {
  const float probability = 0.1f;
  const int draws = 5;
  const std::string model = ::tfm::testing::WriteTempFile("bpe.model", Bpe().model());
  const std::string file = SharedDataPath("multi30k/val.de.gz");
  absl::StatusOr<std::string> peer = ::tfm::testing::RunPeerPython(R"py(
import gzip, sys
import sentencepiece as spm
sp = spm.SentencePieceProcessor(model_file=sys.argv[1])
alpha, draws = float(sys.argv[3]), int(sys.argv[4])
pieces = changed = 0
for line in gzip.open(sys.argv[2], "rt", encoding="utf-8"):
    line = line.rstrip("\n")
    ids = sp.encode(line)
    for _ in range(draws):
        sampled = sp.encode(line, enable_sampling=True, alpha=alpha, nbest_size=-1)
        pieces += len(sampled)
        changed += sampled != ids
print(pieces, changed, spm.__version__)
)py",
                                                                      {model, file,
                                                                       std::to_string(probability),
                                                                       std::to_string(draws)});
  ASSERT_TRUE(peer.ok()) << peer.status();
  long long peer_pieces = 0, peer_changed = 0;
  char version[32] = {};
  ASSERT_EQ(std::sscanf(peer->c_str(), "%lld %lld %31s", &peer_pieces, &peer_changed, version), 3)
      << *peer;

  absl::StatusOr<BpeDropout> dropout = BpeDropout::Create(Bpe(), probability, 1);
  ASSERT_TRUE(dropout.ok()) << dropout.status();
  long long pieces = 0, changed = 0, base = 0, samples = 0;
  for (const std::string& line : Lines("multi30k/val.de.gz")) {
    const std::vector<int> ids = Bpe().Encode(line);
    base += ids.size();
    for (int draw = 0; draw < draws; ++draw) {
      const std::vector<int> sampled = dropout->Resample(ids, samples++);
      pieces += sampled.size();
      changed += sampled != ids;
    }
  }
  const double ours = static_cast<double>(pieces) / (draws * base);
  const double theirs = static_cast<double>(peer_pieces) / (draws * base);
  std::printf("pieces per line against no dropout: ours %.4f, SentencePiece %s %.4f; lines split "
              "otherwise: ours %.4f, SentencePiece %.4f (%lld draws)\n",
              ours, version, theirs, static_cast<double>(changed) / samples,
              static_cast<double>(peer_changed) / samples, samples);
  EXPECT_NEAR(ours, theirs, 0.01);
  EXPECT_NEAR(static_cast<double>(changed) / samples,
              static_cast<double>(peer_changed) / samples, 0.02);
}

TEST(BpeDropoutTest, DrawsArePerStreamAndSeed) {
  absl::StatusOr<BpeDropout> dropout = BpeDropout::Create(Bpe(), 0.3f, 1);
  absl::StatusOr<BpeDropout> reseeded = BpeDropout::Create(Bpe(), 0.3f, 2);
  ASSERT_TRUE(dropout.ok() && reseeded.ok());
  const std::vector<int> ids =
      Bpe().Encode("Zwei junge Männer spielen auf einer Wiese mit einem Fußball.");
  EXPECT_EQ(dropout->Resample(ids, 5), dropout->Resample(ids, 5));
  int differ_by_stream = 0, differ_by_seed = 0;
  for (uint64_t stream = 0; stream < 20; ++stream) {
    differ_by_stream += dropout->Resample(ids, stream) != dropout->Resample(ids, stream + 100);
    differ_by_seed += dropout->Resample(ids, stream) != reseeded->Resample(ids, stream);
  }
  EXPECT_GT(differ_by_stream, 10);
  EXPECT_GT(differ_by_seed, 10);

  // Apply: each side from its own stream, a new split each epoch.
  Example example{ids, ids};
  dropout->Apply(3, 7, &example);
  Example again{ids, ids};
  dropout->Apply(3, 7, &again);
  EXPECT_EQ(example.source, again.source);
  EXPECT_EQ(example.target, again.target);
  int sides_differ = 0, epochs_differ = 0;
  for (int64_t index = 0; index < 20; ++index) {
    Example pair{ids, ids}, next_epoch{ids, ids};
    dropout->Apply(0, index, &pair);
    dropout->Apply(1, index, &next_epoch);
    sides_differ += pair.source != pair.target;
    epochs_differ += pair.source != next_epoch.source;
  }
  EXPECT_GT(sides_differ, 10);
  EXPECT_GT(epochs_differ, 10);
}

TEST(BpeDropoutTest, UnknownPiecesStayAndNothingMergesAcrossThem) {
  absl::StatusOr<BpeDropout> merge = BpeDropout::Create(Bpe(), 0.0f, 1);
  ASSERT_TRUE(merge.ok());
  const std::vector<int> ids = Bpe().Encode("Der ☃☃ Schneemann steht vor dem Haus.");
  ASSERT_NE(std::find(ids.begin(), ids.end(), Bpe().unk_id()), ids.end());
  EXPECT_EQ(merge->Resample(ids, 0), ids);
  EXPECT_TRUE(merge->Resample({}, 0).empty());
}

TEST(BpeDropoutTest, RefusesWhatItCannotResample) {
  EXPECT_FALSE(BpeDropout::Create(Bpe(), 1.0f, 1).ok());
  EXPECT_FALSE(BpeDropout::Create(Bpe(), -0.1f, 1).ok());
  absl::StatusOr<Tokenizer> unigram =
      Tokenizer::TrainOnFiles(SmallConfig(config::TokenizerConfig::UNIGRAM),
                              {SharedDataPath("multi30k/val.en.gz"),
                               SharedDataPath("multi30k/val.de.gz")});
  ASSERT_TRUE(unigram.ok()) << unigram.status();
  absl::StatusOr<BpeDropout> refused = BpeDropout::Create(*unigram, 0.1f, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("needs a BPE vocabulary"), std::string::npos)
      << refused.status();
}

}  // namespace
}  // namespace tfm

// Incremental decoding against the whole-sequence forward: every step's
// log-probabilities must equal those of LogProbabilities at the same
// position, for each model variant (post- and pre-norm, sinusoidal and
// learned positions, shared and separate tables, a decoder input hook
// adding encoder rows to the decoder inputs), for beams of rows per
// sentence, after reordering, and whatever the source padding.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/bit_rows.h"
#include "core/op_profile.h"
#include "gtest/gtest.h"
#include "layers/decoder_input_hook_testing.h"
#include "layers/transformer.h"

namespace tfm {
namespace {

constexpr int kPad = 0, kBos = 2, kEos = 3, kVocab = 17;

config::ModelConfig TinyModel() {
  config::ModelConfig model;
  model.set_num_encoder_layers(2);
  model.set_num_decoder_layers(2);
  model.set_d_model(16);
  model.set_d_ff(24);
  model.set_num_heads(2);
  model.set_d_k(8);
  model.set_d_v(8);
  model.set_dropout(0.3f);  // Must not apply at inference.
  model.set_attention_dropout(0.1f);
  model.set_max_positions(64);
  return model;
}

std::vector<config::ModelConfig> Variants() {
  std::vector<config::ModelConfig> variants(5, TinyModel());
  variants[1].set_norm_position(config::ModelConfig::PRE);
  variants[2].set_positional_encoding(config::ModelConfig::LEARNED);
  variants[3].set_share_embeddings(false);
  variants[4].set_decoder_input_hook(kCountingHookForTesting);
  return variants;
}

std::unique_ptr<Transformer> Build(const config::ModelConfig& model) {
  VocabularySpec vocabulary{kVocab, kPad, kBos, kEos};
  if (!model.decoder_input_hook().empty()) {
    vocabulary.decoder_input_hook = std::make_shared<CountingHookForTesting>();
  }
  absl::StatusOr<std::unique_ptr<Transformer>> transformer =
      Transformer::Create(model, vocabulary, Device::Cpu(), 7);
  EXPECT_TRUE(transformer.ok()) << transformer.status();
  return transformer.ok() ? *std::move(transformer) : nullptr;
}

// Deterministic pseudo-random ids in [4, kVocab).
std::vector<int> Ids(int length, int seed) {
  std::vector<int> ids;
  for (int i = 0; i < length; ++i)
    ids.push_back(4 + (seed * 7 + i * 5 + i * i * seed) % (kVocab - 4));
  return ids;
}

// One row per (source, target) pair, targets as decoder outputs.
Batch FullBatch(const std::vector<std::vector<int>>& sources,
                const std::vector<std::vector<int>>& targets) {
  Batch batch;
  batch.size = static_cast<int>(sources.size());
  for (size_t r = 0; r < sources.size(); ++r) {
    batch.source_length = std::max<int>(batch.source_length, sources[r].size());
    batch.target_length = std::max<int>(batch.target_length, targets[r].size());
  }
  for (size_t r = 0; r < sources.size(); ++r) {
    std::vector<int> source = sources[r], target = targets[r];
    batch.source_lengths.push_back(source.size());
    batch.target_lengths.push_back(target.size());
    source.resize(batch.source_length, kPad);
    target.resize(batch.target_length, kPad);
    batch.source.insert(batch.source.end(), source.begin(), source.end());
    batch.target.insert(batch.target.end(), target.begin(), target.end());
  }
  return batch;
}

// The whole-sequence log-probabilities of row r at position t.
class Reference {
 public:
  Reference(Transformer& model, const std::vector<std::vector<int>>& sources,
            const std::vector<std::vector<int>>& targets) {
    const Batch batch = FullBatch(sources, targets);
    absl::StatusOr<Tensor> log_probs = model.LogProbabilities(batch);
    EXPECT_TRUE(log_probs.ok()) << log_probs.status();
    values_ = log_probs->ToVector<float>();
    length_ = batch.target_length;
  }
  const float* At(int row, int t) const { return &values_[(row * length_ + t) * kVocab]; }

 private:
  std::vector<float> values_;
  int length_ = 0;
};

void ExpectStepMatches(const Tensor& step, int row, const float* expected,
                       const std::string& what) {
  for (int v = 0; v < kVocab; ++v) {
    ASSERT_NEAR(step.data<float>()[row * kVocab + v], expected[v], 1e-5)
        << what << " row " << row << " token " << v;
  }
}

std::vector<const std::vector<int>*> Pointers(const std::vector<std::vector<int>>& v) {
  std::vector<const std::vector<int>*> pointers;
  for (const std::vector<int>& x : v) pointers.push_back(&x);
  return pointers;
}

// Sentence s's group of `group` rows decodes targets[s * group + i]; steps
// run past the cache's first capacity (16), so growth is covered too.
// With decode.cuda_graphs too: the CPU then runs the steps a GPU would
// capture, eagerly, reading their positions from tensors
// (kv_cache_write_at, add_positional_encoding_at, learned positions by a
// position tensor) and their key lengths from buffers kept across steps.
TEST(TransformerDecodingTest, StepsEqualTheWholeSequenceForward) {
  const std::vector<std::vector<int>> sources = {Ids(5, 1), Ids(9, 2), Ids(1, 3)};
  for (const config::ModelConfig& variant : Variants()) {
    for (const bool graphs : {false, true}) {
      SCOPED_TRACE(graphs ? "with step graphs" : "eager");
      std::unique_ptr<Transformer> model = Build(variant);
      ASSERT_NE(model, nullptr);
      model->SetCudaGraphs(graphs);
      for (int group : {1, 3}) {
        std::vector<std::vector<int>> row_sources, targets;
        for (size_t s = 0; s < sources.size(); ++s) {
          for (int i = 0; i < group; ++i) {
            row_sources.push_back(sources[s]);
            targets.push_back(Ids(20, 10 + static_cast<int>(s) * group + i));
          }
        }
        const Reference reference(*model, row_sources, targets);
        for (int extra_padding : {0, 4}) {
          const SourceBatch batch = PadSources(Pointers(sources), kPad, extra_padding);
          absl::StatusOr<std::unique_ptr<DecoderState>> state = model->Start(batch, group, 20);
          ASSERT_TRUE(state.ok()) << state.status();
          ASSERT_EQ((*state)->rows(), static_cast<int>(targets.size()));
          std::vector<int> last(targets.size(), kBos);
          for (int t = 0; t < 20; ++t) {
            absl::StatusOr<Tensor> step = model->Step(**state, last);
            ASSERT_TRUE(step.ok()) << step.status();
            ASSERT_EQ(step->shape(), Shape({static_cast<int64_t>(targets.size()), kVocab}));
            for (size_t r = 0; r < targets.size(); ++r) {
              ExpectStepMatches(
                  *step, r, reference.At(r, t),
                  absl::StrCat("group ", group, " padding ", extra_padding, " step ", t));
              last[r] = targets[r][t];
            }
          }
          // The state was sized for 20 steps.
          EXPECT_EQ(model->Step(**state, last).status().code(),
                    absl::StatusCode::kFailedPrecondition);
        }
      }
    }
  }
}

// decode.dtype on the CPU: bf16 means bf16 products over f32 tensors (the
// dtype the tensors are in stays f32); f16 has no CPU products, int8
// products take f32 activations, and an f32 residual stream is what the
// CPU's bf16 keeps anyway: each refusal says why and changes nothing.
TEST(TransformerDecodingTest, Bf16OnTheCpuMeansBf16ProductsAndTheRestIsRefusedByName) {
  std::unique_ptr<Transformer> model = Build(Variants().front());
  ASSERT_NE(model, nullptr);
  EXPECT_TRUE(model->SetDecodingDType(DType::kF32).ok());
  absl::Status status = model->SetDecodingDType(DType::kF16);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("f16 decoding on the CPU"), std::string::npos) << status;
  status = model->SetDecodingDType(DType::kBF16, /*f32_residual=*/true);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("f32_residual"), std::string::npos) << status;
  EXPECT_EQ(model->decoding_precision(), DecodingPrecision::kF32);

  ASSERT_TRUE(model->SetDecodingDType(DType::kBF16).ok());
  EXPECT_EQ(model->decoding_precision(), DecodingPrecision::kBf16);
  EXPECT_EQ(model->decoding_dtype(), DType::kF32);
  ASSERT_TRUE(model->SetDecodingDType(DType::kF32).ok());
  EXPECT_EQ(model->decoding_precision(), DecodingPrecision::kF32);

  model->set_decoding_precision(DecodingPrecision::kInt8);
  status = model->SetDecodingDType(DType::kBF16);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("int8 weights"), std::string::npos) << status;
  EXPECT_EQ(model->decoding_precision(), DecodingPrecision::kInt8);
  ASSERT_TRUE(model->SetDecodingDType(DType::kF32).ok());
  EXPECT_EQ(model->decoding_precision(), DecodingPrecision::kInt8);  // f32 keeps int8.
  EXPECT_EQ(model->SetDecodingDType(DType::kI32).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->decoding_dtype(), DType::kF32);
}

// Teacher-forced incremental steps of `model` (one row a sentence, its
// settings as they are) against the whole-sequence forward `reference`:
// the largest difference of a log-probability, each checked to be at most
// `limit` (-1 after a failure).
double LargestStepDifference(Transformer& model, const std::vector<std::vector<int>>& sources,
                             const std::vector<std::vector<int>>& targets,
                             const Reference& reference, double limit) {
  model.BeginSearch();
  absl::StatusOr<std::unique_ptr<DecoderState>> state =
      model.Start(PadSources(Pointers(sources), kPad), 1, 12);
  if (!state.ok()) {
    ADD_FAILURE() << state.status();
    return -1;
  }
  std::vector<int> last(sources.size(), kBos);
  double largest = 0;
  for (int t = 0; t < 12; ++t) {
    absl::StatusOr<Tensor> step = model.Step(**state, last);
    if (!step.ok()) {
      ADD_FAILURE() << step.status();
      return -1;
    }
    for (size_t r = 0; r < sources.size(); ++r) {
      for (int v = 0; v < kVocab; ++v) {
        const double difference =
            std::abs(step->data<float>()[r * kVocab + v] - reference.At(r, t)[v]);
        if (difference > limit) {
          ADD_FAILURE() << "step " << t << " row " << r << " token " << v << ": " << difference
                        << " > " << limit;
          return -1;
        }
        largest = std::max(largest, difference);
      }
      last[r] = targets[r][t];
    }
  }
  model.EndSearch();
  return largest;
}

// --quantize=int8: the products of the encoder and the decoder
// (projections, feed-forward, the tied output projection) in int8 change
// the log-probabilities by little:
// every step of every variant stays within 0.2 nats of the f32 forward
// (measured, printed: up to 0.07 with VNNI's 8-bit activations, 0.09 with
// the AVX2 kernel's 7-bit ones), and the int8 path really runs (some
// differ).
TEST(TransformerDecodingTest, Int8StepsStayCloseToTheF32Forward) {
  const std::vector<std::vector<int>> sources = {Ids(5, 1), Ids(9, 2), Ids(1, 3)};
  for (const config::ModelConfig& variant : Variants()) {
    std::unique_ptr<Transformer> model = Build(variant);
    ASSERT_NE(model, nullptr);
    std::vector<std::vector<int>> targets;
    for (size_t s = 0; s < sources.size(); ++s) targets.push_back(Ids(12, 30 + s));
    const Reference reference(*model, sources, targets);
    model->set_decoding_precision(DecodingPrecision::kInt8);
    const double largest = LargestStepDifference(*model, sources, targets, reference, 0.2);
    EXPECT_GT(largest, 1e-6) << "the int8 path did not run";
    std::printf("[ measured ] int8 vs f32 log-probabilities: largest difference %.4f\n", largest);
  }
}

// --dtype=bf16 on the CPU: every linear product of the encoder and the
// decoder rounds its inputs to bf16 (ops/bf16_linear), as the whole-sequence
// forward of training's bf16 does on the CPU (GemmBf16): the steps follow
// that forward closely (the same products; the sums' order and attention's
// f32 products differ; measured, printed) and differ from the f32 forward
// by the rounding (the bf16 path really runs).
TEST(TransformerDecodingTest, Bf16StepsFollowTheBf16ProductsForward) {
  const std::vector<std::vector<int>> sources = {Ids(5, 1), Ids(9, 2), Ids(1, 3)};
  for (const config::ModelConfig& variant : Variants()) {
    std::unique_ptr<Transformer> model = Build(variant);
    ASSERT_NE(model, nullptr);
    std::vector<std::vector<int>> targets;
    for (size_t s = 0; s < sources.size(); ++s) targets.push_back(Ids(12, 30 + s));
    const Reference f32(*model, sources, targets);
    ASSERT_TRUE(model->SetComputeDType(DType::kBF16).ok());
    const Reference bf16(*model, sources, targets);
    ASSERT_TRUE(model->SetComputeDType(DType::kF32).ok());
    ASSERT_TRUE(model->SetDecodingDType(DType::kBF16).ok());
    ASSERT_TRUE(model->SetKvCacheDType(DType::kF32).ok());
    const double to_bf16 = LargestStepDifference(*model, sources, targets, bf16, 2e-3);
    const double to_f32 = LargestStepDifference(*model, sources, targets, f32, 0.1);
    EXPECT_GT(to_f32, 10 * to_bf16) << "the bf16 products did not run";
    std::printf("[ measured ] bf16 steps, log-probabilities: largest difference %.2g from the "
                "bf16-products forward, %.2g from the f32 one\n",
                to_bf16, to_f32);
  }
}

// decode.kv_cache_dtype: auto keeps f32 caches in f32 decoding and f16 ones
// with int8 or bf16 products on the CPU; f32 and f16 override it; other dtypes are
// refused. f16 caches under f32 steps keep every step within 0.01 nats of
// the f32 forward (the keys and values rounded to 11 significant bits;
// measured, printed), and do change them (the f16 path really runs).
TEST(TransformerDecodingTest, F16KeyValueCachesStayCloseToTheF32Forward) {
  const std::vector<std::vector<int>> sources = {Ids(5, 1), Ids(9, 2), Ids(1, 3)};
  for (const config::ModelConfig& variant : Variants()) {
    std::unique_ptr<Transformer> model = Build(variant);
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(model->KvCacheDType(), std::nullopt);
    model->set_decoding_precision(DecodingPrecision::kInt8);
    EXPECT_EQ(model->KvCacheDType(), DType::kF16);
    model->set_decoding_precision(DecodingPrecision::kBf16);
    EXPECT_EQ(model->KvCacheDType(), DType::kF16);
    ASSERT_TRUE(model->SetKvCacheDType(DType::kF32).ok());
    EXPECT_EQ(model->KvCacheDType(), DType::kF32);
    EXPECT_EQ(model->SetKvCacheDType(DType::kBF16).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(model->KvCacheDType(), DType::kF32);  // A refused setting changes nothing.
    model->set_decoding_precision(DecodingPrecision::kF32);
    ASSERT_TRUE(model->SetKvCacheDType(DType::kF16).ok());

    std::vector<std::vector<int>> targets;
    for (size_t s = 0; s < sources.size(); ++s) targets.push_back(Ids(12, 30 + s));
    const Reference reference(*model, sources, targets);
    const double largest = LargestStepDifference(*model, sources, targets, reference, 0.01);
    EXPECT_GT(largest, 0.0) << "the f16 caches changed nothing";
    std::printf("[ measured ] f16 vs f32 caches, log-probabilities: largest difference %.2g\n",
                largest);
  }
}

// f16 caches with a wide beam (10 rows a sentence, past the 8 query rows
// the row-by-row attention takes in f32: parsing decodes with 21): the
// encoder keys and values are read by 10 rows a head, and every step stays
// within 0.01 nats of the same search with f32 caches.
TEST(TransformerDecodingTest, F16KeyValueCachesTakeAWideBeam) {
  const std::vector<std::vector<int>> sources = {Ids(5, 1), Ids(9, 2)};
  constexpr int kRows = 10;
  std::unique_ptr<Transformer> model = Build(Variants().front());
  ASSERT_NE(model, nullptr);
  std::vector<std::vector<float>> steps[2];
  for (const DType dtype : {DType::kF32, DType::kF16}) {
    ASSERT_TRUE(model->SetKvCacheDType(dtype).ok());
    model->BeginSearch();
    absl::StatusOr<std::unique_ptr<DecoderState>> state =
        model->Start(PadSources(Pointers(sources), kPad), kRows, 6);
    ASSERT_TRUE(state.ok()) << state.status();
    std::vector<int> last(sources.size() * kRows, kBos);
    for (int t = 0; t < 6; ++t) {
      absl::StatusOr<Tensor> step = model->Step(**state, last);
      ASSERT_TRUE(step.ok()) << DTypeName(dtype) << ": " << step.status();
      steps[dtype == DType::kF16].push_back(step->ToVector<float>());
      for (size_t r = 0; r < last.size(); ++r) last[r] = 4 + static_cast<int>((r + t) % 5);
    }
    model->EndSearch();
  }
  double largest = 0;
  for (size_t t = 0; t < steps[0].size(); ++t) {
    for (size_t i = 0; i < steps[0][t].size(); ++i) {
      largest = std::max(largest, std::abs(double{steps[0][t][i]} - steps[1][t][i]));
    }
  }
  EXPECT_LE(largest, 0.01);
  EXPECT_GT(largest, 0.0) << "the f16 caches changed nothing";
}

// A shortlist of `frequent` (as ranked frequent targets) and, for each
// source id s, `best_per_source` targets among 4 .. 7.
std::shared_ptr<const VocabularyShortlist> Shortlist(std::vector<int32_t> frequent,
                                                     int best_per_source) {
  std::vector<std::vector<int32_t>> best(kVocab);
  for (int s = 0; s < kVocab; ++s) {
    for (int i = 0; i < best_per_source; ++i) best[s].push_back(4 + (s + i) % 4);
  }
  absl::StatusOr<VocabularyShortlist> shortlist =
      VocabularyShortlist::Create(kVocab, std::move(frequent), std::move(best), kVocab, kVocab);
  EXPECT_TRUE(shortlist.ok()) << shortlist.status();
  return std::make_shared<const VocabularyShortlist>(*std::move(shortlist));
}

// A batch's candidates for `sources`, as Transformer::Start computes them.
std::vector<int32_t> CandidatesOf(const VocabularyShortlist& shortlist,
                                  const std::vector<std::vector<int>>& sources) {
  std::vector<int> ids;
  for (const std::vector<int>& source : sources) ids.insert(ids.end(), source.begin(), source.end());
  return shortlist.Candidates(ids, {kEos});
}

// With a shortlist, each step's candidates get the whole-sequence
// log-probabilities renormalised over the candidates (their logits are the
// full projection's), every other token -infinity; StepTopK ranks the same
// tokens as the host would over Step's distribution; and a shortlist of the
// whole vocabulary changes nothing. In f32 and with int8 products.
TEST(TransformerDecodingTest, ShortlistStepsNormaliseOverTheBatchsCandidates) {
  const std::vector<std::vector<int>> sources = {Ids(5, 1), Ids(9, 2), Ids(1, 3)};
  std::vector<int32_t> everything;
  for (int v = 0; v < kVocab; ++v) everything.push_back(v);
  for (const DecodingPrecision precision : {DecodingPrecision::kF32, DecodingPrecision::kInt8}) {
    for (const config::ModelConfig& variant : Variants()) {
      std::unique_ptr<Transformer> model = Build(variant);
      ASSERT_NE(model, nullptr);
      model->set_decoding_precision(precision);
      std::vector<std::vector<int>> targets;
      for (size_t s = 0; s < sources.size(); ++s) targets.push_back(Ids(6, 30 + s));
      // The steps without a shortlist, with the whole vocabulary and with a
      // part of it; the same tokens fed to each.
      std::vector<std::vector<float>> steps[3];
      std::vector<int32_t> candidates;
      for (int kind = 0; kind < 3; ++kind) {
        std::shared_ptr<const VocabularyShortlist> shortlist =
            kind == 0 ? nullptr : kind == 1 ? Shortlist(everything, 0) : Shortlist({4, 9}, 2);
        ASSERT_TRUE(model->SetShortlist(shortlist).ok());
        EXPECT_TRUE(model->HasStepTopK());
        if (kind == 2) {
          candidates = CandidatesOf(*shortlist, sources);
          ASSERT_LT(candidates.size(), static_cast<size_t>(kVocab - 3));
        }
        absl::StatusOr<std::unique_ptr<DecoderState>> state =
            model->Start(PadSources(Pointers(sources), kPad), 1, 6);
        ASSERT_TRUE(state.ok()) << state.status();
        std::vector<int> last(sources.size(), kBos);
        for (int t = 0; t < 6; ++t) {
          // Alternate Step and StepTopK (which must agree with Step's ranking).
          if (kind == 0 || t % 2 == 0) {
            absl::StatusOr<Tensor> step = model->Step(**state, last);
            ASSERT_TRUE(step.ok()) << step.status();
            ASSERT_EQ(step->shape(), (Shape{3, kVocab}));
            steps[kind].push_back(step->ToVector<float>());
          } else {
            // Every third step, a constraint's bits too: token v of row r
            // allowed when (v + r + t) % 3 != 0 (through a shortlist's
            // columns with one).
            const bool constrained = t % 3 == 1;
            const auto allows = [&](int r, int v) { return !constrained || (v + r + t) % 3 != 0; };
            std::vector<uint32_t> allowed;
            if (constrained) {
              allowed.assign(3 * BitRowWords(kVocab), 0u);
              for (int r = 0; r < 3; ++r) {
                for (int v = 0; v < kVocab; ++v) {
                  if (allows(r, v)) BitRowSet(allowed.data() + r * BitRowWords(kVocab), v);
                }
              }
            }
            absl::StatusOr<StepTopTokens> top = model->StepTopK(**state, last, 3, kEos, allowed);
            ASSERT_TRUE(top.ok()) << top.status();
            absl::StatusOr<Tensor> all = top->all_log_probs();
            ASSERT_TRUE(all.ok()) << all.status();
            steps[kind].push_back(all->ToVector<float>());
            for (int r = 0; r < 3; ++r) {
              const float* row = steps[kind].back().data() + r * kVocab;
              std::vector<int> order;
              for (int v = 0; v < kVocab; ++v) {
                if (v != kEos && allows(r, v) && row[v] > -INFINITY) order.push_back(v);
              }
              std::stable_sort(order.begin(), order.end(),
                               [&](int a, int b) { return row[a] > row[b]; });
              for (int k = 0; k < 3; ++k) {
                const bool listed = k < static_cast<int>(order.size());
                EXPECT_EQ(top->tokens[r * 3 + k], listed ? order[k] : -1)
                    << "step " << t << " row " << r;
                EXPECT_EQ(top->log_probs[r * 3 + k], listed ? row[order[k]] : -INFINITY);
              }
            }
          }
          for (size_t r = 0; r < sources.size(); ++r) last[r] = targets[r][t];
        }
      }
      ASSERT_TRUE(model->SetShortlist(nullptr).ok());
      for (int t = 0; t < 6; ++t) {
        EXPECT_EQ(steps[1][t], steps[0][t]) << "the whole vocabulary, step " << t;
        for (int r = 0; r < 3; ++r) {
          const float* full = steps[0][t].data() + r * kVocab;
          const float* part = steps[2][t].data() + r * kVocab;
          double total = 0;
          for (const int32_t c : candidates) total += std::exp(static_cast<double>(full[c]));
          for (int v = 0; v < kVocab; ++v) {
            if (std::binary_search(candidates.begin(), candidates.end(), v)) {
              EXPECT_NEAR(part[v], full[v] - std::log(total), 1e-5)
                  << "step " << t << " row " << r << " token " << v;
            } else {
              EXPECT_EQ(part[v], -INFINITY) << "step " << t << " row " << r << " token " << v;
            }
          }
        }
      }
    }
  }
}

TEST(TransformerDecodingTest, ShortlistOfAnotherVocabularySizeIsRefused) {
  std::unique_ptr<Transformer> model = Build(TinyModel());
  ASSERT_NE(model, nullptr);
  absl::StatusOr<VocabularyShortlist> other = VocabularyShortlist::Create(kVocab + 1, {1}, {}, 1, 0);
  ASSERT_TRUE(other.ok());
  const absl::Status status =
      model->SetShortlist(std::make_shared<const VocabularyShortlist>(*std::move(other)));
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("18 tokens for a model of 17"), std::string::npos) << status;
}

// Reordering mid-way (one row per sentence widened to two as a beam search
// does after its first step, beam reordering within sentences, then a
// sentence leaving) continues exactly as decoding the reordered rows from
// scratch.
// With decode.cuda_graphs too (key rows copied into a buffer kept across
// reorders).
TEST(TransformerDecodingTest, ReorderingEqualsDecodingTheReorderedRows) {
  for (const config::ModelConfig& variant : {Variants()[0], Variants()[1], Variants()[4]}) {
    for (const bool graphs : {false, true}) {
      SCOPED_TRACE(graphs ? "with step graphs" : "eager");
      std::unique_ptr<Transformer> model = Build(variant);
      ASSERT_NE(model, nullptr);
      model->SetCudaGraphs(graphs);
      const std::vector<std::vector<int>> sources = {Ids(6, 4), Ids(3, 5)};
      // Row r's next tokens (over 12 steps): one row per source first.
      std::vector<std::vector<int>> tokens = {Ids(12, 20), Ids(12, 22)};
      absl::StatusOr<std::unique_ptr<DecoderState>> state =
          model->Start(PadSources(Pointers(sources), kPad), /*rows_per_sentence=*/1, 12);
      ASSERT_TRUE(state.ok()) << state.status();
      // What each current row has decoded, and which source it reads.
      std::vector<std::vector<int>> prefixes(2);
      std::vector<int> row_source = {0, 1};
      const auto run = [&](int steps) {
        for (int k = 0; k < steps; ++k) {
          std::vector<int> last;
          for (const std::vector<int>& prefix : prefixes) {
            last.push_back(prefix.empty() ? kBos : prefix.back());
          }
          absl::StatusOr<Tensor> step = model->Step(**state, last);
          ASSERT_TRUE(step.ok()) << step.status();
          // The whole-sequence forward of each row's prefix + one more token.
          std::vector<std::vector<int>> row_sources, targets;
          for (size_t r = 0; r < prefixes.size(); ++r) {
            row_sources.push_back(sources[row_source[r]]);
            std::vector<int> target = prefixes[r];
            target.push_back(kEos);  // Scored position; its id does not matter.
            targets.push_back(target);
          }
          const Reference reference(*model, row_sources, targets);
          for (size_t r = 0; r < prefixes.size(); ++r) {
            ExpectStepMatches(*step, r, reference.At(r, prefixes[r].size()),
                              absl::StrCat("step ", prefixes[r].size()));
            prefixes[r].push_back(tokens[r][prefixes[r].size()]);
          }
        }
      };
      run(2);
      // Widened: rows 0, 1 continue source 0's row, rows 2, 3 source 1's, each
      // pair then apart.
      ASSERT_TRUE(model->Reorder(**state, {0, 0, 1, 1}, /*rows_per_sentence=*/2).ok());
      EXPECT_EQ((*state)->rows(), 4);
      prefixes = {prefixes[0], prefixes[0], prefixes[1], prefixes[1]};
      tokens = {Ids(12, 20), Ids(12, 21), Ids(12, 22), Ids(12, 23)};
      row_source = {0, 0, 1, 1};
      run(2);
      // Beam reordering: row 1 twice for sentence 0, rows 3 and 2 swapped.
      ASSERT_TRUE(model->Reorder(**state, {1, 1, 3, 2}, 2).ok());
      prefixes = {prefixes[1], prefixes[1], prefixes[3], prefixes[2]};
      tokens = {tokens[1], tokens[0], tokens[3], tokens[2]};
      run(4);
      // Sentence 0 finishes; sentence 1 continues with its rows swapped back.
      ASSERT_TRUE(model->Reorder(**state, {3, 2}, 2).ok());
      EXPECT_EQ((*state)->rows(), 2);
      prefixes = {prefixes[3], prefixes[2]};
      tokens = {tokens[3], tokens[2]};
      row_source = {1, 1};
      run(3);
      // Groups must not mix sentences, nor leave a partial group.
      EXPECT_EQ(model->Reorder(**state, {0, 1, 1}, 2).code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(model->Reorder(**state, {0}, 2).code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

// The aligned variant has the same parameters (same seed, none added), so
// any difference is the encoder rows its decoder inputs take.
TEST(TransformerDecodingTest, DecoderInputHookChangesWhatTheDecoderSees) {
  std::unique_ptr<Transformer> plain = Build(Variants()[0]);
  std::unique_ptr<Transformer> aligned = Build(Variants()[4]);
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(aligned, nullptr);
  const Batch batch = FullBatch({Ids(7, 3)}, {Ids(9, 4)});
  const std::vector<float> a = plain->LogProbabilities(batch)->ToVector<float>();
  const std::vector<float> b = aligned->LogProbabilities(batch)->ToVector<float>();
  ASSERT_EQ(a.size(), b.size());
  double difference = 0;
  for (size_t i = 0; i < a.size(); ++i) difference = std::max<double>(difference, std::abs(a[i] - b[i]));
  EXPECT_GT(difference, 1e-3);
  // Without the hook the config names the model cannot be built.
  config::ModelConfig model = TinyModel();
  model.set_decoder_input_hook(kCountingHookForTesting);
  EXPECT_EQ(Transformer::Create(model, VocabularySpec{kVocab, kPad, kBos, kEos}, Device::Cpu(), 7)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// On the CPU a search's encoder pass multiplies by the weights its steps
// lay out (packed once per search: ops/packed_linear), not through Linear,
// whose BLAS re-packs each weight at every call (3x the time on a
// sentence's rows at batch 1): every self-attention's q, k and v as one
// product of a weight stacked once, every weight laid out once for all of a
// search's batches. (Its results: StepsEqualTheWholeSequenceForward.)
TEST(TransformerDecodingTest, OnTheCpuTheEncoderPassUsesTheSearchsLaidOutWeights) {
  std::unique_ptr<Transformer> model = Build(TinyModel());
  ASSERT_NE(model, nullptr);
  const std::vector<std::vector<int>> sources = {Ids(5, 1), Ids(9, 2)};
  SetOpProfiling(true);
  ResetOpProfile();
  model->BeginSearch();
  int64_t stacked = 0, laid_out = 0;
  for (int batch = 0; batch < 2; ++batch) {
    absl::StatusOr<std::unique_ptr<DecoderState>> state =
        model->Start(PadSources(Pointers(sources), kPad), 2, 5);
    ASSERT_TRUE(state.ok()) << state.status();
    ASSERT_TRUE(model->Step(**state, std::vector<int>(4, kBos)).ok());
    if (batch == 0) {
      stacked = OpProfileCalls("concat_rows");
      laid_out = OpProfileCalls("pack_linear_weight");
    }
  }
  model->EndSearch();
  SetOpProfiling(false);
  EXPECT_EQ(OpProfileCalls("linear"), 0);
  EXPECT_EQ(OpProfileCalls("linear_no_bias"), 0);
  // Weights and biases of the 2 encoder and 2 decoder self-attentions.
  EXPECT_EQ(stacked, 2 * 4);
  EXPECT_EQ(OpProfileCalls("concat_rows"), stacked);
  // Encoder: stacked q k v, out, 2 feed-forward (4 a layer); decoder: the
  // same and the cross-attention's q, k, v and out (8); the output table.
  EXPECT_EQ(laid_out, 2 * 4 + 2 * 8 + 1);
  EXPECT_EQ(OpProfileCalls("pack_linear_weight"), laid_out);
}

TEST(TransformerDecodingTest, RejectsBadInputs) {
  std::unique_ptr<Transformer> model = Build(TinyModel());
  ASSERT_NE(model, nullptr);
  const std::vector<std::vector<int>> sources = {Ids(4, 1)};
  SourceBatch empty = PadSources(Pointers({std::vector<int>{}}), kPad);
  EXPECT_EQ(model->Start(empty, 1, 5).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::unique_ptr<DecoderState>> state =
      model->Start(PadSources(Pointers(sources), kPad), 1, 5);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(model->Step(**state, {kBos, kBos}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->Step(**state, {kVocab}).status().code(), absl::StatusCode::kInvalidArgument);
  std::unique_ptr<Transformer> other = Build(TinyModel());
  EXPECT_EQ(other->Step(**state, {kBos}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->vocabulary().eos_id, kEos);
}

}  // namespace
}  // namespace tfm

// Decoding on a GPU is the CPU's decoding: two toy models trained on the
// CPU (tests/util/reversal_model.h: peaked distributions, varied outputs, so
// the devices' rounding should not change a search's choice) are copied to
// cuda:0, and the same 100 sources decoded greedily, with beam 4 and with
// the ensemble of both give the same best hypothesis on both devices for at
// least 99% of them (the differing ones printed), with scores within 1e-3;
// and on the GPU, decoding one sentence at a time gives what batches of 64
// give (tokens identical, scores within 1e-4); and ranking each step's
// candidates on the GPU (IncrementalModel::StepTopK) gives exactly what
// ranking the copied distribution on the host gives. A third model, with a
// head of 32 dimensions, takes the GPU's fast attention kernels through the
// same checks (but the ensemble's). Each check prints what it
// measured, so a GPU run shows how close the devices are. Skips without a
// GPU; the harness runs on a CPU copy everywhere.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "layers/transformer.h"
#include "runtime/decode/ensemble_model.h"
#include "runtime/decode/forwarding_model_testing.h"
#include "runtime/decode/search_testing.h"
#include "tests/util/gpu.h"
#include "tests/util/reversal_model.h"

namespace tfm {
namespace {

constexpr int kSentences = 100;
// f32 on both devices, summed in different orders: scores (sums of a few
// log-probabilities) differ by rounding only.
constexpr double kDeviceScoreTolerance = 1e-3;
constexpr double kBatchScoreTolerance = 1e-4;
constexpr double kMinIdenticalShare = 0.99;

// The trained models on the CPU and their copies: on the CPU (the harness
// check, which runs everywhere) and on cuda:0 where there is a GPU.
struct Models {
  std::vector<std::unique_ptr<Transformer>> cpu, cpu_copy, gpu;
};

absl::StatusOr<std::unique_ptr<Transformer>> CopyOnto(Transformer& model, const Device& device,
                                                      uint64_t seed, int heads = 4) {
  TFM_ASSIGN_OR_RETURN(
      std::unique_ptr<Transformer> copy,
      Transformer::Create(testing::ReversalModelConfig(heads),
                          VocabularySpec{testing::kReversalVocab, testing::kReversalPad,
                                         testing::kReversalBos, testing::kReversalEos},
                          // Other initial weights: the copy must overwrite them.
                          device, seed + 1));
  const std::vector<Parameter*> from = model.Parameters();
  const std::vector<Parameter*> to = copy->Parameters();
  if (from.size() != to.size()) return absl::InternalError("parameter lists differ");
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i]->name != to[i]->name) {
      return absl::InternalError(absl::StrCat(from[i]->name, " vs ", to[i]->name));
    }
    TFM_RETURN_IF_ERROR(CopyInto(from[i]->value, to[i]->value));
  }
  return copy;
}

// Models trained from each of `seeds` for `updates`, with `heads` heads.
absl::StatusOr<std::unique_ptr<Models>> BuildModels(const std::vector<uint64_t>& seeds, int heads,
                                                    int updates) {
  auto built = std::make_unique<Models>();
  for (const uint64_t seed : seeds) {
    TFM_ASSIGN_OR_RETURN(testing::TrainedReversal trained,
                         testing::TrainReversalModel(updates, seed, heads));
    std::printf("reversal model (seed %d, %d heads, %d updates): held-out nll %.3f -> %.3f\n",
                static_cast<int>(seed), heads, updates, trained.initial_nll, trained.trained_nll);
    TFM_ASSIGN_OR_RETURN(std::unique_ptr<Transformer> cpu_copy,
                         CopyOnto(*trained.model, Device::Cpu(), seed, heads));
    built->cpu_copy.push_back(std::move(cpu_copy));
    if (cuda::DeviceCount() > 0) {
      TFM_ASSIGN_OR_RETURN(std::unique_ptr<Transformer> on_gpu,
                           CopyOnto(*trained.model, Device::Cuda(0), seed, heads));
      built->gpu.push_back(std::move(on_gpu));
    }
    built->cpu.push_back(std::move(trained.model));
  }
  return built;
}

// Built once, the first time a test asks: two models with heads of 8
// dimensions (the ensemble needs two).
const absl::StatusOr<std::unique_ptr<Models>>& TrainedModels() {
  static const auto* models = new absl::StatusOr<std::unique_ptr<Models>>(
      BuildModels({3, 4}, /*heads=*/4, /*updates=*/300));
  return *models;
}

std::vector<std::vector<int>> Sources() {
  std::vector<std::vector<int>> sources;
  for (int i = 0; i < kSentences; ++i) sources.push_back(testing::Reversal(300000 + i).source);
  return sources;
}

// The best hypothesis of each source.
// With `fixed_length`, end of sentence is ignored (as the decode benchmark
// runs), so every sentence takes its full max_length steps.
absl::StatusOr<std::vector<Hypothesis>> Decode(IncrementalModel& model, int beam, int batch_size,
                                               bool fixed_length = false) {
  SearchOptions options;
  options.beam_size = beam;
  options.length_penalty_alpha = 0.6;
  options.max_length_offset = fixed_length ? 12 : 4;
  options.ignore_eos = fixed_length;
  options.batch_size = batch_size;
  std::unique_ptr<SearchStrategy> search = testing::SearchForBeamSize(options);
  TFM_ASSIGN_OR_RETURN(const std::vector<NBestList> results, search->Search(model, Sources()));
  std::vector<Hypothesis> best;
  for (const NBestList& list : results) {
    if (list.empty()) return absl::InternalError("an empty n-best list");
    best.push_back(list.front());
  }
  return best;
}

// One model with a head of 32 dimensions: the GPU's fast attention kernels
// take it (the decode kernel reading the key-rows table with interleaved
// queries, tensor cores for 16-bit encoders and f16 steps), where they
// refuse the models above, whose heads of 8 go to the CUDA-core kernels.
// One head of 32 learns the toy task more slowly and more by seed than four
// of 8: after 1000 updates seeds 3 and 5 still gave 3 distinct outputs for
// the 100 sources, seed 4 gives 73 (beam 4: 61), as peaked as the models
// above (held-out nll 205). The seed's luck also depends on the build and
// the CPU (the float sums' order): an -c opt build on an AMX Xeon trained
// seed 4 to nll 287 and 12 distinct outputs (beam 4: 7), against 144 and
// 82 in fastbuild. So the first of a few seeds whose model gives more than
// kMinDistinct distinct outputs on the CPU, greedy and with beam 4, is kept
// (the comparisons below check the same count, and fail if no seed gets
// there).
constexpr int kMinDistinct = kSentences / 8;

// How many different best hypotheses (token sequences) `best` holds.
int DistinctOutputs(const std::vector<Hypothesis>& best) {
  std::vector<std::vector<int>> seen;
  for (const Hypothesis& h : best) {
    if (std::find(seen.begin(), seen.end(), h.tokens) == seen.end()) seen.push_back(h.tokens);
  }
  return static_cast<int>(seen.size());
}

const absl::StatusOr<std::unique_ptr<Models>>& FastHeadSizeModels() {
  static const auto* models = [] {
    absl::StatusOr<std::unique_ptr<Models>> built;
    for (const uint64_t seed : {4, 6, 7, 8}) {
      built = BuildModels({seed}, /*heads=*/1, /*updates=*/1000);
      if (!built.ok()) break;
      // The fewest distinct outputs of greedy and beam-4 search.
      int fewest = kSentences;
      for (const int beam : {1, 4}) {
        const absl::StatusOr<std::vector<Hypothesis>> best = Decode(*(*built)->cpu[0], beam, 16);
        if (!best.ok()) return new absl::StatusOr<std::unique_ptr<Models>>(best.status());
        fewest = std::min(fewest, DistinctOutputs(*best));
      }
      std::printf("one-head model, seed %d: %d distinct outputs at least (%s)\n",
                  static_cast<int>(seed), fewest, fewest > kMinDistinct ? "kept" : "too few");
      if (fewest > kMinDistinct) break;
    }
    return new absl::StatusOr<std::unique_ptr<Models>>(std::move(built));
  }();
  return *models;
}

std::string Tokens(const std::vector<int>& tokens) { return absl::StrJoin(tokens, " "); }

// Prints and checks how far `actual` (one device or batching) is from
// `expected`: identical best hypotheses, and the scores of those.
void Compare(const std::string& what, const absl::StatusOr<std::vector<Hypothesis>>& expected_or,
             const absl::StatusOr<std::vector<Hypothesis>>& actual_or, double min_identical_share,
             double score_tolerance) {
  ASSERT_TRUE(expected_or.ok()) << what << ": " << expected_or.status();
  ASSERT_TRUE(actual_or.ok()) << what << ": " << actual_or.status();
  const std::vector<Hypothesis>& expected = *expected_or;
  const std::vector<Hypothesis>& actual = *actual_or;
  ASSERT_EQ(expected.size(), actual.size());
  int identical = 0;
  const int distinct_outputs = DistinctOutputs(expected);
  double worst_score = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i].tokens != actual[i].tokens) {
      std::printf("  %s: line %zu differs: [%s] (%.5f) vs [%s] (%.5f)\n", what.c_str(), i,
                  Tokens(expected[i].tokens).c_str(), expected[i].score,
                  Tokens(actual[i].tokens).c_str(), actual[i].score);
      continue;
    }
    ++identical;
    worst_score = std::max(worst_score, std::fabs(expected[i].score - actual[i].score));
  }
  std::printf(
      "%s: %d/%zu lines identical, worst score difference %.3g (tolerance %.0e), %d "
      "distinct outputs\n",
      what.c_str(), identical, expected.size(), worst_score, score_tolerance, distinct_outputs);
  std::fflush(stdout);
  EXPECT_GE(identical, std::ceil(min_identical_share * expected.size())) << what;
  EXPECT_LE(worst_score, score_tolerance) << what;
  // Outputs that are all alike would make the comparison vacuous (the toy
  // models give 20 to 75 distinct outputs for the 100 sources: the one-head
  // model of FastHeadSizeModels about 21 on an H200).
  EXPECT_GT(distinct_outputs, static_cast<int>(expected.size()) / 8) << what;
}

using Copies = std::vector<std::unique_ptr<Transformer>>;

void GreedyAndBeamGiveTheCpusOutputs(const Models& models, const Copies& target,
                                     const std::string& name) {
  for (const int beam : {1, 4}) {
    const std::string what = absl::StrCat(beam == 1 ? "greedy" : "beam 4", " cpu vs ", name);
    Compare(what, Decode(*models.cpu[0], beam, 16), Decode(*target[0], beam, 16),
            kMinIdenticalShare, kDeviceScoreTolerance);
  }
}

void AnEnsembleGivesTheCpusOutputs(const Models& models, const Copies& target,
                                   const std::string& name) {
  for (const EnsembleCombination combination :
       {EnsembleCombination::kProbabilityMean, EnsembleCombination::kLogProbabilityMean}) {
    absl::StatusOr<std::unique_ptr<EnsembleModel>> on_cpu =
        EnsembleModel::Create({models.cpu[0].get(), models.cpu[1].get()}, combination);
    absl::StatusOr<std::unique_ptr<EnsembleModel>> on_target =
        EnsembleModel::Create({target[0].get(), target[1].get()}, combination);
    ASSERT_TRUE(on_cpu.ok()) << on_cpu.status();
    ASSERT_TRUE(on_target.ok()) << on_target.status();
    const std::string what = absl::StrCat(
        "ensemble of 2 (",
        combination == EnsembleCombination::kProbabilityMean ? "probability" : "log-probability",
        " mean), beam 4, cpu vs ", name);
    Compare(what, Decode(**on_cpu, 4, 16), Decode(**on_target, 4, 16), kMinIdenticalShare,
            kDeviceScoreTolerance);
  }
}

void BatchingDoesNotChangeTheOutputs(const Copies& target, const std::string& name) {
  for (const int beam : {1, 4}) {
    const absl::StatusOr<std::vector<Hypothesis>> alone = Decode(*target[0], beam, 1);
    for (const int batch_size : {7, 64}) {
      Compare(absl::StrCat(name, " beam ", beam, ": batch 1 vs batch ", batch_size), alone,
              Decode(*target[0], beam, batch_size), /*min_identical_share=*/1.0,
              kBatchScoreTolerance);
    }
  }
}

// Ranking on the GPU (row_top_k, then each sentence's rows merged on the
// host in double) chooses exactly what ranking the copied distribution on
// the host chooses: every line and score identical (tolerance 0), with the
// time of both printed.
TEST(GpuDecodingTest, RankingOnTheGpuChoosesWhatTheHostChooses) {
  TFM_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(TrainedModels().ok()) << TrainedModels().status();
  Transformer& gpu = *(*TrainedModels())->gpu[0];
  ASSERT_TRUE(gpu.HasStepTopK());
  testing::HostRanked host_ranked(gpu);
  for (const int beam : {1, 4}) {
    ASSERT_TRUE(Decode(gpu, beam, 64).ok());  // Warms the GPU up for the timings.
    const auto start = std::chrono::steady_clock::now();
    const absl::StatusOr<std::vector<Hypothesis>> on_host = Decode(host_ranked, beam, 64);
    const auto middle = std::chrono::steady_clock::now();
    const absl::StatusOr<std::vector<Hypothesis>> on_gpu = Decode(gpu, beam, 64);
    const auto end = std::chrono::steady_clock::now();
    std::printf("beam %d: ranked on the host %.1f ms, on the gpu %.1f ms\n", beam,
                std::chrono::duration<double, std::milli>(middle - start).count(),
                std::chrono::duration<double, std::milli>(end - middle).count());
    Compare(absl::StrCat("beam ", beam, " cuda: host ranking vs gpu ranking"), on_host, on_gpu,
            /*min_identical_share=*/1.0, /*score_tolerance=*/0.0);
  }
}

TEST(GpuDecodingTest, GreedyAndBeamGiveTheCpusOutputs) {
  TFM_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(TrainedModels().ok()) << TrainedModels().status();
  GreedyAndBeamGiveTheCpusOutputs(**TrainedModels(), (*TrainedModels())->gpu, "cuda");
}

TEST(GpuDecodingTest, AnEnsembleGivesTheCpusOutputs) {
  TFM_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(TrainedModels().ok()) << TrainedModels().status();
  AnEnsembleGivesTheCpusOutputs(**TrainedModels(), (*TrainedModels())->gpu, "cuda");
}

TEST(GpuDecodingTest, BatchingDoesNotChangeTheGpusOutputs) {
  TFM_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(TrainedModels().ok()) << TrainedModels().status();
  BatchingDoesNotChangeTheOutputs((*TrainedModels())->gpu, "cuda");
}

// bf16 and f16 decoding (decode.dtype), pure and around an f32 residual
// stream (decode.f32_residual), on the GPU against f32 on the CPU:
// the bar is 97% of lines identical; the scores of identical lines
// differ by the 16-bit rounding of the activations (bf16 8 bits of
// mantissa: a few hundredths over a sentence's log-probabilities).
constexpr double kHalfMinIdenticalShare = 0.97;
constexpr double kHalfScoreTolerance = 0.1;

void HalfDecodingFollowsF32(const Models& models) {
  Transformer& gpu = *models.gpu[0];
  for (const DType dtype : {DType::kBF16, DType::kF16}) {
    // Pure 16-bit, and with an f32 residual stream (decode.f32_residual).
    for (const bool f32_residual : {false, true}) {
      ASSERT_TRUE(gpu.SetDecodingDType(dtype, f32_residual).ok());
      for (const int beam : {1, 4}) {
        Compare(absl::StrCat(beam == 1 ? "greedy" : "beam 4", " cpu f32 vs cuda ", DTypeName(dtype),
                             f32_residual ? " (f32 residual)" : ""),
                Decode(*models.cpu[0], beam, 16), Decode(gpu, beam, 16), kHalfMinIdenticalShare,
                kHalfScoreTolerance);
      }
    }
  }
  ASSERT_TRUE(gpu.SetDecodingDType(DType::kF32).ok());
  // The CPU has no f16 products: an f16 search there is refused by name
  // (its bf16 is bf16 products over f32 tensors: layers' tests).
  const absl::Status cpu = models.cpu[0]->SetDecodingDType(DType::kF16);
  EXPECT_EQ(cpu.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(cpu.message().find("f16 decoding on the CPU"), std::string::npos) << cpu;
}

TEST(GpuDecodingTest, Bf16AndF16DecodingFollowF32) {
  TFM_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(TrainedModels().ok()) << TrainedModels().status();
  HalfDecodingFollowsF32(**TrainedModels());
}

// decode.cuda_graphs: replayed steps are the eager steps, bit for bit
// (tolerance 0), greedy and beam, at batch 1 (where graphs pay) and 64 (where
// finished sentences change the layout and force recaptures), in f32 and
// bf16, ending at end of sentence and at a fixed length; and graphs were
// captured and replayed, none failed. On the CPU the same code runs every
// step eagerly through the graphs' buffers and ops (device positions, fixed
// buffers), which must equal plain decoding too.
void StepGraphsGiveTheEagerOutputs(Transformer& model, const std::string& name) {
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    if (dtype != DType::kF32 && model.device().is_cpu()) continue;
    ASSERT_TRUE(model.SetDecodingDType(dtype).ok());
    for (const int beam : {1, 4}) {
      for (const int batch_size : {1, 64}) {
        for (const bool fixed_length : {false, true}) {
          if (fixed_length && batch_size != 1) continue;
          model.SetCudaGraphs(false);
          const absl::StatusOr<std::vector<Hypothesis>> eager =
              Decode(model, beam, batch_size, fixed_length);
          model.SetCudaGraphs(true);
          const absl::StatusOr<std::vector<Hypothesis>> graphed =
              Decode(model, beam, batch_size, fixed_length);
          const StepGraphStats stats = model.cuda_graph_stats();
          model.SetCudaGraphs(false);
          const std::string what =
              absl::StrCat(name, " ", DTypeName(dtype), " beam ", beam, " batch ", batch_size,
                           fixed_length ? " fixed length" : "");
          std::printf("%s: %lld captures, %lld replays, %lld eager steps%s\n", what.c_str(),
                      static_cast<long long>(stats.captures), static_cast<long long>(stats.replays),
                      static_cast<long long>(stats.eager_steps), stats.broken ? ", BROKEN" : "");
          Compare(absl::StrCat(what, ": eager vs graphs"), eager, graphed,
                  /*min_identical_share=*/1.0, /*score_tolerance=*/0.0);
          EXPECT_FALSE(stats.broken);
          if (model.device().is_cuda()) {
            // At batch 1 the layout settles from a sentence's third step on
            // (greedy; a beam's after its first reorders): captured once per
            // sentence, then replayed. The toy's outputs end after two or
            // three steps (H200: 87 captures, 87 replays, 200 eager steps for
            // 100 sentences), so replays outnumber captures only at a fixed
            // length (src + 12 steps a sentence).
            if (beam == 1 && batch_size == 1) {
              EXPECT_GT(stats.captures, 0) << what;
            }
            if (fixed_length) {
              EXPECT_GT(stats.captures, 0) << what;
              EXPECT_GT(stats.replays, 2 * stats.captures) << what;
            }
          } else {
            EXPECT_EQ(stats.captures + stats.replays, 0);
            EXPECT_GT(stats.eager_steps, 0);
          }
        }
      }
    }
  }
  ASSERT_TRUE(model.SetDecodingDType(DType::kF32).ok());
}

TEST(GpuDecodingTest, StepGraphsGiveTheEagerOutputs) {
  TFM_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(TrainedModels().ok()) << TrainedModels().status();
  StepGraphsGiveTheEagerOutputs(*(*TrainedModels())->gpu[0], "cuda");
}

TEST(GpuDecodingTest, StepGraphsOnTheCpuRunEagerlyAndEqualPlainDecoding) {
  ASSERT_TRUE(TrainedModels().ok()) << TrainedModels().status();
  StepGraphsGiveTheEagerOutputs(*(*TrainedModels())->cpu_copy[0], "cpu");
}

// The checks above (but the ensemble's, which needs two models) with the
// model whose head takes the GPU's fast attention kernels.
TEST(GpuDecodingTest, AtAFastKernelHeadSizeTheGpuDecodesAsTheCpu) {
  TFM_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(FastHeadSizeModels().ok()) << FastHeadSizeModels().status();
  const Models& models = **FastHeadSizeModels();
  GreedyAndBeamGiveTheCpusOutputs(models, models.gpu, "cuda (one head of 32)");
  BatchingDoesNotChangeTheOutputs(models.gpu, "cuda (one head of 32)");
  HalfDecodingFollowsF32(models);
  StepGraphsGiveTheEagerOutputs(*models.gpu[0], "cuda (one head of 32)");
}

TEST(GpuDecodingTest, AFastKernelHeadSizeModelOnACpuCopy) {
  ASSERT_TRUE(FastHeadSizeModels().ok()) << FastHeadSizeModels().status();
  const Models& models = **FastHeadSizeModels();
  GreedyAndBeamGiveTheCpusOutputs(models, models.cpu_copy, "cpu copy (one head of 32)");
  BatchingDoesNotChangeTheOutputs(models.cpu_copy, "cpu (one head of 32)");
}

// The same checks with a CPU copy in the GPU's place, everywhere: they pass
// exactly, which keeps the harness (copying, comparing, counting) honest
// where there is no GPU.
TEST(GpuDecodingTest, TheHarnessOnACpuCopy) {
  ASSERT_TRUE(TrainedModels().ok()) << TrainedModels().status();
  const Models& models = **TrainedModels();
  GreedyAndBeamGiveTheCpusOutputs(models, models.cpu_copy, "cpu copy");
  AnEnsembleGivesTheCpusOutputs(models, models.cpu_copy, "cpu copy");
  BatchingDoesNotChangeTheOutputs(models.cpu_copy, "cpu");
}

}  // namespace
}  // namespace tfm

#include "runtime/decode/search.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "runtime/decode/beam_search.h"
#include "runtime/decode/greedy_search.h"
#include "core/env_setting.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"

namespace tfm {

bool BetterHypothesis(const Hypothesis& a, const Hypothesis& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.tokens.size() != b.tokens.size()) return a.tokens.size() < b.tokens.size();
  return a.tokens < b.tokens;
}

SearchOptions SearchOptions::FromConfig(const config::DecodeConfig& decode) {
  SearchOptions options;
  options.beam_size = decode.strategy() == config::DecodeConfig::GREEDY ? 1 : decode.beam_size();
  options.length_penalty_alpha = decode.length_penalty_alpha();
  options.length_penalty = decode.length_penalty_kind();
  options.max_length_offset = decode.max_length_offset();
  options.batch_size = decode.batch_size();
  options.max_tokens = decode.max_tokens();
  options.inter_threads = decode.inter_threads();
  options.nbest = decode.nbest();
  return options;
}

std::vector<std::pair<size_t, size_t>> BatchesByLength(absl::Span<const int> sorted_lengths,
                                                       int batch_size, int64_t max_tokens,
                                                       int beam_size) {
  const size_t most = static_cast<size_t>(std::max(1, batch_size));
  const int64_t beam = std::max(1, beam_size);
  std::vector<std::pair<size_t, size_t>> batches;
  size_t begin = 0;
  while (begin < sorted_lengths.size()) {
    size_t end = begin + 1;  // A batch takes at least one sentence.
    // Ascending lengths: the sentence added is the batch's longest.
    while (end < sorted_lengths.size() && end - begin < most &&
           (max_tokens <= 0 || static_cast<int64_t>(end - begin + 1) *
                                       sorted_lengths[end] * beam <= max_tokens)) {
      ++end;
    }
    batches.emplace_back(begin, end);
    begin = end;
  }
  return batches;
}

bool RanksOnModel(const IncrementalModel& model, const SearchOptions& options) {
  static const bool constraint_on_host = EnvIs("TFM_CONSTRAINT_ON_HOST", "1");
  return model.HasStepTopK() && (options.constraint == nullptr || !constraint_on_host);
}

void ForbidEosIfIgnored(const SearchOptions& options, int eos_id, float* row_log_probs) {
  if (options.ignore_eos) row_log_probs[eos_id] = -std::numeric_limits<float>::infinity();
}

Hypothesis SearchStrategy::Finish(std::vector<int> tokens, double log_prob, int steps,
                                  bool ended) const {
  Hypothesis hypothesis;
  hypothesis.tokens = std::move(tokens);
  hypothesis.log_prob = log_prob;
  hypothesis.score =
      log_prob / LengthPenalty(steps, options_.length_penalty_alpha, options_.length_penalty);
  hypothesis.ended = ended;
  return hypothesis;
}

absl::StatusOr<std::vector<NBestList>> SearchStrategy::Search(
    IncrementalModel& model, absl::Span<const std::vector<int>> sources) {
  std::vector<NBestList> results(sources.size());
  // Non-empty sources by length (ties in input order, so batches, and with
  // them every result, are a function of the input alone).
  std::vector<size_t> order;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty()) {
      results[i] = {Finish({}, 0.0, 0, /*ended=*/false)};
    } else {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sources[a].size() < sources[b].size(); });
  const int pad_id = model.vocabulary().pad_id;
  std::vector<int> sorted_lengths;
  sorted_lengths.reserve(order.size());
  for (size_t i : order) sorted_lengths.push_back(static_cast<int>(sources[i].size()));
  // EndSearch on every way out, errors included.
  model.BeginSearch();
  const absl::Cleanup end_search = [&model] { model.EndSearch(); };
  const std::vector<std::pair<size_t, size_t>> batches = BatchesByLength(
      sorted_lengths, options_.batch_size, options_.max_tokens, options_.beam_size);
  // Batch b into its sentences' places in `results` (each batch its own).
  const auto search = [&](size_t b) -> absl::Status {
    const auto [begin, end] = batches[b];
    std::vector<const std::vector<int>*> members;
    for (size_t i = begin; i < end; ++i) members.push_back(&sources[order[i]]);
    TFM_ASSIGN_OR_RETURN(std::vector<NBestList> batch_results,
                         SearchBatch(model, PadSources(members, pad_id)));
    for (size_t i = begin; i < end; ++i) results[order[i]] = std::move(batch_results[i - begin]);
    return absl::OkStatus();
  };
  const size_t side_by_side =
      model.SearchesBatchesSideBySide()
          ? std::min(static_cast<size_t>(std::max(1, options_.inter_threads)), batches.size())
          : 1;
  if (side_by_side <= 1) {
    for (size_t b = 0; b < batches.size(); ++b) TFM_RETURN_IF_ERROR(search(b));
    return results;
  }
  // The first batch alone, over every thread: it makes the entries that
  // every batch of the search shares (weights laid out for decoding), which
  // the batches side by side then only read.
  TFM_RETURN_IF_ERROR(search(0));
  std::atomic<size_t> next{1};
  std::vector<absl::Status> statuses(side_by_side);
  const auto work = [&](size_t worker) {
    const ThreadPool::ScopedInlineLoops inline_loops;
    for (size_t b = next++; b < batches.size() && statuses[worker].ok(); b = next++) {
      statuses[worker] = search(b);
    }
  };
  std::vector<std::thread> threads;
  for (size_t worker = 1; worker < side_by_side; ++worker) threads.emplace_back(work, worker);
  work(0);
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : statuses) TFM_RETURN_IF_ERROR(status);
  return results;
}

absl::StatusOr<std::unique_ptr<SearchStrategy>> CreateSearchStrategy(
    const config::DecodeConfig& decode, const DecodingConstraint* constraint) {
  SearchOptions options = SearchOptions::FromConfig(decode);
  options.constraint = constraint;
  // The common mistake first, in the words of the flags that set it.
  if (options.beam_size >= 1 && options.nbest > options.beam_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nbest ", options.nbest, " (--nbest or decode.nbest) exceeds the ", options.beam_size,
        " hypotheses the search keeps (--beam or decode.beam_size; 1 for greedy)"));
  }
  if (options.beam_size < 1 || options.nbest < 1 || options.nbest > options.beam_size ||
      options.batch_size < 1 || options.max_tokens < 0 || options.inter_threads < 1 ||
      options.max_length_offset < 0 ||
      !(options.length_penalty_alpha >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "decode options: beam_size ", options.beam_size, ", nbest ", options.nbest,
        " (1 .. beam_size; 1 for greedy), batch_size ", options.batch_size, ", max_tokens ",
        options.max_tokens, ", inter_threads ", options.inter_threads, ", max_length_offset ",
        options.max_length_offset, ", length_penalty_alpha ", options.length_penalty_alpha));
  }
  if (decode.strategy() == config::DecodeConfig::GREEDY) {
    return std::unique_ptr<SearchStrategy>(std::make_unique<GreedySearch>(options));
  }
  return std::unique_ptr<SearchStrategy>(std::make_unique<BeamSearch>(options));
}

}  // namespace tfm

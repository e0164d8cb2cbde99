#include "runtime/decode/greedy_search.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/status_macros.h"

namespace tfm {

absl::StatusOr<std::vector<NBestList>> GreedySearch::SearchBatch(IncrementalModel& model,
                                                                 const SourceBatch& batch) {
  const DecodingVocabulary vocabulary = model.vocabulary();
  int max_steps = 0;
  for (int length : batch.lengths) max_steps = std::max(max_steps, MaxLength(length));
  std::vector<NBestList> results(batch.size);
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<DecoderState> state,
                       model.Start(batch, /*rows_per_sentence=*/1, max_steps));
  std::vector<std::vector<int>> tokens(batch.size);
  std::vector<double> log_probs(batch.size, 0.0);
  // Row r of the state decodes sentence active[r].
  std::vector<int> active(batch.size), last(batch.size, vocabulary.bos_id);
  ConstraintRows constraint(options_.constraint);
  for (int s = 0; s < batch.size; ++s) {
    active[s] = s;
    constraint.Start(s, SourceOf(batch, s), MaxLength(batch.lengths[s]));
  }
  // A model that ranks on its device sends each row's best token instead of
  // the whole distribution (the first of equal bests, as max_element picks
  // it), among a constraint's tokens.
  const bool rank_on_device = RanksOnModel(model, options_);
  std::vector<int> next_active, next_last, kept_rows;
  std::vector<int> best_tokens;
  std::vector<float> best_log_probs;
  for (int step = 1; !active.empty(); ++step) {
    const absl::Span<const uint32_t> allowed =
        constraint.AllowedRows(static_cast<int>(active.size()));
    if (rank_on_device) {
      TFM_ASSIGN_OR_RETURN(StepTopTokens top,
                           model.StepTopK(*state, last, /*count=*/1,
                                          options_.ignore_eos ? vocabulary.eos_id : -1, allowed));
      // A row with no finite log-probability: max_element's token 0.
      best_tokens.assign(top.tokens.begin(), top.tokens.end());
      for (int& token : best_tokens) token = std::max(token, 0);
      best_log_probs = std::move(top.log_probs);
    } else {
      TFM_ASSIGN_OR_RETURN(Tensor step_log_probs, model.Step(*state, last));
      const int64_t vocab = step_log_probs.dim(1);
      best_tokens.resize(active.size());
      best_log_probs.resize(active.size());
      for (size_t r = 0; r < active.size(); ++r) {
        float* row = step_log_probs.data<float>() + r * vocab;
        constraint.Mask(static_cast<int>(r), row);
        ForbidEosIfIgnored(options_, vocabulary.eos_id, row);
        best_tokens[r] = static_cast<int>(std::max_element(row, row + vocab) - row);
        best_log_probs[r] = row[best_tokens[r]];
      }
    }
    next_active.clear();
    next_last.clear();
    kept_rows.clear();
    for (size_t r = 0; r < active.size(); ++r) {
      const int s = active[r];
      const int best = best_tokens[r];
      log_probs[s] += best_log_probs[r];
      if (best == vocabulary.eos_id) {
        results[s] = {Finish(std::move(tokens[s]), log_probs[s], step, /*ended=*/true)};
        continue;
      }
      tokens[s].push_back(best);
      if (step >= MaxLength(batch.lengths[s])) {
        results[s] = {Finish(std::move(tokens[s]), log_probs[s], step, /*ended=*/false)};
        continue;
      }
      constraint.Extend(static_cast<int>(kept_rows.size()), static_cast<int>(r), best);
      kept_rows.push_back(static_cast<int>(r));
      next_active.push_back(s);
      next_last.push_back(best);
    }
    if (next_active.empty()) break;
    if (!IsIdentity(kept_rows, static_cast<int64_t>(active.size()))) {
      TFM_RETURN_IF_ERROR(model.Reorder(*state, kept_rows, /*rows_per_sentence=*/1));
    }
    std::swap(active, next_active);
    std::swap(last, next_last);
    constraint.Swap();
  }
  return results;
}

}  // namespace tfm

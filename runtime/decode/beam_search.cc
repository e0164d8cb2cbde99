#include "runtime/decode/beam_search.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <queue>
#include <utility>

#include "core/op_profile.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "core/thread_pool.h"

namespace tfm {
namespace {

constexpr double kDead = -std::numeric_limits<double>::infinity();

// One extension of a live hypothesis: row's tokens + token.
struct Candidate {
  double log_prob;
  int row;
  int token;
};

// Best first; equal log-probabilities by row, then token, so that the
// search is a function of the log-probabilities alone.
bool Better(const Candidate& a, const Candidate& b) {
  if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
  if (a.row != b.row) return a.row < b.row;
  return a.token < b.token;
}

// A float below which a token's log-probability p certainly gives
// row_log_prob + p < the heap top's, when `margin` = top - row_log_prob: a
// relative 1e-6 below it, far more than the roundings of the double sum and
// of the conversion to float.
float RejectBelow(double margin) {
  return static_cast<float>(margin - 1e-6 * (1.0 + std::abs(margin)));
}

// The best `count` extensions of rows [first, first + rows) into `out`,
// best first. Rows with log-probability kDead are not live.
void TopCandidates(const float* step_log_probs, int64_t vocab,
                   const std::vector<double>& row_log_probs, int first, int rows, int count,
                   std::vector<Candidate>& heap, std::vector<Candidate>& out) {
  // A min-heap of the best seen so far: its top is the one to beat.
  heap.clear();
  for (int row = first; row < first + rows; ++row) {
    if (row_log_probs[row] == kDead) continue;
    const float* p = step_log_probs + row * vocab;
    // Once the heap is full, most tokens lose to its top; a float compare
    // against a bound a little below the top's (row's share) rejects them
    // before the exact comparison in double. Ties need no care: a later
    // candidate with an equal log-probability has a larger (row, token).
    float reject_below = static_cast<int>(heap.size()) == count
                             ? RejectBelow(heap.front().log_prob - row_log_probs[row])
                             : -std::numeric_limits<float>::infinity();
    for (int64_t token = 0; token < vocab; ++token) {
      if (p[token] < reject_below) continue;
      const Candidate c{row_log_probs[row] + p[token], row, static_cast<int>(token)};
      // NaN, or -infinity: a token the constraint forbids.
      if (!(c.log_prob > kDead)) continue;
      if (static_cast<int>(heap.size()) < count) {
        heap.push_back(c);
        std::push_heap(heap.begin(), heap.end(), Better);
      } else if (Better(c, heap.front())) {
        std::pop_heap(heap.begin(), heap.end(), Better);
        heap.back() = c;
        std::push_heap(heap.begin(), heap.end(), Better);
      } else {
        continue;
      }
      if (static_cast<int>(heap.size()) == count) {
        reject_below = RejectBelow(heap.front().log_prob - row_log_probs[row]);
      }
    }
  }
  out.assign(heap.begin(), heap.end());
  std::sort(out.begin(), out.end(), Better);
}

// Whether row_log_prob + p (in double) keeps apart p and every other float:
// the float gap beside p (its smaller one, toward zero) is more than 8
// double ulps of the largest such sum, so two distinct floats at or beyond
// p's magnitude never round to the same sum, nor does p with a float
// nearer zero. Then a sum equal to p's comes only from p itself.
bool SumsKeepFloatsApart(double row_log_prob, float p) {
  const double float_gap = std::abs(static_cast<double>(p) - std::nextafter(p, 0.0f));
  const double magnitude = std::abs(row_log_prob) + std::abs(static_cast<double>(p));
  const double double_ulp =
      std::nextafter(magnitude, std::numeric_limits<double>::infinity()) - magnitude;
  return float_gap > 8 * double_ulp;
}

// TopCandidates from each row's best `count` + 1 tokens as the model's
// device ranked them (StepTopTokens, already without NaN, -inf and a
// forbidden eos: by log-probability descending, then token ascending). The
// row's unlisted tokens must all rank after its listed ones, which holds
// when the sum with the one past the list is below the last listed one's;
// or when the two log-probabilities are the same float (ties of a coarse
// distribution, bf16 logits: the listed tokens of that value have the
// smaller ids, which Better prefers) and no other float can round to that
// sum (SumsKeepFloatsApart). Otherwise two different log-probabilities gave
// one double, a token past the list could tie with the last listed one, and
// the list cannot decide: returns false (the caller ranks the whole
// distribution instead).
bool TopCandidatesOfRowTops(const StepTopTokens& top, const std::vector<double>& row_log_probs,
                            int first, int rows, int count, std::vector<Candidate>& out) {
  out.clear();
  for (int row = first; row < first + rows; ++row) {
    const double row_log_prob = row_log_probs[row];
    if (row_log_prob == kDead) continue;
    const float* p = top.log_probs.data() + static_cast<int64_t>(row) * top.count;
    const int32_t* tokens = top.tokens.data() + static_cast<int64_t>(row) * top.count;
    for (int i = 0; i < count && tokens[i] >= 0; ++i) {
      out.push_back(Candidate{row_log_prob + p[i], row, tokens[i]});
    }
    if (tokens[count] >= 0 && row_log_prob + p[count] == row_log_prob + p[count - 1] &&
        !(p[count] == p[count - 1] && SumsKeepFloatsApart(row_log_prob, p[count]))) {
      return false;
    }
  }
  const size_t kept = std::min(out.size(), static_cast<size_t>(count));
  std::partial_sort(out.begin(), out.begin() + kept, out.end(), Better);
  out.resize(kept);
  return true;
}

}  // namespace

absl::StatusOr<std::vector<NBestList>> BeamSearch::SearchBatch(IncrementalModel& model,
                                                               const SourceBatch& batch) {
  const DecodingVocabulary vocabulary = model.vocabulary();
  const int beam = options_.beam_size;
  int max_steps = 0;
  for (int length : batch.lengths) max_steps = std::max(max_steps, MaxLength(length));
  // The first step runs one row per sentence: every hypothesis of a
  // sentence is still the empty one, so `beam` rows would compute the same
  // distribution beam times. The first reorder widens each sentence to the
  // beam (CTranslate2 does the same).
  int width = 1;
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<DecoderState> state, model.Start(batch, width, max_steps));

  // Live hypotheses, one per state row: group g of `width` rows belongs to
  // sentence active[g]. Rows of a group past its live hypotheses are dead.
  std::vector<int> active(batch.size), last(batch.size, vocabulary.bos_id);
  std::vector<double> log_probs(batch.size, 0.0);
  std::vector<std::vector<int>> tokens(batch.size);
  ConstraintRows constraint(options_.constraint);
  for (int s = 0; s < batch.size; ++s) {
    active[s] = s;
    constraint.Start(s, SourceOf(batch, s), MaxLength(batch.lengths[s]));
  }
  const bool rank_on_device = RanksOnModel(model, options_);
  std::vector<NBestList> finished(batch.size);

  // Per group: its candidates and the heap that found them (reused).
  std::vector<std::vector<Candidate>> group_candidates, group_heaps;
  std::vector<Candidate> kept;
  std::vector<int> next_active, next_last, next_rows;
  std::vector<double> next_log_probs;
  std::vector<std::vector<int>> next_tokens;
  for (int step = 1; !active.empty(); ++step) {
    next_active.clear();
    next_last.clear();
    next_rows.clear();
    next_log_probs.clear();
    // Each group's best 2 * beam extensions, groups spread over the threads.
    const int groups = static_cast<int>(active.size());
    if (static_cast<int>(group_candidates.size()) < groups) {
      group_candidates.resize(groups);
      group_heaps.resize(groups);
    }
    // A constraint's tokens for each row: what the device ranks among, or
    // what the host masks with.
    absl::Span<const uint32_t> allowed;
    if (constraint.active()) {
      const ScopedOpTimer timer("(beam search: constraint, host)");
      allowed = constraint.AllowedRows(static_cast<int>(last.size()));
    }
    // A model that ranks on its device sends each row's best 2 * beam + 1
    // tokens (one more, to see ties at the cut) instead of the whole
    // distribution.
    bool decided = false;
    Tensor step_log_probs;
    if (rank_on_device) {
      TFM_ASSIGN_OR_RETURN(StepTopTokens top,
                           model.StepTopK(*state, last, 2 * beam + 1,
                                          options_.ignore_eos ? vocabulary.eos_id : -1, allowed));
      std::atomic<bool> all_decided{true};
      {
        const ScopedOpTimer timer("(beam search: ranks, host)");
        ThreadPool::Default()->ParallelFor(groups, 1, [&](int64_t begin, int64_t end) {
          for (int64_t group = begin; group < end; ++group) {
            if (!TopCandidatesOfRowTops(top, log_probs, static_cast<int>(group) * width, width,
                                        2 * beam, group_candidates[group])) {
              all_decided = false;
            }
          }
        });
      }
      decided = all_decided;
      if (!decided) {
        TFM_ASSIGN_OR_RETURN(step_log_probs, top.all_log_probs());
      }
    } else {
      TFM_ASSIGN_OR_RETURN(step_log_probs, model.Step(*state, last));
    }
    if (!decided) {
      // A scan of every row's vocabulary, as long as a log-softmax.
      const ScopedOpTimer timer("(beam search: whole distributions, host)");
      const int64_t vocab = step_log_probs.dim(1);
      float* const step_data = step_log_probs.data<float>();
      ThreadPool::Default()->ParallelFor(groups, 1, [&](int64_t begin, int64_t end) {
        for (int64_t group = begin; group < end; ++group) {
          const int first = static_cast<int>(group) * width;
          for (int row = first; row < first + width; ++row) {
            if (log_probs[row] == kDead) continue;
            constraint.Mask(row, step_data + row * vocab);
            ForbidEosIfIgnored(options_, vocabulary.eos_id, step_data + row * vocab);
          }
          TopCandidates(step_data, vocab, log_probs, first, width, 2 * beam, group_heaps[group],
                        group_candidates[group]);
        }
      });
    }
    {
      const ScopedOpTimer timer("(beam search: bookkeeping, host)");
      for (int group = 0; group < groups; ++group) {
        const int s = active[group];
        const int first = group * width;
        const std::vector<Candidate>& candidates = group_candidates[group];
        NBestList& done = finished[s];
        kept.clear();
        for (size_t i = 0; i < candidates.size(); ++i) {
          const Candidate& c = candidates[i];
          if (c.token != vocabulary.eos_id) {
            if (static_cast<int>(kept.size()) < beam) kept.push_back(c);
          } else if (static_cast<int>(i) < beam) {
            done.push_back(Finish(tokens[c.row], c.log_prob, step, /*ended=*/true));
          }
        }
        const int max_length = MaxLength(batch.lengths[s]);
        bool stop = kept.empty() || static_cast<int>(done.size()) >= beam;
        if (!stop && step >= max_length) {
          for (const Candidate& c : kept) {
            std::vector<int> cut = tokens[c.row];
            cut.push_back(c.token);
            done.push_back(Finish(std::move(cut), c.log_prob, step, /*ended=*/false));
          }
          stop = true;
        } else if (!stop && static_cast<int>(done.size()) >= options_.nbest) {
          std::nth_element(done.begin(), done.begin() + (options_.nbest - 1), done.end(),
                           BetterHypothesis);
          const double reachable =
              kept.front().log_prob / LengthPenalty(max_length, options_.length_penalty_alpha,
                                                    options_.length_penalty);
          stop = done[options_.nbest - 1].score >= reachable;
        }
        if (stop) continue;
        next_active.push_back(s);
        for (int i = 0; i < beam; ++i) {
          // Fewer than `beam` extensions (a vocabulary smaller than the beam):
          // the rest of the group are dead rows.
          const bool live = i < static_cast<int>(kept.size());
          const Candidate c = live ? kept[i] : Candidate{kDead, first, vocabulary.eos_id};
          // Reuses the vectors of two steps ago: no allocation once they
          // have grown to the output's length.
          const size_t slot = next_rows.size();
          if (next_tokens.size() <= slot) next_tokens.emplace_back();
          next_tokens[slot].assign(tokens[c.row].begin(), tokens[c.row].end());
          if (live) next_tokens[slot].push_back(c.token);
          constraint.Extend(static_cast<int>(slot), c.row, live ? c.token : -1);
          next_rows.push_back(c.row);
          next_last.push_back(c.token);
          next_log_probs.push_back(c.log_prob);
        }
      }
    }
    if (next_active.empty()) break;
    next_tokens.resize(next_rows.size());
    if (width != beam || !IsIdentity(next_rows, static_cast<int64_t>(last.size()))) {
      TFM_RETURN_IF_ERROR(model.Reorder(*state, next_rows, beam));
      width = beam;
    }
    std::swap(active, next_active);
    std::swap(last, next_last);
    std::swap(log_probs, next_log_probs);
    std::swap(tokens, next_tokens);
    constraint.Swap();
  }
  for (NBestList& list : finished) {
    std::sort(list.begin(), list.end(), BetterHypothesis);
    if (static_cast<int>(list.size()) > options_.nbest) list.resize(options_.nbest);
  }
  return finished;
}

}  // namespace tfm

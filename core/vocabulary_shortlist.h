// A vocabulary shortlist (Marian's lexical shortlist, CTranslate2's vmap):
// the target tokens a batch of sources may produce, so that a decoding step
// projects onto those rows of the output embedding only and normalises over
// them. A token is a candidate when it is among the `frequent` most common
// target tokens, or among the `best` targets of a source token in the batch
// (learned from the training data: runtime/train/shortlist_learning.h;
// stored as runtime/decode/shortlist_file.h writes it).
//
// The candidates are the union over the whole batch (as Marian's are), so a
// sentence's translation may depend on the sentences batched with it; every
// candidate's logit is what the full projection computes, and the
// log-softmax runs over the candidates.
#ifndef TFM_CORE_VOCABULARY_SHORTLIST_H_
#define TFM_CORE_VOCABULARY_SHORTLIST_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace tfm {

class VocabularyShortlist {
 public:
  // `frequent`: target ids, most frequent first; `best[s]`: source id s's
  // targets, best first (best.size() <= vocabulary_size). Ids must be in
  // [0, vocabulary_size); each list is cut to the `frequent_count` and
  // `best_count` first (>= 0).
  static absl::StatusOr<VocabularyShortlist> Create(int64_t vocabulary_size,
                                                    std::vector<int32_t> frequent,
                                                    std::vector<std::vector<int32_t>> best,
                                                    int frequent_count, int best_count);

  int64_t vocabulary_size() const { return vocabulary_size_; }
  int frequent_count() const { return static_cast<int>(frequent_.size()); }
  int best_count() const { return best_count_; }

  // The candidates for sources `source_ids` (ids outside the vocabulary
  // add nothing) plus `always` (eos: every hypothesis needs it), ascending.
  std::vector<int32_t> Candidates(absl::Span<const int> source_ids,
                                  absl::Span<const int> always) const;

 private:
  VocabularyShortlist() = default;

  int64_t vocabulary_size_ = 0;
  int best_count_ = 0;
  std::vector<int32_t> frequent_;
  std::vector<std::vector<int32_t>> best_;
};

}  // namespace tfm

#endif  // TFM_CORE_VOCABULARY_SHORTLIST_H_

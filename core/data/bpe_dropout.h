// BPE-dropout (Provilkov, Emelianenko and Voita, "BPE-Dropout: Simple and
// Effective Subword Regularization", ACL 2020): training sees each sentence
// split into subwords a little differently every epoch, so a model trained
// on a small corpus learns its words from their pieces too. Marian's
// --sentencepiece-alphas and OpenNMT's bpe_dropout do the same.
//
// How: a training pair's ids (SentencePiece BPE's own encoding, from text or
// from a preprocessed binary corpus) are taken back to their characters and
// merged again by the vocabulary's merge rules in SentencePiece's order (the
// highest-scoring adjacent pair first, the leftmost among equals), each merge
// skipped with the set probability, as SentencePiece's own SampleEncode does.
// At probability 0 this is SentencePiece's encoding again, id for id (the
// test checks it on every line of Multi30k).
//
// The draws are Philox's, keyed by the seed and the pair's (epoch, index in
// the epoch's order, side): the same on every run and thread, so training
// resumes exactly, and a pair gets new splits each epoch. (SentencePiece's
// own sampling draws from one generator per thread, which neither a
// resumed run nor a thread pool could repeat.)
#ifndef TFM_CORE_DATA_BPE_DROPOUT_H_
#define TFM_CORE_DATA_BPE_DROPOUT_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/data/batch.h"
#include "core/data/tokenizer.h"

namespace tfm {

class BpeDropout {
 public:
  // For `tokenizer`'s vocabulary, which must be SentencePiece BPE of normal
  // pieces (user-defined, unused and byte pieces are refused: SentencePiece
  // never splits them, and a re-merge from characters could not tell).
  // `probability` is in [0, 1).
  static absl::StatusOr<BpeDropout> Create(const Tokenizer& tokenizer, float probability,
                                           uint64_t seed);

  // `ids` (one sentence's BPE encoding) merged again from their characters,
  // each merge skipped with the probability, drawn from Philox stream
  // `stream`. Unknown and control ids (eos) stay where they are, and nothing
  // merges across them. The text the ids spell is unchanged.
  std::vector<int> Resample(absl::Span<const int> ids, uint64_t stream) const;

  // Both sides of pair `index` (in epoch `epoch`'s order) of the training
  // data, in place.
  void Apply(int64_t epoch, int64_t index, Example* example) const;

  float probability() const { return probability_; }

 private:
  BpeDropout() = default;

  float probability_ = 0;
  uint64_t key_ = 0;
  // Piece id -> its characters' ids: [offsets_[id], offsets_[id + 1]) of
  // characters_; an empty range marks an id that never merges (unknown,
  // control).
  std::vector<int32_t> offsets_;
  std::vector<int32_t> characters_;
  std::vector<float> scores_;
  // (left id << 32 | right id) -> the id of the piece they spell together.
  absl::flat_hash_map<uint64_t, int32_t> merges_;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_BPE_DROPOUT_H_

// What a search strategy needs from a model: encode a batch of sentences
// once, then decode one token per row and step, with the model keeping its
// caches (self-attention keys and values of the earlier steps, the
// encoder-decoder keys and values of each sentence) in an opaque state. The
// Transformer (layers/) implements it; so can a plugin's model. Searches
// (beam, greedy) own the hypotheses, never the model's internals.
#ifndef TFM_CORE_INCREMENTAL_MODEL_H_
#define TFM_CORE_INCREMENTAL_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace tfm {

// Source sentences padded into a row-major matrix.
struct SourceBatch {
  int size = 0;              // Sentences.
  int length = 0;            // Columns: at least the longest sentence.
  std::vector<int> ids;      // size x length; padding past each length.
  std::vector<int> lengths;  // Unpadded length of each sentence.
};

// `sentences` padded with `pad_id` to the longest plus `extra_columns`.
SourceBatch PadSources(absl::Span<const std::vector<int>* const> sentences, int pad_id,
                       int extra_columns = 0);

// True when `indices` is 0, 1, .., n - 1 (a reorder that changes nothing).
bool IsIdentity(absl::Span<const int> indices, int64_t n);

// The ids a search needs.
struct DecodingVocabulary {
  int64_t size = 0;
  int pad_id = 0;
  int bos_id = 2;  // The first decoder input.
  int eos_id = 3;  // Ends a hypothesis.
};

// Each row's best next tokens after one step (IncrementalModel::StepTopK),
// ranked where the model computed the log-probabilities.
struct StepTopTokens {
  int count = 0;                 // Tokens per row.
  std::vector<float> log_probs;  // rows x count, best first (log-prob desc,
                                 // then token asc); -inf past a row's last.
  std::vector<int32_t> tokens;   // rows x count; -1 past a row's last.
  // The step's whole distribution as a host f32 [rows, vocabulary] tensor
  // (-infinity at tokens the model did not score), for the rare step where
  // `count` per row cannot decide: computed when called (the model keeps
  // what it needs), at most once, before the model's next call.
  std::function<absl::StatusOr<Tensor>()> all_log_probs;
};

// A device's ranking, values f32 and columns i32 [rows, count] (any device:
// what the top-k ops return), as StepTopTokens' lists on the host, copied
// with one wait for the device; all_log_probs is left to the caller.
absl::StatusOr<StepTopTokens> StepTopTokensOf(const Tensor& values, const Tensor& columns);

// `log_probs` [rows, columns] (any device) as host f32 [rows,
// vocabulary_size]: column j at token `tokens[j]`, -infinity at every other
// token; with `tokens` empty, `log_probs` copied to the host as it is.
absl::StatusOr<Tensor> VocabularyLogProbs(const Tensor& log_probs,
                                          absl::Span<const int32_t> tokens,
                                          int64_t vocabulary_size);

// StepTopK's `allowed` for `rows` rows of a `vocabulary_size` vocabulary:
// empty, or rows x BitRowWords(vocabulary_size) words; else
// InvalidArgument.
absl::Status CheckAllowedTokens(absl::Span<const uint32_t> allowed, int64_t rows,
                                int64_t vocabulary_size);

// Rows of bits (rows x bits.size() / rows words) as the i32 [rows, words]
// tensor on `device` that the top-k ops take as their allowed columns.
absl::StatusOr<Tensor> BitRowsOnDevice(absl::Span<const uint32_t> bits, int64_t rows,
                                       const Device& device);

// A model's decoding state for one batch; only the model that made it can
// use it.
class DecoderState {
 public:
  virtual ~DecoderState() = default;
  virtual int rows() const = 0;
};

class IncrementalModel {
 public:
  virtual ~IncrementalModel() = default;

  virtual DecodingVocabulary vocabulary() const = 0;

  // A search of many batches (SearchStrategy::Search) calls BeginSearch
  // before its first Start and EndSearch after its last state is gone. The
  // model's weights do not change in between, so a model may prepare what
  // every batch's state shares (weights laid out for decoding) once, at its
  // first use after BeginSearch, and drop it at EndSearch; without the pair
  // (a lone SearchBatch) each state prepares its own. Default: nothing.
  virtual void BeginSearch() {}
  virtual void EndSearch() {}

  // Whether a search may run its batches' states on several threads at once
  // (decode.inter_threads) once its first batch is done: their states are
  // independent and what they share, made by that first batch, is then only
  // read. Default: no.
  virtual bool SearchesBatchesSideBySide() const { return false; }

  // Encodes `sources` (every length >= 1) once and returns a state of
  // sources.size * rows_per_sentence decoder rows, row r decoding sentence
  // r / rows_per_sentence (a beam of that many hypotheses per sentence),
  // good for up to `max_steps` steps. Inference only: no dropout.
  virtual absl::StatusOr<std::unique_ptr<DecoderState>> Start(const SourceBatch& sources,
                                                              int rows_per_sentence,
                                                              int max_steps) = 0;

  // One step: `last_tokens` holds each row's latest token (bos at the first
  // step). Returns log p(next token | row's tokens, source) as a host f32
  // tensor [rows, vocabulary size], and extends the state by the tokens.
  virtual absl::StatusOr<Tensor> Step(DecoderState& state, absl::Span<const int> last_tokens) = 0;

  // True when StepLogProbs keeps the step's log-probabilities where the
  // model computed them. Default: false.
  virtual bool HasStepLogProbs() const { return false; }

  // Step, returning log p(next token | row's tokens, source) as an f32
  // [rows, vocabulary size] tensor on the model's device (no copy to the
  // host): what an ensemble of such models combines and ranks there.
  virtual absl::StatusOr<Tensor> StepLogProbs(DecoderState& state,
                                              absl::Span<const int> last_tokens) {
    return absl::UnimplementedError("this model has no StepLogProbs: call Step");
  }

  // True when StepTopK ranks on a device: a search that needs only each
  // row's best few tokens then copies rows x count numbers per step instead
  // of rows x vocabulary. Default: false (searches call Step).
  virtual bool HasStepTopK() const { return false; }

  // Step, returning each row's best `count` tokens (never
  // `forbidden_token`; < 0 forbids none, and NaN or -inf log-probabilities
  // never count) instead of the whole distribution. `allowed` (a decoding
  // constraint's: rows x BitRowWords(vocabulary size) words, core/
  // bit_rows.h) lets in only the tokens whose bit is set; empty: every
  // token. The log-probabilities are the step's, normalised over the whole
  // vocabulary (a constraint chooses among them; all_log_probs is
  // unmasked).
  virtual absl::StatusOr<StepTopTokens> StepTopK(DecoderState& state,
                                                 absl::Span<const int> last_tokens, int count,
                                                 int forbidden_token,
                                                 absl::Span<const uint32_t> allowed) {
    return absl::UnimplementedError("this model has no StepTopK: call Step");
  }

  // Keeps the rows `rows` in that order: new row i continues old row
  // rows[i] (beam reordering; rows may repeat or be left out). The new rows
  // come in groups of `rows_per_sentence` consecutive rows, each group from
  // one sentence; sentences left out are finished and dropped. The group
  // size may change: a beam search runs its first step on one row per
  // sentence (every hypothesis of a sentence is still the empty one) and
  // then widens each sentence to its beam.
  virtual absl::Status Reorder(DecoderState& state, absl::Span<const int> rows,
                               int rows_per_sentence) = 0;
};

}  // namespace tfm

#endif  // TFM_CORE_INCREMENTAL_MODEL_H_

// Extra decoder inputs: a hook, registered by name and named by
// model.decoder_input_hook, that picks for every decoder input one position
// of its sentence's source whose encoder output is added to that input. The Transformer
// does the arithmetic (the gather, the addition, and in training the
// gradient back into the encoder) and the hook only says where, so a task
// can steer its decoder with what it knows of its outputs (parsing: the
// source word whose leaf comes next, tasks/parsing/leaf_alignment_hook.cc)
// without branches in the shared model.
//
// The positions of a whole-sequence pass (training) and of the incremental
// steps (decoding) must agree: decoding equals recomputation. Both are given
// as rows of the encoder output [sentences, source_length, d_model]
// flattened to [sentences * source_length, d_model]: sentence s's position
// p is row s * source_length + p.
#ifndef TFM_LAYERS_DECODER_INPUT_HOOK_H_
#define TFM_LAYERS_DECODER_INPUT_HOOK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/config/task_config.pb.h"
#include "core/incremental_model.h"
#include "core/registry.h"

namespace tfm {

// What a hook follows over one search's steps (one per decoder state).
class DecoderInputTracker {
 public:
  virtual ~DecoderInputTracker() = default;
  // For each decoder row, given the token it takes as input at this step
  // (rows_per_sentence rows per sentence, in sentence order), the memory row
  // to add (its sentence's row of a source position). `memory_rows` has one
  // entry per decoder row.
  virtual void Step(absl::Span<const int> last_tokens, int64_t rows_per_sentence,
                    absl::Span<int32_t> memory_rows) = 0;
  // The search kept `rows` (new row i is old row rows[i]) and, of its
  // sentences, `kept` (new sentence s is old sentence kept[s]).
  virtual void Reorder(absl::Span<const int> rows, absl::Span<const int32_t> kept) = 0;
};

class DecoderInputHook {
 public:
  virtual ~DecoderInputHook() = default;
  // A whole-sequence pass: sources [rows, source_length] (padded; row r's
  // own length source_lengths[r]) and decoder inputs [rows, target_length]
  // (bos, then the target shifted right). Returns, for each of the rows *
  // target_length decoder inputs, the memory row to add to it.
  virtual std::vector<int32_t> BatchMemoryRows(absl::Span<const int> sources, int source_length,
                                              absl::Span<const int> source_lengths,
                                              absl::Span<const int32_t> decoder_inputs,
                                              int target_length) const = 0;
  // Incremental decoding of `sources` in `rows_per_sentence` rows each.
  virtual std::unique_ptr<DecoderInputTracker> Start(const SourceBatch& sources,
                                                     int rows_per_sentence) const = 0;
};

// What a hook is built from: the task config (a hook reads its settings from
// the config's extensions) and the vocabulary's pieces (piece `id` =
// pieces[id]), whose ids the hook reads.
struct DecoderInputHookArgs {
  const config::TaskConfig* config = nullptr;
  std::vector<std::string> pieces;
};

struct DecoderInputHookDef {
  std::string name;
  std::string doc;
  std::function<absl::StatusOr<std::unique_ptr<DecoderInputHook>>(const DecoderInputHookArgs&)>
      create;
};

Registry<DecoderInputHookDef>& DecoderInputHookRegistry();

// Builds a registered hook; an unknown name lists the known ones.
absl::StatusOr<std::unique_ptr<DecoderInputHook>> CreateDecoderInputHook(
    absl::string_view name, const DecoderInputHookArgs& args);

namespace internal {
struct DecoderInputHookRegistrar {
  explicit DecoderInputHookRegistrar(DecoderInputHookDef def);
};
}  // namespace internal

#define TFM_REGISTER_DECODER_INPUT_HOOK(...)                    \
  static ::tfm::internal::DecoderInputHookRegistrar TFM_UNIQUE_NAME( \
      tfm_decoder_input_hook_registrar_)(__VA_ARGS__)

}  // namespace tfm

#endif  // TFM_LAYERS_DECODER_INPUT_HOOK_H_

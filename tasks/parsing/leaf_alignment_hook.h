// Leaf alignment as the Transformer's decoder input hook
// (layers/decoder_input_hook.h), registered as "leaf_alignment": a config
// with model { decoder_input_hook: "leaf_alignment" } adds to each decoder
// input of a linearised tree the encoder's output at the source word whose
// leaf comes next (leaf_alignment.h), so the decoder no longer has to count
// leaves to know where it is: without it, a model trained on a few thousand
// trees writes right-branching chains. No new parameters.
#ifndef TFM_TASKS_PARSING_LEAF_ALIGNMENT_HOOK_H_
#define TFM_TASKS_PARSING_LEAF_ALIGNMENT_HOOK_H_

#include <memory>

#include "layers/decoder_input_hook.h"
#include "tasks/parsing/leaf_alignment.h"

namespace tfm {

inline constexpr char kLeafAlignmentHook[] = "leaf_alignment";

// The hook over `tables` (which pieces start a leaf or a word).
std::unique_ptr<DecoderInputHook> MakeLeafAlignmentHook(LeafAlignmentTables tables);

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_LEAF_ALIGNMENT_HOOK_H_

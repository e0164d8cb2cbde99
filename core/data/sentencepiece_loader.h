// Finds and opens libtfm_sentencepiece.so (why it is separate:
// sentencepiece_backend.h), once per process.
#ifndef TFM_CORE_DATA_SENTENCEPIECE_LOADER_H_
#define TFM_CORE_DATA_SENTENCEPIECE_LOADER_H_

#include "absl/status/statusor.h"
#include "core/data/sentencepiece_backend.h"

namespace tfm {

// Looks in $TFM_SENTENCEPIECE_LIB (a path to the library), the runfiles of
// the running binary or test ($RUNFILES_DIR, $TEST_SRCDIR,
// /proc/self/exe.runfiles) and beside the executable. The error lists every
// place tried.
absl::StatusOr<const spm::Api*> LoadSentencePiece();

}  // namespace tfm

#endif  // TFM_CORE_DATA_SENTENCEPIECE_LOADER_H_

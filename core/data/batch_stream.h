// What the trainer reads its batches from: an endless sequence of epochs,
// each a finite run of batches, with a position that a checkpoint saves and
// Seek restores exactly. TokenBatcher builds the batches; PrefetchingBatchStream
// builds them ahead on a background thread.
#ifndef TFM_CORE_DATA_BATCH_STREAM_H_
#define TFM_CORE_DATA_BATCH_STREAM_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/data/batch.h"

namespace tfm {

// Where the batch sequence stands: the next batch is batch `batch` of the
// window that starts after `pairs` pairs of epoch `epoch` (pairs in the
// epoch's reading order: the corpus's, or its shuffled order for a binary
// corpus). Saving it with a checkpoint and passing it to Seek resumes the
// exact same sequence.
struct BatchPosition {
  int64_t epoch = 0;
  int64_t pairs = 0;
  int64_t batch = 0;

  bool operator==(const BatchPosition& other) const {
    return epoch == other.epoch && pairs == other.pairs && batch == other.batch;
  }
};

class BatchStream {
 public:
  virtual ~BatchStream() = default;

  // Fills *batch with the next batch and returns true, or returns false at
  // the end of an epoch; the next call starts the following epoch.
  virtual absl::StatusOr<bool> Next(Batch* batch) = 0;

  // The position of the batch Next returns next.
  virtual const BatchPosition& position() const = 0;

  // Continues from a position() saved earlier (with the same config, seed
  // and corpus). Clears a Cancel.
  virtual void Seek(const BatchPosition& position) = 0;

  // Asks a Next running on another thread to return Cancelled soon instead
  // of finishing its work (reading a window of a million pairs takes
  // minutes), so that a background reader stops at once; safe from any
  // thread. Streams that never take long need not override it.
  virtual void Cancel() {}
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_BATCH_STREAM_H_

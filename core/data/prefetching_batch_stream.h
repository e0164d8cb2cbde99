// Builds batches ahead on a background thread, so that the trainer finds the
// next batch ready instead of waiting for reading, tokenizing and sorting:
// a bounded queue of ready batches between one producer (this class's thread,
// the only one touching the wrapped stream) and the trainer.
//
// position() is the trainer's position (after the batches it has taken), not
// the producer's, so a checkpoint resumes exactly where the trainer was. An
// error (a damaged corpus mid-epoch) is returned by the Next that reaches it,
// after the batches built before it, and by every Next after it until a Seek.
#ifndef TFM_CORE_DATA_PREFETCHING_BATCH_STREAM_H_
#define TFM_CORE_DATA_PREFETCHING_BATCH_STREAM_H_

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "core/data/batch_stream.h"

namespace tfm {

class PrefetchingBatchStream : public BatchStream {
 public:
  // Keeps up to `capacity` (>= 1) batches ready. The thread starts at the
  // first Next.
  PrefetchingBatchStream(std::unique_ptr<BatchStream> inner, int capacity);
  // Stops the thread (cancelling the wrapped stream's work in progress) and
  // joins it.
  ~PrefetchingBatchStream() override;

  absl::StatusOr<bool> Next(Batch* batch) override;
  const BatchPosition& position() const override { return position_; }
  // Stops the thread as the destructor does, drops the ready batches and
  // repositions the wrapped stream; the next Next starts the thread again.
  void Seek(const BatchPosition& position) override;

 private:
  // What the wrapped stream's Next gave, and its position after it.
  struct Item {
    absl::Status status;
    bool more = false;
    Batch batch;
    BatchPosition after;
  };

  void Produce();
  void Stop();

  std::unique_ptr<BatchStream> inner_;
  const size_t capacity_;
  BatchPosition position_;
  absl::Status failed_;  // Sticky: the error Next returned.

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> ready_;
  bool stop_ = false;
  std::thread producer_;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_PREFETCHING_BATCH_STREAM_H_

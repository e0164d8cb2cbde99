// The stream that ops and tensor allocations use when their caller names
// none: the device's default stream (nullptr), unless a ScopedStream on this
// thread has set another. A CUDA graph's capture sets its own stream around
// a decoding step, so that every kernel of the step is captured and every
// temporary comes from that stream's blocks (the caching allocator reuses a
// block only on the stream it was freed on: core/caching_allocator.h), which
// nothing outside the graph is then handed.
#ifndef TFM_CORE_CURRENT_STREAM_H_
#define TFM_CORE_CURRENT_STREAM_H_

#include "core/device.h"

namespace tfm {

StreamHandle CurrentStream();

// Sets this thread's current stream for its lifetime.
class ScopedStream {
 public:
  explicit ScopedStream(StreamHandle stream);
  ~ScopedStream();
  ScopedStream(const ScopedStream&) = delete;
  ScopedStream& operator=(const ScopedStream&) = delete;

 private:
  StreamHandle previous_;
};

}  // namespace tfm

#endif  // TFM_CORE_CURRENT_STREAM_H_

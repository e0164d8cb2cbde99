#include "core/current_stream.h"

namespace tfm {
namespace {

thread_local StreamHandle current_stream = nullptr;

}  // namespace

StreamHandle CurrentStream() { return current_stream; }

ScopedStream::ScopedStream(StreamHandle stream) : previous_(current_stream) {
  current_stream = stream;
}

ScopedStream::~ScopedStream() { current_stream = previous_; }

}  // namespace tfm

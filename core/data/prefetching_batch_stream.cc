#include "core/data/prefetching_batch_stream.h"

#include <algorithm>
#include <utility>

namespace tfm {

PrefetchingBatchStream::PrefetchingBatchStream(std::unique_ptr<BatchStream> inner, int capacity)
    : inner_(std::move(inner)), capacity_(std::max(1, capacity)), position_(inner_->position()) {}

PrefetchingBatchStream::~PrefetchingBatchStream() { Stop(); }

void PrefetchingBatchStream::Produce() {
  while (true) {
    Item item;
    absl::StatusOr<bool> more = inner_->Next(&item.batch);
    if (more.ok()) {
      item.more = *more;
    } else {
      item.status = more.status();
    }
    item.after = inner_->position();
    const bool failed = !item.status.ok();
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return stop_ || ready_.size() < capacity_; });
    if (stop_) return;
    ready_.push_back(std::move(item));
    changed_.notify_all();
    if (failed) return;  // Nothing after an error: Next returns it.
  }
}

void PrefetchingBatchStream::Stop() {
  if (!producer_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  inner_->Cancel();  // A window being read is dropped, not finished.
  changed_.notify_all();
  producer_.join();
  stop_ = false;
  ready_.clear();
}

absl::StatusOr<bool> PrefetchingBatchStream::Next(Batch* batch) {
  if (!failed_.ok()) return failed_;
  if (!producer_.joinable()) producer_ = std::thread([this] { Produce(); });
  Item item;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !ready_.empty(); });
    item = std::move(ready_.front());
    ready_.pop_front();
  }
  changed_.notify_all();
  if (!item.status.ok()) {
    failed_ = item.status;
    return failed_;
  }
  position_ = item.after;
  if (item.more) *batch = std::move(item.batch);
  return item.more;
}

void PrefetchingBatchStream::Seek(const BatchPosition& position) {
  Stop();
  inner_->Seek(position);
  position_ = position;
  failed_ = absl::OkStatus();
}

}  // namespace tfm

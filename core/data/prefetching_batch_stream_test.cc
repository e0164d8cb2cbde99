#include "core/data/prefetching_batch_stream.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tfm {
namespace {

// Epochs of 5 batches; batch b of epoch e holds the one id 100 * e + b. An
// error replaces batch `fail_at` of epoch 1 when set.
class CountingStream : public BatchStream {
 public:
  explicit CountingStream(int fail_at = -1) : fail_at_(fail_at) {}

  absl::StatusOr<bool> Next(Batch* batch) override {
    if (position_.batch == 5) {
      position_ = {position_.epoch + 1, 0, 0};
      return false;
    }
    if (position_.epoch == 1 && position_.batch == fail_at_) {
      return absl::DataLossError("corpus.bin: pair 3: token id 70000 at byte 1234");
    }
    batch->size = 1;
    batch->source = {static_cast<int>(100 * position_.epoch + position_.batch)};
    ++position_.batch;
    position_.pairs = position_.batch * 10;
    return true;
  }
  const BatchPosition& position() const override { return position_; }
  void Seek(const BatchPosition& position) override { position_ = position; }

 private:
  int fail_at_;
  BatchPosition position_;
};

// Ids of the next `count` calls to Next (-1 for an epoch's end).
std::vector<int> Take(BatchStream* stream, int count) {
  std::vector<int> ids;
  Batch batch;
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<bool> more = stream->Next(&batch);
    EXPECT_TRUE(more.ok()) << more.status();
    ids.push_back(more.ok() && *more ? batch.source[0] : -1);
  }
  return ids;
}

TEST(PrefetchingBatchStreamTest, SameSequenceAndTheTrainersPosition) {
  CountingStream plain;
  const std::vector<int> expected = Take(&plain, 14);
  for (const int capacity : {1, 3, 64}) {
    PrefetchingBatchStream stream(std::make_unique<CountingStream>(), capacity);
    EXPECT_EQ(Take(&stream, 3), std::vector<int>(expected.begin(), expected.begin() + 3));
    // The producer is ahead; the position is after the third batch.
    EXPECT_EQ(stream.position(), (BatchPosition{0, 30, 3}));
    EXPECT_EQ(Take(&stream, 11), std::vector<int>(expected.begin() + 3, expected.end()));
  }
}

TEST(PrefetchingBatchStreamTest, SeekDropsReadyBatches) {
  PrefetchingBatchStream stream(std::make_unique<CountingStream>(), 4);
  Take(&stream, 2);
  stream.Seek({1, 20, 2});
  EXPECT_EQ(stream.position(), (BatchPosition{1, 20, 2}));
  EXPECT_EQ(Take(&stream, 4), (std::vector<int>{102, 103, 104, -1}));
  EXPECT_EQ(stream.position(), (BatchPosition{2, 0, 0}));
}

TEST(PrefetchingBatchStreamTest, ErrorArrivesInOrderAndStays) {
  PrefetchingBatchStream stream(std::make_unique<CountingStream>(/*fail_at=*/2), 8);
  EXPECT_EQ(Take(&stream, 8), (std::vector<int>{0, 1, 2, 3, 4, -1, 100, 101}));
  Batch batch;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<bool> more = stream.Next(&batch);
    ASSERT_FALSE(more.ok());
    EXPECT_TRUE(absl::IsDataLoss(more.status()));
    EXPECT_NE(more.status().message().find("corpus.bin: pair 3"), std::string::npos);
  }
  EXPECT_EQ(stream.position(), (BatchPosition{1, 20, 2}));
}

// Two batches, then a Next that ends only when cancelled: a window of a
// huge text corpus being read when the trainer stops.
class EndlessWindow : public BatchStream {
 public:
  absl::StatusOr<bool> Next(Batch* batch) override {
    if (position_.batch < 2) {
      batch->size = 1;
      batch->source = {static_cast<int>(position_.batch++)};
      return true;
    }
    while (!cancelled_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return absl::CancelledError("cancelled");
  }
  const BatchPosition& position() const override { return position_; }
  void Seek(const BatchPosition& position) override {
    cancelled_ = false;
    position_ = position;
  }
  void Cancel() override { cancelled_ = true; }

 private:
  std::atomic<bool> cancelled_{false};
  BatchPosition position_;
};

TEST(PrefetchingBatchStreamTest, StoppingCancelsWorkInProgress) {
  auto stream = std::make_unique<PrefetchingBatchStream>(std::make_unique<EndlessWindow>(), 4);
  EXPECT_EQ(Take(stream.get(), 2), (std::vector<int>{0, 1}));
  // The producer is inside the endless Next: Seek and destruction cancel it
  // rather than wait (without Cancel, this test would hang).
  stream->Seek({0, 0, 0});
  EXPECT_EQ(Take(stream.get(), 2), (std::vector<int>{0, 1}));
  const auto start = std::chrono::steady_clock::now();
  stream.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(PrefetchingBatchStreamTest, DestroyedWhileTheProducerWaits) {
  // The queue fills and the producer blocks; destruction must not hang.
  PrefetchingBatchStream stream(std::make_unique<CountingStream>(), 2);
  Take(&stream, 1);
}

}  // namespace
}  // namespace tfm

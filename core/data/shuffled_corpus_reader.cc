#include "core/data/shuffled_corpus_reader.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "core/philox.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// TokenBatcher's keys use streams 2 * epoch and 2 * epoch + 1; the top bit
// keeps the permutation's streams apart from them.
constexpr uint64_t kPermutationStream = uint64_t{1} << 63;

}  // namespace

std::vector<uint32_t> EpochPermutation(int64_t size, uint64_t seed, int64_t epoch) {
  std::vector<uint32_t> order(size);
  std::iota(order.begin(), order.end(), 0u);
  const uint64_t stream = kPermutationStream | static_cast<uint64_t>(epoch);
  for (int64_t i = size - 1; i > 0; --i) {
    const philox::Uint4 block = philox::Block(seed, stream, i);
    const uint64_t random = uint64_t{block.x} << 32 | block.y;
    // Lemire's multiply-shift: a uniform j in [0, i] without a division.
    const int64_t j = static_cast<int64_t>(
        (static_cast<unsigned __int128>(random) * static_cast<uint64_t>(i + 1)) >> 64);
    std::swap(order[i], order[j]);
  }
  return order;
}

absl::Status ShuffledCorpusReader::Skip(int64_t count) {
  next_ = std::min<int64_t>(next_ + count, order_.size());
  return absl::OkStatus();
}

std::string ShuffledCorpusReader::Where() const {
  if (next_ == 0) return std::string();
  return absl::StrCat(corpus_->path(), " pair ", order_[next_ - 1]);
}

absl::StatusOr<bool> ShuffledCorpusReader::Next(Example* example) {
  if (next_ == static_cast<int64_t>(order_.size())) return false;
  TFM_RETURN_IF_ERROR(corpus_->Read(order_[next_++], example));
  return true;
}

}  // namespace tfm

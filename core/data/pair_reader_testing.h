// Test helper: every pair a PairReader yields, failing the test on an error.
#ifndef TFM_CORE_DATA_PAIR_READER_TESTING_H_
#define TFM_CORE_DATA_PAIR_READER_TESTING_H_

#include <vector>

#include "core/data/pair_reader.h"
#include "gtest/gtest.h"

namespace tfm {
namespace testing {

inline std::vector<SentencePair> ReadPairs(PairReader* reader) {
  std::vector<SentencePair> pairs;
  SentencePair pair;
  while (true) {
    auto more = reader->Next(&pair);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return pairs;
    pairs.push_back(pair);
  }
}

}  // namespace testing
}  // namespace tfm

#endif  // TFM_CORE_DATA_PAIR_READER_TESTING_H_

// The deterministic embedding gradient's chunked row sums, run on the host:
// the same functions the CUDA kernels call, over every (chunk, column) a
// kernel's threads take. Each id's row must be stored exactly once, equal
// bit for bit to its positions summed in the documented order (each
// chunk's piece position by position, then the pieces in chunk order),
// whatever order the threads run in, and close to the exact sum.
#include "ops/embedding/embedding_sorted_sums.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace tfm {
namespace embedding_sorted_sums {
namespace {

constexpr int64_t kColumns = 3;

struct Grads {
  const std::vector<float>* values;  // [positions, kColumns]
  int64_t column;
  float operator()(int64_t k) const { return (*values)[k * kColumns + column]; }
};

// Every store by (id, column), and how often each was stored.
struct Rows {
  std::map<std::pair<int64_t, int64_t>, float> value;
  std::map<std::pair<int64_t, int64_t>, int> stores;
};

struct RowStore {
  Rows* rows;
  int64_t column;
  void operator()(int32_t id, float sum) const {
    rows->value[{id, column}] = sum;
    ++rows->stores[{id, column}];
  }
};

// Both passes over every (chunk, column), in thread order or reversed.
Rows RunPasses(const std::vector<int32_t>& sorted_ids, const std::vector<float>& grads,
               bool reversed) {
  const int64_t positions = static_cast<int64_t>(sorted_ids.size());
  const int64_t units = Chunks(positions) * kColumns;
  // NaN where nothing is written: a read of an unwritten piece shows.
  std::vector<float> entering(units, std::nanf("")), leaving(units, std::nanf(""));
  Rows rows;
  for (int pass = 1; pass <= 2; ++pass) {
    for (int64_t i = 0; i < units; ++i) {
      const int64_t u = reversed ? units - 1 - i : i;
      const int64_t chunk = u / kColumns, column = u % kColumns;
      if (pass == 1) {
        SumChunkRuns(sorted_ids.data(), positions, kColumns, chunk, column, Grads{&grads, column},
                     RowStore{&rows, column}, entering.data(), leaving.data());
      } else {
        JoinChunkPieces(sorted_ids.data(), positions, kColumns, chunk, column, entering.data(),
                        leaving.data(), RowStore{&rows, column});
      }
    }
  }
  return rows;
}

// Sorted ids made of runs of the given lengths (ids 0, 1, 2, ... skipping
// every third, so that some ids are absent), and random summands.
struct Case {
  std::vector<int32_t> sorted_ids;
  std::vector<float> grads;
};

Case FromRunLengths(const std::vector<int64_t>& lengths, uint32_t seed) {
  Case c;
  int32_t id = 0;
  for (const int64_t length : lengths) {
    c.sorted_ids.insert(c.sorted_ids.end(), length, id);
    id += id % 3 == 1 ? 2 : 1;
  }
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  c.grads.resize(c.sorted_ids.size() * kColumns);
  for (float& g : c.grads) g = uniform(generator);
  return c;
}

void ExpectDocumentedSums(const Case& c) {
  const int64_t positions = static_cast<int64_t>(c.sorted_ids.size());
  const Rows rows = RunPasses(c.sorted_ids, c.grads, /*reversed=*/false);
  const Rows reversed = RunPasses(c.sorted_ids, c.grads, /*reversed=*/true);
  int64_t ids = 0;
  for (int64_t begin = 0; begin < positions;) {
    const int32_t id = c.sorted_ids[begin];
    int64_t end = begin;
    while (end < positions && c.sorted_ids[end] == id) ++end;
    ++ids;
    for (int64_t column = 0; column < kColumns; ++column) {
      // The documented order: each chunk's piece from 0 in position order,
      // then the pieces left to right.
      float expected = 0.0f;
      double exact = 0.0;
      for (int64_t piece = begin; piece < end;) {
        const int64_t piece_end =
            std::min(end, (piece / kSortedSumsChunk + 1) * kSortedSumsChunk);
        float piece_sum = 0.0f;
        for (int64_t k = piece; k < piece_end; ++k) {
          piece_sum += c.grads[k * kColumns + column];
          exact += c.grads[k * kColumns + column];
        }
        expected = piece == begin ? piece_sum : expected + piece_sum;
        piece = piece_end;
      }
      SCOPED_TRACE(::testing::Message() << "id " << id << " at sorted positions [" << begin
                                        << ", " << end << ") column " << column);
      ASSERT_EQ(rows.stores.count({id, column}), 1u);
      EXPECT_EQ(rows.stores.at({id, column}), 1);
      EXPECT_EQ(rows.value.at({id, column}), expected);
      EXPECT_EQ(reversed.value.at({id, column}), expected);
      EXPECT_NEAR(rows.value.at({id, column}), exact, 1e-5 * (end - begin));
    }
    begin = end;
  }
  // No store for an id without positions.
  EXPECT_EQ(static_cast<int64_t>(rows.stores.size()), ids * kColumns);
  EXPECT_EQ(reversed.stores, rows.stores);
}

TEST(EmbeddingSortedSumsTest, OneIdOfEveryLengthAroundTheChunk) {
  for (const int64_t length : {1, 2, 31, 32, 33, 63, 64, 65, 96, 97, 5000}) {
    SCOPED_TRACE(::testing::Message() << "one id at " << length << " positions");
    ExpectDocumentedSums(FromRunLengths({length}, 1));
  }
}

// Runs that end exactly at a chunk's end, start exactly at one, fill whole
// chunks, and cross one or several.
TEST(EmbeddingSortedSumsTest, RunsAlignedWithAndAcrossChunkEnds) {
  ExpectDocumentedSums(FromRunLengths({32, 32, 64, 1, 31, 33, 96, 2, 30, 1, 1, 65}, 2));
  ExpectDocumentedSums(FromRunLengths({1, 31, 1, 63, 1, 1, 1, 29, 32, 32}, 3));
  ExpectDocumentedSums(FromRunLengths({5, 200, 3, 128, 7}, 4));
}

// A translation batch's shape: padding repeated thousands of times beside
// frequent words and many rare ones.
TEST(EmbeddingSortedSumsTest, PaddingBesideFrequentAndRareIds) {
  std::vector<int64_t> lengths = {4000, 700, 250};
  std::mt19937 generator(5);
  std::geometric_distribution<int64_t> rare(0.3);
  for (int i = 0; i < 1500; ++i) lengths.push_back(1 + rare(generator));
  ExpectDocumentedSums(FromRunLengths(lengths, 6));
}

TEST(EmbeddingSortedSumsTest, ChunksCoverThePositions) {
  EXPECT_EQ(Chunks(0), 0);
  EXPECT_EQ(Chunks(1), 1);
  EXPECT_EQ(Chunks(kSortedSumsChunk), 1);
  EXPECT_EQ(Chunks(kSortedSumsChunk + 1), 2);
  EXPECT_EQ(ChunkBegin(2), 2 * kSortedSumsChunk);
  EXPECT_EQ(ChunkEnd(0, 5), 5);
  EXPECT_EQ(ChunkEnd(1, 5 * kSortedSumsChunk), 2 * kSortedSumsChunk);
}

}  // namespace
}  // namespace embedding_sorted_sums
}  // namespace tfm

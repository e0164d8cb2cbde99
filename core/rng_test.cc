#include "core/rng.h"

#include <cmath>
#include <vector>

#include "core/philox.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

// Known-answer vectors published with Random123 (kat_vectors, philox4x32 10).
TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  philox::Uint4 zero = philox::Philox4x32_10({0, 0, 0, 0}, 0, 0);
  EXPECT_EQ(zero.x, 0x6627e8d5u);
  EXPECT_EQ(zero.y, 0xe169c58du);
  EXPECT_EQ(zero.z, 0xbc57ac4cu);
  EXPECT_EQ(zero.w, 0x9b00dbd8u);
  philox::Uint4 ones = philox::Philox4x32_10(
      {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, 0xffffffffu, 0xffffffffu);
  EXPECT_EQ(ones.x, 0x408f276du);
  EXPECT_EQ(ones.y, 0x41c83b0eu);
  EXPECT_EQ(ones.z, 0xa20bc7c6u);
  EXPECT_EQ(ones.w, 0x6d5451fdu);
  philox::Uint4 pi = philox::Philox4x32_10(
      {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(pi.x, 0xd16cfe09u);
  EXPECT_EQ(pi.y, 0x94fdccebu);
  EXPECT_EQ(pi.z, 0x5001e420u);
  EXPECT_EQ(pi.w, 0x24126ea1u);
}

std::vector<uint32_t> Bits(PhiloxState state, int n) {
  std::vector<uint32_t> out(n);
  FillBitsCpu(state, absl::MakeSpan(out));
  return out;
}

TEST(RngTest, SameSeedAndOffsetGiveSameNumbers) {
  EXPECT_EQ(Bits({7, 0, 3}, 1001), Bits({7, 0, 3}, 1001));
}

TEST(RngTest, OffsetSkipsWholeBlocks) {
  // Starting 2 blocks later is the same sequence shifted by 8 numbers.
  std::vector<uint32_t> from0 = Bits({7, 0, 0}, 40);
  std::vector<uint32_t> from2 = Bits({7, 0, 2}, 32);
  EXPECT_EQ(std::vector<uint32_t>(from0.begin() + 8, from0.end()), from2);
}

TEST(RngTest, DifferentSeedsAndStreamsDiffer) {
  std::vector<uint32_t> base = Bits({7, 0, 0}, 256);
  std::vector<uint32_t> other_seed = Bits({8, 0, 0}, 256);
  std::vector<uint32_t> other_stream = Bits({7, 1, 0}, 256);
  int same_seed = 0, same_stream = 0;
  for (int i = 0; i < 256; ++i) {
    same_seed += base[i] == other_seed[i];
    same_stream += base[i] == other_stream[i];
  }
  EXPECT_LE(same_seed, 1);  // Collisions of 32-bit words are ~1 in 4 billion.
  EXPECT_LE(same_stream, 1);
}

TEST(RngTest, ThreadedFillEqualsSerialDefinition) {
  // A large fill is split across threads; it must equal the per-element
  // definition computed here one block at a time.
  const int n = 100003;
  std::vector<uint32_t> threaded = Bits({11, 5, 9}, n);
  for (int i = 0; i < n; i += 997) {
    philox::Uint4 block = philox::Block(11, 5, 9 + i / 4);
    EXPECT_EQ(threaded[i], philox::Lane(block, i % 4)) << i;
  }
}

TEST(RngTest, GeneratorReservesDisjointRanges) {
  Generator generator(42);
  PhiloxState a = generator.Reserve(10);  // 3 blocks.
  PhiloxState b = generator.Reserve(4);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.offset, 3u);
  EXPECT_EQ(generator.offset(), 4u);
  EXPECT_NE(Bits(a, 4), Bits(b, 4));
}

TEST(RngTest, UniformMomentsAndRange) {
  std::vector<float> u(200000);
  FillUniformCpu({1, 0, 0}, -1.0f, 3.0f, absl::MakeSpan(u));
  double sum = 0, sum_sq = 0;
  for (float v : u) {
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 3.0f);
    sum += v;
    sum_sq += v * v;
  }
  const double mean = sum / u.size();
  const double var = sum_sq / u.size() - mean * mean;
  EXPECT_NEAR(mean, 1.0, 0.01);
  EXPECT_NEAR(var, 16.0 / 12.0, 0.02);
}

TEST(RngTest, NormalMoments) {
  std::vector<float> z(200000);
  FillNormalCpu({2, 0, 0}, 0.5f, 2.0f, absl::MakeSpan(z));
  double sum = 0, sum_sq = 0;
  for (float v : z) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sum_sq += v * v;
  }
  const double mean = sum / z.size();
  const double var = sum_sq / z.size() - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.02);
  EXPECT_NEAR(var, 4.0, 0.05);
}

}  // namespace
}  // namespace tfm

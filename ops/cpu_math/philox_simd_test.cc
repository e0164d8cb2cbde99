#include "ops/cpu_math/philox_simd.h"

#include <cstdint>
#include <vector>

#include "core/philox.h"
#include "core/rng.h"
#include "gtest/gtest.h"
#include "ops/cpu_math/isa.h"

// Compiled once per instruction set (tfm_isa_test): kLanes blocks a call.
TFM_ISA_BEGIN
namespace simd {
namespace {

// The vector generator must reproduce philox::Block word for word: dropout
// regenerates its mask with either one.
void ExpectMatchesScalar(uint64_t seed, uint64_t stream, uint64_t first_block) {
  uint32_t words[kPhiloxWords];
  PhiloxWords(seed, stream, first_block, words);
  for (int i = 0; i < kPhiloxWords; ++i) {
    const philox::Uint4 block = philox::Block(seed, stream, first_block + i / 4);
    ASSERT_EQ(words[i], philox::Lane(block, i % 4))
        << "seed " << seed << " stream " << stream << " block " << first_block << " word " << i;
  }
}

TEST(PhiloxSimdTest, MatchesScalarBlocks) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{21}, uint64_t{0xFFFFFFFFFFFFFFFF},
                        uint64_t{0x123456789ABCDEF0}}) {
    for (uint64_t stream : {uint64_t{0}, uint64_t{3}, uint64_t{0xDEADBEEF00000007}}) {
      for (uint64_t block : {uint64_t{0}, uint64_t{1}, uint64_t{1000}, uint64_t{12345677}}) {
        ExpectMatchesScalar(seed, stream, block);
      }
    }
  }
}

TEST(PhiloxSimdTest, CarriesIntoTheHighCounterWord) {
  // Runs that straddle 2^32 and wrap past 2^64 - 1.
  ExpectMatchesScalar(7, 1, (uint64_t{1} << 32) - 3);
  ExpectMatchesScalar(7, 1, (uint64_t{5} << 32) - 8);
  ExpectMatchesScalar(7, 1, ~uint64_t{0} - 2);
}

TEST(PhiloxSimdTest, ToUniformMatchesScalar) {
  uint32_t words[kPhiloxWords];
  PhiloxWords(5, 9, 77, words);
  words[0] = 0;
  words[1] = 0xFFFFFFFFu;
  words[2] = 0xFF;
  words[3] = 0x100;
  for (int k = 0; k < 4; ++k) {
    float uniforms[kLanes];
    Store(ToUniform(LoadI(words + kLanes * k)), uniforms);
    for (int j = 0; j < kLanes; ++j) EXPECT_EQ(uniforms[j], philox::ToUniform(words[kLanes * k + j]));
  }
}

// Every element of every run gets the scalar generator's decision exactly
// once, whatever the run's start (on or off a block boundary) and length
// (shorter than a vector, whole runs, a ragged end), from the vector or the
// scalar body.
TEST(PhiloxSimdTest, ForEachKeepDecidesEveryElementAsTheScalarGenerator) {
  const PhiloxState state{0x5EED, 3, 1000};
  const float threshold = 0.3f;
  for (int64_t first : {0, 1, 2, 3, 4, 7, 1001}) {
    for (int64_t n : {0, 1, 3, 5, 15, 16, 17, 31, 48, 63, 64, 65, 130, 200}) {
      std::vector<int> calls(n, 0), kept(n, -1);
      ForEachKeep(
          state, threshold, first, n,
          [&](int64_t j, Mask keep) {
            ASSERT_LE(j + kLanes, n) << "first " << first << " n " << n;
            const uint32_t bits = Bits(keep);
            for (int l = 0; l < kLanes; ++l) {
              ++calls[j + l];
              kept[j + l] = (bits >> l) & 1;
            }
          },
          [&](int64_t j, bool keep) {
            ASSERT_LT(j, n) << "first " << first << " n " << n;
            ++calls[j];
            kept[j] = keep;
          });
      for (int64_t j = 0; j < n; ++j) {
        const int64_t i = first + j;
        const philox::Uint4 block = philox::Block(state.seed, state.stream, state.offset + i / 4);
        const bool expected = philox::ToUniform(philox::Lane(block, i % 4)) >= threshold;
        ASSERT_EQ(calls[j], 1) << "first " << first << " n " << n << " element " << j;
        ASSERT_EQ(kept[j], expected) << "first " << first << " n " << n << " element " << j;
      }
    }
  }
}

}  // namespace
}  // namespace simd
TFM_ISA_END

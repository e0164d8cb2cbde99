#include "ops/cpu_math/philox_simd.h"

#include <cstdint>

#include "core/philox.h"
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

}  // namespace
}  // namespace simd
TFM_ISA_END

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011): a counter-based generator. Every random number is a pure
// function of (seed, stream, offset, index), so the CPU and a CUDA kernel
// produce the same numbers, any element can be regenerated on its own (the
// dropout mask in backward), and parallel threads need no shared state.
//
// This header is plain C++ so that nvcc compiles it into CUDA kernels too.
#ifndef TFM_CORE_PHILOX_H_
#define TFM_CORE_PHILOX_H_

#include <cstdint>

#include "core/host_device.h"

namespace tfm {
namespace philox {

struct Uint4 {
  uint32_t x, y, z, w;
};

TFM_HOST_DEVICE void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
}

// One block of 4 random words for a 128-bit counter and 64-bit key.
TFM_HOST_DEVICE Uint4 Philox4x32_10(Uint4 counter, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kMul0 = 0xD2511F53u;
  constexpr uint32_t kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u;
  constexpr uint32_t kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kMul0, counter.x, &hi0, &lo0);
    MulHiLo(kMul1, counter.z, &hi1, &lo1);
    counter = Uint4{hi1 ^ counter.y ^ key0, lo1, hi0 ^ counter.w ^ key1, lo0};
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return counter;
}

// The block holding element `block` of a stream: the counter is
// (offset + block) in its low 64 bits and the stream id in its high 64 bits,
// the key is the seed. Distinct streams never share a counter.
TFM_HOST_DEVICE Uint4 Block(uint64_t seed, uint64_t stream, uint64_t block) {
  return Philox4x32_10(
      Uint4{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
            static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

TFM_HOST_DEVICE uint32_t Lane(const Uint4& block, int lane) {
  return lane == 0 ? block.x : lane == 1 ? block.y : lane == 2 ? block.z : block.w;
}

// Uniform in [0, 1) with 24 random bits: exact in float on every device.
TFM_HOST_DEVICE float ToUniform(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// Uniform in (0, 1]: safe to take the logarithm of.
TFM_HOST_DEVICE float ToUniformPositive(uint32_t bits) {
  return static_cast<float>((bits >> 8) + 1u) * (1.0f / 16777216.0f);
}

}  // namespace philox
}  // namespace tfm

#endif  // TFM_CORE_PHILOX_H_

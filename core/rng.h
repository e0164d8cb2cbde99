// Seeded random number streams built on Philox.
//
// A stream is (seed, stream id); element i of a draw starting at `offset`
// (counted in Philox blocks of 4 numbers) comes from block offset + i / 4,
// lane i % 4. Kernels on any device that follow this layout agree exactly.
#ifndef TFM_CORE_RNG_H_
#define TFM_CORE_RNG_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/attrs.h"

namespace tfm {

struct PhiloxState {
  uint64_t seed = 0;
  uint64_t stream = 0;
  uint64_t offset = 0;  // In blocks of 4 numbers.
};

// Hands out non-overlapping ranges of one stream: each Reserve(n) returns the
// state for n numbers and advances past them, so a later draw (another dropout
// layer, the next step) never reuses a block. Keep the returned state to
// regenerate the same numbers (dropout backward).
class Generator {
 public:
  explicit Generator(uint64_t seed, uint64_t stream = 0) : seed_(seed), stream_(stream) {}
  PhiloxState Reserve(int64_t count);
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t offset) { offset_ = offset; }  // For exact resume.

 private:
  uint64_t seed_;
  uint64_t stream_;
  uint64_t offset_ = 0;
};

// Ops that draw random numbers take the state as attributes "seed",
// "stream" and "offset" (64-bit patterns stored in int64 attributes).
void SetPhiloxAttrs(const PhiloxState& state, Attrs* attrs);
// Reads them back; "stream" and "offset" default to 0.
absl::StatusOr<PhiloxState> PhiloxStateFromAttrs(const Attrs& attrs);

// Host reference fills (threaded). The CUDA kernels produce identical values
// for the uniform fill and values within float rounding for the normal fill.
void FillUniformCpu(const PhiloxState& state, float low, float high, absl::Span<float> out);
void FillNormalCpu(const PhiloxState& state, float mean, float stddev, absl::Span<float> out);
void FillBitsCpu(const PhiloxState& state, absl::Span<uint32_t> out);

}  // namespace tfm

#endif  // TFM_CORE_RNG_H_

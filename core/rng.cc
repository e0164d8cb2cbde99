#include "core/rng.h"

#include <cmath>

#include "core/philox.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"

namespace tfm {
namespace {

// Calls fn(index, block) for each element, one Philox block per 4 elements.
// Work is split on block boundaries so every thread computes whole blocks.
template <typename Fn>
void ForEachElement(const PhiloxState& state, int64_t count, Fn fn) {
  const int64_t num_blocks = (count + 3) / 4;
  ThreadPool::Default()->ParallelFor(num_blocks, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const philox::Uint4 block = philox::Block(state.seed, state.stream, state.offset + b);
      for (int lane = 0; lane < 4 && b * 4 + lane < count; ++lane) {
        fn(b * 4 + lane, block, lane);
      }
    }
  });
}

}  // namespace

PhiloxState Generator::Reserve(int64_t count) {
  PhiloxState state{seed_, stream_, offset_};
  offset_ += static_cast<uint64_t>((count + 3) / 4);
  return state;
}

void SetPhiloxAttrs(const PhiloxState& state, Attrs* attrs) {
  attrs->Set("seed", static_cast<int64_t>(state.seed))
      .Set("stream", static_cast<int64_t>(state.stream))
      .Set("offset", static_cast<int64_t>(state.offset));
}

absl::StatusOr<PhiloxState> PhiloxStateFromAttrs(const Attrs& attrs) {
  TFM_ASSIGN_OR_RETURN(int64_t seed, attrs.Get<int64_t>("seed"));
  TFM_ASSIGN_OR_RETURN(int64_t stream, attrs.GetOr<int64_t>("stream", 0));
  TFM_ASSIGN_OR_RETURN(int64_t offset, attrs.GetOr<int64_t>("offset", 0));
  return PhiloxState{static_cast<uint64_t>(seed), static_cast<uint64_t>(stream),
                     static_cast<uint64_t>(offset)};
}

void FillBitsCpu(const PhiloxState& state, absl::Span<uint32_t> out) {
  ForEachElement(state, out.size(), [&](int64_t i, const philox::Uint4& block, int lane) {
    out[i] = philox::Lane(block, lane);
  });
}

void FillUniformCpu(const PhiloxState& state, float low, float high, absl::Span<float> out) {
  const float range = high - low;
  ForEachElement(state, out.size(), [&](int64_t i, const philox::Uint4& block, int lane) {
    out[i] = low + range * philox::ToUniform(philox::Lane(block, lane));
  });
}

void FillNormalCpu(const PhiloxState& state, float mean, float stddev, absl::Span<float> out) {
  // Box-Muller on lanes (0, 1) and (2, 3) of each block: element i uses the
  // pair its lane belongs to, cosine for even lanes and sine for odd ones.
  ForEachElement(state, out.size(), [&](int64_t i, const philox::Uint4& block, int lane) {
    const int first = lane & ~1;
    const float u1 = philox::ToUniformPositive(philox::Lane(block, first));
    const float u2 = philox::ToUniform(philox::Lane(block, first + 1));
    const float radius = std::sqrt(-2.0f * std::log(u1));
    const float angle = 6.2831853071795864769f * u2;
    out[i] = mean + stddev * radius * ((lane & 1) ? std::sin(angle) : std::cos(angle));
  });
}

}  // namespace tfm

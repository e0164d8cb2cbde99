// The vector quantizations of one row (int8_quantize_rows.h), written once
// over an instruction set's few operations. Each int8_quantize_rows_<isa>.cc
// includes it inside its `#pragma GCC target` region and an anonymous
// namespace (for the reasons int8_panels_body.h gives), after defining
// `struct Isa` with:
//   kLanes                          floats of a vector (8 or 16)
//   F, I, Mask                      float vector, int32 vector, lane mask
//   Mask LanesBelow(k, in)          lanes k .. k + kLanes - 1 below `in`
//   Mask NoLanes()
//   F Load(const float* x, Mask m)  masked-off lanes 0 (and never read)
//   F Set(float v), Add, Mul, Div   plain IEEE arithmetic
//   F Min(F v, F bound), Max(F v, F bound)  bound where v is NaN (as
//                                   std::min(bound, v) and std::max)
//   F Abs(F v), F PlusHalfAwayFromZero(F v)  v + copysign(0.5, v)
//   I Truncate(F v, Mask m)         toward zero; 0 in masked-off lanes
//   float ReduceMin(F), ReduceMax(F); I AddI(I, I); int32_t ReduceAdd(I)
//   __m128i PackU8(I), PackS8(I)    the lanes as bytes, in the low kLanes
// The arithmetic is the scalar reference's, operation for operation, so
// both give the same bytes (int8_quantize_rows_test).
#ifndef TFM_OPS_QUANTIZED_LINEAR_INT8_QUANTIZE_ROWS_BODY_H_
#define TFM_OPS_QUANTIZED_LINEAR_INT8_QUANTIZE_ROWS_BODY_H_

// Groups of 4 levels a vector holds.
constexpr int64_t kGroupsPerVector = Isa::kLanes / 4;

// The first `count` (<= kGroupsPerVector) groups of 4 bytes of `bytes` to
// `to`, `stride` bytes apart.
inline void StoreGroups(__m128i bytes, int64_t count, int64_t stride, void* to) {
  char* out = static_cast<char*>(to);
  alignas(16) char groups[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(groups), bytes);
  if (stride == 4 && count == kGroupsPerVector) {  // One row: its groups are contiguous.
    __builtin_memcpy(out, groups, Isa::kLanes);
    return;
  }
  for (int64_t j = 0; j < count; ++j) __builtin_memcpy(out + j * stride, groups + 4 * j, 4);
}

inline int64_t GroupsLeft(int64_t g, int64_t groups) {
  return groups - g < kGroupsPerVector ? groups - g : kGroupsPerVector;
}

void QuantizeActivationRow(const float* x, int64_t in, int64_t groups, int64_t group_stride,
                           int levels, uint8_t* u, int32_t* zero_point, float* scale) {
  // Masked-off lanes load 0, which leaves min(0, x) and max(0, x) as they are.
  typename Isa::F lo = Isa::Set(0.0f), hi = Isa::Set(0.0f);
  for (int64_t k = 0; k < in; k += Isa::kLanes) {
    const typename Isa::F v = Isa::Load(x + k, Isa::LanesBelow(k, in));
    lo = Isa::Min(v, lo);
    hi = Isa::Max(v, hi);
  }
  const Int8RowScale s = Int8RowScaleFor(Isa::ReduceMin(lo), Isa::ReduceMax(hi), levels);
  const typename Isa::F inverse = Isa::Set(s.inverse), zp = Isa::Set(s.zero_point);
  const typename Isa::F top = Isa::Set(static_cast<float>(levels));
  const typename Isa::F half = Isa::Set(0.5f), zero = Isa::Set(0.0f);
  for (int64_t g = 0; g < groups; g += kGroupsPerVector) {
    const typename Isa::Mask valid = Isa::LanesBelow(4 * g, in);
    typename Isa::F v = Isa::Add(Isa::Mul(Isa::Load(x + 4 * g, valid), inverse), zp);
    v = Isa::Add(Isa::Min(Isa::Max(v, zero), top), half);
    // Levels past `in` are 0 (masked off in the conversion).
    StoreGroups(Isa::PackU8(Isa::Truncate(v, valid)), GroupsLeft(g, groups), group_stride,
                u + g * group_stride);
  }
  *zero_point = static_cast<int32_t>(s.zero_point);
  *scale = s.scale;
}

void QuantizeWeightRow(const float* w, int64_t in, int64_t groups, int64_t group_stride, int8_t* q,
                       float* scale, int32_t* level_sum) {
  typename Isa::F largest = Isa::Set(0.0f);
  for (int64_t k = 0; k < in; k += Isa::kLanes) {
    largest = Isa::Max(Isa::Abs(Isa::Load(w + k, Isa::LanesBelow(k, in))), largest);
  }
  const float s = Isa::ReduceMax(largest) / 127.0f;
  const typename Isa::F step = Isa::Set(s), limit = Isa::Set(127.0f);
  const typename Isa::F negative_limit = Isa::Set(-127.0f);
  typename Isa::I sum = Isa::Truncate(Isa::Set(0.0f), Isa::NoLanes());
  for (int64_t g = 0; g < groups; g += kGroupsPerVector) {
    // All levels 0 past `in`, and everywhere in a row of zeros.
    const typename Isa::Mask valid = s > 0 ? Isa::LanesBelow(4 * g, in) : Isa::NoLanes();
    typename Isa::F v = Isa::Div(Isa::Load(w + 4 * g, valid), step);
    // Half away from zero by truncation (a -0 gets -0.5 where the scalar
    // adds 0.5; both truncate to 0).
    v = Isa::PlusHalfAwayFromZero(Isa::Max(Isa::Min(v, limit), negative_limit));
    const typename Isa::I levels = Isa::Truncate(v, valid);
    sum = Isa::AddI(sum, levels);
    StoreGroups(Isa::PackS8(levels), GroupsLeft(g, groups), group_stride, q + g * group_stride);
  }
  *scale = s;
  *level_sum = Isa::ReduceAdd(sum);
}

#endif  // TFM_OPS_QUANTIZED_LINEAR_INT8_QUANTIZE_ROWS_BODY_H_

// Forward for a few query rows per head (q_len <= kMaxRowwiseQueries): a
// decoder step against its KV cache (one row), or a beam's rows against
// their sentence's encoder output (the beam's width). The tile loops would
// spend a 64-row query tile, and the packed kernels a transposed copy of K,
// on a handful of rows; here each query row is two matrix-vector passes
// instead: one over K (scores, with their max on the way) and one over V
// (the probability-weighted sum), with the exponentials in between taken
// over a scores row that stays in L1. Same masks, dropout layout, lse and
// empty-row convention as the tile loops (attention.h). Keys and values
// may be f16 (a decoding cache kept in 16 bits, half the bytes a step
// reads), widened to f32 as they load; the arithmetic stays f32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/check.h"
#include "core/dtype.h"
#include "core/thread_pool.h"
#include "ops/attention/attention_cpu_tiles.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/simd_math.h"
#include "ops/cpu_math/vec.h"

TFM_ISA_BEGIN
namespace attention_cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Below this many floats of K and V over all heads, waking the pool costs
// more than it saves (a few microseconds against ~0.1 ns per float).
constexpr int64_t kMinParallelFloats = int64_t{1} << 17;

// Key (or value) j of a row: the rows of one head's contiguous [k_len, d]
// slice, or, with key rows, each position from its own batch item. T is
// float, or uint16_t for f16 caches (Half's bits, widened as they load).
template <typename T>
struct Rows {
  const T* base;   // Position 0 of the row's own head.
  int64_t d;       // Elements per position.
  const T* const* at = nullptr;  // Per position (key rows), or null.
  const T* operator()(int64_t j) const { return at != nullptr ? at[j] : base + j * d; }
};

// A vector of a key or value row as floats.
inline simd::VecF LoadRow(const float* p) { return simd::Load(p); }
inline simd::VecF LoadRow(const uint16_t* p) { return simd::LoadHalf(p); }
inline simd::VecF LoadRowFirst(const float* p, int64_t n) { return simd::LoadFirst(p, n); }
inline simd::VecF LoadRowFirst(const uint16_t* p, int64_t n) {
  return simd::LoadFirstHalf(p, n);
}
inline float RowValue(float x) { return x; }
inline float RowValue(uint16_t bits) {
  Half half;
  half.bits = bits;
  return static_cast<float>(half);
}

// acc[r] = the lanes of q . k_{j0 + r} for r < kKeys, not yet summed
// across: one FMA chain a key (kKeys of them in flight), in the order of
// simd::Dot.
template <int kKeys, typename T>
inline void KeyChains(const float* q, const Rows<T>& k, int64_t j0, int64_t d, simd::VecF* acc) {
  using namespace simd;  // NOLINT: the vector layer's small vocabulary.
  const int64_t whole = d / kLanes * kLanes;
  const T* key[kKeys];
#pragma GCC unroll 4
  for (int r = 0; r < kKeys; ++r) {
    key[r] = k(j0 + r);
    acc[r] = Zero();
  }
  for (int64_t c = 0; c < whole; c += kLanes) {
    const VecF qc = Load(q + c);
#pragma GCC unroll 4
    for (int r = 0; r < kKeys; ++r) acc[r] = MulAdd(qc, LoadRow(key[r] + c), acc[r]);
  }
  if (whole < d) {
    const VecF qc = LoadFirst(q + whole, d - whole);
#pragma GCC unroll 4
    for (int r = 0; r < kKeys; ++r) {
      acc[r] = MulAdd(qc, LoadRowFirst(key[r] + whole, d - whole), acc[r]);
    }
  }
}

// scores[j0 + r] = scale * q . k_{j0 + r} for r < kKeys.
template <int kKeys, typename T>
inline void ScoreKeys(const float* q, const Rows<T>& k, int64_t j0, int64_t d, float scale,
                      float* scores) {
  simd::VecF acc[kKeys];
  KeyChains<kKeys>(q, k, j0, d, acc);
  for (int r = 0; r < kKeys; ++r) scores[j0 + r] = scale * simd::ReduceSum(acc[r]);
}

// The same for kLanes keys: their chains four keys at a time, then their
// kLanes horizontal sums together (simd::ReduceSums, the same bits as one
// ReduceSum a key in a third of the instructions, which at d = 64 cost
// more than the key's FMAs).
template <typename T>
inline void ScoreKeyBlock(const float* q, const Rows<T>& k, int64_t j0, int64_t d, float scale,
                          float* scores) {
  using namespace simd;  // NOLINT
  VecF acc[kLanes];
  for (int r = 0; r < kLanes; r += 4) KeyChains<4>(q, k, j0 + r, d, acc + r);
  Store(Set(scale) * ReduceSums(acc), scores + j0);
}

// scores[j] = scale * q . k_j for the n keys: blocks of kLanes keys, then
// four keys per pass (four independent FMA chains in flight: one dot
// product at a time would wait on the FMA latency at every step of a
// 64-wide row), then one. Every key's score is the same bits whichever
// pass takes it.
template <typename T>
void ScaledScores(const float* q, const Rows<T>& k, int64_t n, int64_t d, float scale,
                  float* scores) {
  int64_t j = 0;
  for (; j + simd::kLanes <= n; j += simd::kLanes) ScoreKeyBlock(q, k, j, d, scale, scores);
  for (; j + 4 <= n; j += 4) ScoreKeys<4>(q, k, j, d, scale, scores);
  for (; j < n; ++j) ScoreKeys<1>(q, k, j, d, scale, scores);
}

// out = sum_j weights[j] * v_j over the n rows of v (d apart). Columns go in
// blocks of four vectors and keys in pairs, so eight FMA chains run at once
// while a block of out stays in registers.
template <typename T>
void WeightedRowSum(const float* weights, const Rows<T>& v, int64_t n, int64_t d, float* out) {
  using namespace simd;  // NOLINT
  constexpr int64_t kBlock = 4 * kLanes;
  int64_t c = 0;
  for (; c + kBlock <= d; c += kBlock) {
    // The loops over i unrolled, so that the eight sums stay in registers
    // (GCC otherwise kept them on the stack: a store and a load around
    // every FMA).
    VecF even[4], odd[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) even[i] = odd[i] = Zero();
    int64_t j = 0;
    for (; j + 2 <= n; j += 2) {
      const VecF w0 = Set(weights[j]), w1 = Set(weights[j + 1]);
      const T* v0 = v(j) + c;
      const T* v1 = v(j + 1) + c;
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        even[i] = MulAdd(w0, LoadRow(v0 + kLanes * i), even[i]);
        odd[i] = MulAdd(w1, LoadRow(v1 + kLanes * i), odd[i]);
      }
    }
    if (j < n) {
      const VecF w = Set(weights[j]);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) even[i] = MulAdd(w, LoadRow(v(j) + c + kLanes * i), even[i]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) Store(even[i] + odd[i], out + c + kLanes * i);
  }
  if (c == d) return;
  std::fill(out + c, out + d, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = c; i < d; ++i) out[i] += weights[j] * RowValue(v(j)[i]);
  }
}

// Query row `row` = bh * q_len + i (row i of head bh): out [d_v] and lse.
// `scores` holds k_len floats, `multipliers` too when there is dropout;
// `pointers` 2 * k_len with key rows. T: the keys' and values' element (k
// and v, or k_f16 and v_f16).
template <typename T>
void AttendOneRow(const Problem& problem, const T* k, const T* v, int64_t row, float* scores,
                  float* multipliers, const T** pointers, float* out, float* lse) {
  const AttentionParams& p = problem.params;
  const int64_t bh = row / p.q_len, i = row % p.q_len;
  const int64_t b = bh / p.heads;
  // Keys past the row's end are masked (padding, or causally later); the
  // mask below removes any others.
  const int64_t end = problem.RowKeyEnd(b, i);
  Rows<T> keys{k + bh * p.k_len * p.d_k, p.d_k};
  Rows<T> values{v + bh * p.k_len * p.d_v, p.d_v};
  if (problem.key_rows != nullptr) {
    // Position j of this head from batch item key_rows[b, j].
    const int32_t* from = problem.key_rows + b * p.k_len;
    const int64_t h = bh % p.heads;
    for (int64_t j = 0; j < end; ++j) {
      const int64_t source = from[j] * p.heads + h;
      pointers[j] = k + (source * p.k_len + j) * p.d_k;
      pointers[p.k_len + j] = v + (source * p.k_len + j) * p.d_v;
    }
    keys.at = pointers;
    values.at = pointers + p.k_len;
  }
  ScaledScores(problem.q_rows.data + row * p.d_k, keys, end, p.d_k, p.scale, scores);
  MaskScores(problem, b, i, 1, 0, end, scores, end);
  const float max = simd::Max(scores, end);
  if (max == kNegInf) {  // No visible key (also end == 0): zero out, lse -inf.
    std::memset(out, 0, p.d_v * sizeof(float));
    *lse = kNegInf;
    return;
  }
  const float sum = simd::ExpShiftedSum(scores, end, max);
  // Dropout drops probabilities after normalisation (the sum counts every
  // key), exactly as in the tile loops.
  if (p.dropout > 0.0f) {
    DropoutMultipliers(p, row * p.k_len, end, multipliers);
    for (int64_t j = 0; j < end; ++j) scores[j] *= multipliers[j];
  }
  WeightedRowSum(scores, values, end, p.d_v, out);
  simd::Scale(out, p.d_v, 1.0f / sum);
  *lse = max + std::log(sum);
}

// ForwardRowwise over keys and values of element T.
template <typename T>
void ForwardRowwiseOf(const Problem& problem, const T* k, const T* v, float* out, float* lse) {
  const AttentionParams& p = problem.params;
  const int64_t rows_total = p.batch * p.heads * p.q_len;
  const int64_t scratch = p.dropout > 0.0f ? 2 * p.k_len : p.k_len;
  const auto run = [&](int64_t begin, int64_t end) {
    std::vector<float> buffer(std::max<int64_t>(scratch, 1));
    std::vector<const T*> pointers(problem.key_rows != nullptr ? 2 * p.k_len : 0);
    for (int64_t row = begin; row < end; ++row) {
      AttendOneRow(problem, k, v, row, buffer.data(), buffer.data() + p.k_len, pointers.data(),
                   out + row * p.d_v, lse + row);
    }
  };
  ThreadPool* pool = ThreadPool::Default();
  // Counted in elements whatever their width (the threshold was set for
  // f32 keys and values, and not measured again for f16 ones).
  if (rows_total * p.k_len * (p.d_k + p.d_v) < kMinParallelFloats || pool->num_threads() == 1) {
    run(0, rows_total);
    return;
  }
  pool->ParallelFor(rows_total, 1, run);
}

}  // namespace

void ForwardRowwise(const Problem& problem, float* out, float* lse) {
  const AttentionParams& p = problem.params;
  TFM_CHECK(p.q_len >= 1 && (p.q_len <= kMaxRowwiseQueries || problem.k_f16 != nullptr),
            "ForwardRowwise takes 1 .. kMaxRowwiseQueries query rows per head (any with f16 "
            "keys)");
  if (problem.k_f16 != nullptr) {
    ForwardRowwiseOf(problem, problem.k_f16, problem.v_f16, out, lse);
  } else {
    ForwardRowwiseOf(problem, problem.k_rows.data, problem.v_rows.data, out, lse);
  }
}

}  // namespace attention_cpu
TFM_ISA_END

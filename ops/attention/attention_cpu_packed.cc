// The attention tile loops on our own vector micro-kernel
// (attention_cpu_microkernel.h) for head sizes that are multiples of 16
// (the base model's 64 among them). Same algorithm and same task split as
// attention_cpu_forward.cc and attention_cpu_backward.cc, with three
// differences that make the tiles cheaper:
//   - products read their operands in place, or from a K^T / V^T copy made
//     once per key tile, instead of paying BLAS's per-call packing;
//   - scores are in base-2 units: scale * log2(e) is folded into the K^T
//     copy, so the softmax runs on 2^x (Exp2), and lse converts at the
//     edges (lse = ln 2 * lse_2);
//   - the backward's transposed products (dV += P^T dO, dK += dS^T Q) read
//     P and dS transposed in place, so nothing else is copied.
#include <cmath>
#include <limits>
#include <memory>

#include "ops/attention/attention_cpu_microkernel.h"
#include "ops/attention/attention_cpu_tiles.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/simd_math.h"

TFM_ISA_BEGIN
namespace attention_cpu {

bool UsePackedKernels(const AttentionParams& p) {
  return p.d_k % 16 == 0 && p.d_v % 16 == 0 && p.d_k <= kMaxPackedHeadSize &&
         p.d_v <= kMaxPackedHeadSize;
}

namespace {

constexpr float kLog2E = 1.44269504088896341f;
constexpr float kLn2 = 0.693147180559945309f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Tile extents of the packed kernels. 96 query rows (whole 6-row blocks)
// or 128 keys measured the same within noise at n = 64..1024 and waste
// more work on the diagonal tiles of a causal mask, so 64 x 64 stays.
constexpr int64_t kTileRows = 64;
constexpr int64_t kTileCols = 64;

int64_t RoundUp16(int64_t x) { return (x + 15) / 16 * 16; }

// Transposes the 8 x 8 block in rows[0..8) in registers. 256-bit in both
// builds (AVX-512 includes AVX2): packing is a small part of a tile's work.
inline void Transpose8x8(__m256 rows[8]) {
  // Interleave pairs of rows, then pairs of pairs, then swap 128-bit halves.
  __m256 t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(rows[2 * i], rows[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(rows[2 * i], rows[2 * i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    rows[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    rows[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// dst[kk * kTileCols + j] = factor * src[j * ld + kk] for kk < d, j < cols
// (d a multiple of 8); the columns up to the next multiple of 16 are zeroed, so
// products over them read finite values (the kernels never use their
// results). 8 x 8 blocks go through registers: a scalar transpose would
// cost a sizeable fraction of a small tile's products.
void PackTransposed(const float* src, int64_t ld, int64_t cols, int64_t d, float factor,
                    float* dst) {
  const __m256 vfactor = _mm256_set1_ps(factor);
  int64_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    for (int64_t kk = 0; kk < d; kk += 8) {
      __m256 block[8];
      for (int i = 0; i < 8; ++i) block[i] = _mm256_loadu_ps(src + (j + i) * ld + kk);
      Transpose8x8(block);
      for (int i = 0; i < 8; ++i) {
        _mm256_storeu_ps(dst + (kk + i) * kTileCols + j, _mm256_mul_ps(block[i], vfactor));
      }
    }
  }
  const int64_t width = RoundUp16(cols);
  for (int64_t kk = 0; kk < d; ++kk) {
    float* row = dst + kk * kTileCols;
    for (int64_t jj = j; jj < cols; ++jj) row[jj] = factor * src[jj * ld + kk];
    std::fill(row + cols, row + width, 0.0f);
  }
}

// ds[j] = scale * p[j] * (dp[j] - delta) for j < n.
void ScoreGradient(const float* p, float* dp, int64_t n, float delta, float scale) {
  const simd::VecF vdelta = simd::Set(delta), vscale = simd::Set(scale);
  simd::ForEachVector(0, n, [&](int64_t j, auto lanes) {
    using simd::Load;
    simd::Store((Load(p + j, lanes) * vscale) * (Load(dp + j, lanes) - vdelta), dp + j, lanes);
  });
}

}  // namespace

void ForwardPacked(const Problem& problem, const HeadRows<float>& out, float* lse) {
  const AttentionParams& p = problem.params;
  const int64_t heads_total = p.batch * p.heads;
  const int64_t k_tiles = (p.k_len + kTileCols - 1) / kTileCols;
  const int64_t packed_tile = p.d_k * kTileCols;
  const int64_t q_tiles = (p.q_len + kTileRows - 1) / kTileRows;
  // K^T of every key tile, scaled, packed once for all the query tiles that
  // read it (packing inside each query task would repeat it q_tiles times).
  // With one query tile per head each packed tile has one reader: the task
  // packs it itself, into its scratch, just before using it.
  const bool pack_in_task = q_tiles == 1;
  std::unique_ptr<float[]> k_packed(pack_in_task ? nullptr
                                                 : new float[heads_total * k_tiles * packed_tile]);
  if (!pack_in_task) {
    ThreadPool::Default()->ParallelFor(heads_total * k_tiles, 4, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t bh = t / k_tiles, c0 = (t % k_tiles) * kTileCols;
        const HeadRows<const float>& k = problem.k_rows;
        PackTransposed(k.Head(bh) + c0 * k.ld(), k.ld(), std::min(kTileCols, p.k_len - c0), p.d_k,
                       p.scale * kLog2E, k_packed.get() + t * packed_tile);
      }
    });
  }

  const int64_t scratch = kTileRows * kTileCols + kTileCols + 2 * kTileRows + packed_tile;
  ParallelTasks(heads_total * q_tiles, scratch, [&](int64_t task, float* buffer) {
    const int64_t bh = task / q_tiles;
    const int64_t b = bh / p.heads;
    const int64_t q0 = (task % q_tiles) * kTileRows;
    const int64_t rows = std::min(kTileRows, p.q_len - q0);
    const int64_t ld_q = problem.q_rows.ld(), ld_k = problem.k_rows.ld();
    const int64_t ld_v = problem.v_rows.ld(), ld_o = out.ld();
    const float* q = problem.q_rows.Head(bh) + q0 * ld_q;
    const float* v = problem.v_rows.Head(bh);
    float* o = out.Head(bh) + q0 * ld_o;
    float* scores = buffer;
    float* multipliers = scores + kTileRows * kTileCols;
    float* row_max = multipliers + kTileCols;  // Base 2.
    float* row_sum = row_max + kTileRows;
    float* k_t = row_sum + kTileRows;  // Used when pack_in_task.

    ZeroRows(o, rows, ld_o, p.d_v);
    std::fill(row_max, row_max + rows, kNegInf);
    std::fill(row_sum, row_sum + rows, 0.0f);
    const int64_t tile_key_end = problem.RowKeyEnd(b, q0 + rows - 1);
    for (int64_t c0 = 0; c0 < tile_key_end; c0 += kTileCols) {
      const int64_t cols = std::min(kTileCols, tile_key_end - c0);
      if (pack_in_task) {
        PackTransposed(problem.k_rows.Head(bh) + c0 * ld_k, ld_k, cols, p.d_k, p.scale * kLog2E,
                       k_t);
      }
      TileProduct<false>(
          rows, RoundUp16(cols), p.d_k, q, ld_q, 1,
          pack_in_task ? k_t : k_packed.get() + (bh * k_tiles + c0 / kTileCols) * packed_tile,
          kTileCols, scores, kTileCols);
      MaskScores(problem, b, q0, rows, c0, cols, scores, kTileCols);
      for (int64_t r = 0; r < rows; ++r) {
        float* row = scores + r * kTileCols;
        const float new_max = std::max(row_max[r], simd::Max(row, cols));
        if (new_max == kNegInf) {  // Nothing visible yet: contributes nothing.
          std::fill(row, row + cols, 0.0f);
          continue;
        }
        const float correction = Exp2(row_max[r] - new_max);  // 0 on the first tile.
        row_sum[r] = row_sum[r] * correction + Exp2ShiftedSum(row, cols, new_max);
        row_max[r] = new_max;
        if (correction != 1.0f) simd::Scale(o + r * ld_o, p.d_v, correction);
        if (p.dropout > 0.0f) {
          DropoutMultipliers(p, (bh * p.q_len + q0 + r) * p.k_len + c0, cols, multipliers);
          for (int64_t j = 0; j < cols; ++j) row[j] *= multipliers[j];
        }
      }
      TileProduct<true>(rows, p.d_v, cols, scores, kTileCols, 1, v + c0 * ld_v, ld_v, o, ld_o);
    }
    for (int64_t r = 0; r < rows; ++r) {
      float* row_lse = lse + bh * p.q_len + q0 + r;
      if (row_sum[r] > 0.0f) {
        simd::Scale(o + r * ld_o, p.d_v, 1.0f / row_sum[r]);
        *row_lse = kLn2 * (row_max[r] + std::log2(row_sum[r]));
      } else {
        *row_lse = kNegInf;  // No visible key: the output row stays zero.
      }
    }
  });
}

void BackwardPacked(const Problem& problem, const float* lse, const HeadRows<const float>& d_out,
                    const float* delta, int64_t groups, const HeadRows<float>& dq,
                    const HeadRows<float>& dk, const HeadRows<float>& dv, float* dq_slabs) {
  const AttentionParams& p = problem.params;
  const int64_t heads_total = p.batch * p.heads;
  const int64_t k_tiles = (p.k_len + kTileCols - 1) / kTileCols;
  const int64_t tile = kTileRows * kTileCols;
  const int64_t scratch = (p.d_k + p.d_v) * kTileCols + 3 * tile + kTileCols;

  ParallelTasks(heads_total * groups, scratch, [&](int64_t task, float* buffer) {
    const BackwardHead head =
        StartBackwardHead(problem, task, groups, lse, d_out, delta, dq, dq_slabs);
    const int64_t bh = head.bh, group = head.group, b = head.b;
    const float *q = head.q, *k = head.k, *v = head.v, *d_o = head.d_out;
    const float *row_lse = head.lse, *row_delta = head.delta;
    float* d_q = head.d_q;
    const int64_t ld_q = head.ld_q, ld_k = head.ld_k, ld_v = head.ld_v;
    const int64_t ld_d_o = head.ld_d_out, ld_d_q = head.ld_d_q;
    const int64_t ld_d_k = dk.ld(), ld_d_v = dv.ld();
    float* k_t = buffer;                     // [d_k, kTileCols], scaled to base 2.
    float* v_t = k_t + p.d_k * kTileCols;    // [d_v, kTileCols]
    float* probs = v_t + p.d_v * kTileCols;  // [kTileRows, kTileCols]
    float* d_scores = probs + tile;          // dP, then dS in place.
    float* dropped = d_scores + tile;        // P o M
    float* multipliers = dropped + tile;

    for (int64_t kt = group * k_tiles / groups; kt < (group + 1) * k_tiles / groups; ++kt) {
      const int64_t c0 = kt * kTileCols;
      const int64_t cols = std::min(kTileCols, p.k_len - c0);
      const int64_t width = RoundUp16(cols);
      float* d_k = dk.Head(bh) + c0 * ld_d_k;
      float* d_v = dv.Head(bh) + c0 * ld_d_v;
      ZeroRows(d_k, cols, ld_d_k, p.d_k);
      ZeroRows(d_v, cols, ld_d_v, p.d_v);
      if (c0 >= problem.key_end[b]) continue;  // Padding keys: zero gradients.
      PackTransposed(k + c0 * ld_k, ld_k, cols, p.d_k, p.scale * kLog2E, k_t);
      PackTransposed(v + c0 * ld_v, ld_v, cols, p.d_v, 1.0f, v_t);
      const int64_t first_row = FirstQueryRow(p, c0);
      for (int64_t q0 = first_row / kTileRows * kTileRows; q0 < p.q_len; q0 += kTileRows) {
        const int64_t rows = std::min(kTileRows, p.q_len - q0);
        const float* q_tile = q + q0 * ld_q;
        const float* d_o_tile = d_o + q0 * ld_d_o;
        // P = 2^(S_2 - lse_2), S_2 = Q (scale log2(e) K)^T.
        TileProduct<false>(rows, width, p.d_k, q_tile, ld_q, 1, k_t, kTileCols, probs, kTileCols);
        MaskScores(problem, b, q0, rows, c0, cols, probs, kTileCols);
        for (int64_t r = 0; r < rows; ++r) {
          float* row = probs + r * kTileCols;
          // lse = -inf: the row saw no key, so all its probabilities are 0.
          if (row_lse[q0 + r] == kNegInf) {
            std::fill(row, row + cols, 0.0f);
          } else {
            Exp2Shifted(row, cols, kLog2E * row_lse[q0 + r]);
          }
        }
        // dP = dO V^T.
        TileProduct<false>(rows, width, p.d_v, d_o_tile, ld_d_o, 1, v_t, kTileCols, d_scores,
                           kTileCols);
        const float* kept = ApplyTileDropout(p, bh, q0, rows, c0, cols, kTileCols, probs, d_scores,
                                             dropped, multipliers);
        // dV += (P o M)^T dO, reading P o M transposed in place.
        TileProduct<true>(cols, p.d_v, rows, kept, 1, kTileCols, d_o_tile, ld_d_o, d_v, ld_d_v);
        // dS = scale P o (dP - delta): the scale of both dQ and dK.
        for (int64_t r = 0; r < rows; ++r) {
          ScoreGradient(probs + r * kTileCols, d_scores + r * kTileCols, cols, row_delta[q0 + r],
                        p.scale);
        }
        TileProduct<true>(rows, p.d_k, cols, d_scores, kTileCols, 1, k + c0 * ld_k, ld_k,
                          d_q + q0 * ld_d_q, ld_d_q);
        TileProduct<true>(cols, p.d_k, rows, d_scores, 1, kTileCols, q_tile, ld_q, d_k, ld_d_k);
      }
    }
  });
}

}  // namespace attention_cpu
TFM_ISA_END

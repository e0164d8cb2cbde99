// Backward in the style of flash attention 2: probabilities are recomputed
// tile by tile from the saved log-sum-exp, never stored.
//
// A task owns a range of key tiles of one head, so it alone writes their dK
// and dV rows; for each key tile it walks the query tiles that see it:
//   P  = exp(scale Q K^T - lse)            (masked entries 0)
//   dV += (P o M)^T dO                      (M: dropout multipliers)
//   dP = (dO V^T) o M
//   dS = P o (dP - delta),  delta_i = dO_i . O_i
//   dQ += scale dS K,  dK += scale dS^T Q
// dQ gathers contributions from every key tile. When a head is split over
// several tasks (few heads, so that all workers get work), each task adds
// into its own dQ slab and the slabs are summed in a fixed order afterwards,
// so results never depend on scheduling. Extra memory: the slabs
// (groups x q_len x d_k per head) and delta, linear in the length.
#include <cstring>
#include <limits>

#include "core/check.h"
#include "ops/attention/attention_cpu_tiles.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/simd_math.h"

TFM_ISA_BEGIN
namespace attention_cpu {
namespace {

// Enough tasks to keep a large pool busy when the batch has few heads; fixed
// (not derived from the thread count) so that results are the same for
// every pool size.
constexpr int64_t kMinTasks = 32;

// dots[bh * q_len + i] = a_i . b_i over row i of head bh.
void RowDots(const AttentionParams& p, const HeadRows<const float>& a,
             const HeadRows<const float>& b, float* dots) {
  const int64_t rows = p.batch * p.heads * p.q_len;
  ThreadPool::Default()->ParallelFor(rows, 256, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t bh = i / p.q_len, row = i % p.q_len;
      dots[i] = simd::Dot(a.Head(bh) + row * a.ld(), b.Head(bh) + row * b.ld(), p.d_v);
    }
  });
}

// The tile loop on BLAS: BackwardPacked's contract (attention_cpu_tiles.h)
// for every head size, on heads-first tensors only.
void BackwardBlas(const Problem& problem, const float* lse, const HeadRows<const float>& d_out,
                  const float* delta, int64_t groups, const HeadRows<float>& dq_rows,
                  const HeadRows<float>& dk_rows, const HeadRows<float>& dv_rows,
                  float* dq_slabs) {
  TFM_CHECK(problem.q_rows.heads_first() && problem.k_rows.heads_first() &&
                problem.v_rows.heads_first() && d_out.heads_first() && dq_rows.heads_first() &&
                dk_rows.heads_first() && dv_rows.heads_first(),
            "attention's BLAS loops read heads-first tensors");
  float* dk = dk_rows.data;
  float* dv = dv_rows.data;
  const AttentionParams& p = problem.params;
  const int64_t heads_total = p.batch * p.heads;
  const int64_t k_tiles = (p.k_len + kKeyTile - 1) / kKeyTile;
  const int64_t tile = kQueryTile * kKeyTile;

  ParallelTasks(heads_total * groups, 3 * tile + kKeyTile, [&](int64_t task, float* buffer) {
    const BackwardHead head =
        StartBackwardHead(problem, task, groups, lse, d_out, delta, dq_rows, dq_slabs);
    const int64_t bh = head.bh, group = head.group, b = head.b;
    const float *q = head.q, *k = head.k, *v = head.v, *d_o = head.d_out;
    const float *row_lse = head.lse, *row_delta = head.delta;
    float* d_q = head.d_q;
    float* probs = buffer;
    float* d_scores = probs + tile;
    float* dropped = d_scores + tile;
    float* multipliers = dropped + tile;

    for (int64_t kt = group * k_tiles / groups; kt < (group + 1) * k_tiles / groups; ++kt) {
      const int64_t c0 = kt * kKeyTile;
      const int64_t cols = std::min(kKeyTile, p.k_len - c0);
      float* d_k = dk + (bh * p.k_len + c0) * p.d_k;
      float* d_v = dv + (bh * p.k_len + c0) * p.d_v;
      std::memset(d_k, 0, cols * p.d_k * sizeof(float));
      std::memset(d_v, 0, cols * p.d_v * sizeof(float));
      if (c0 >= problem.key_end[b]) continue;  // Padding keys: zero gradients.
      const int64_t first_row = FirstQueryRow(p, c0);
      for (int64_t q0 = first_row / kQueryTile * kQueryTile; q0 < p.q_len; q0 += kQueryTile) {
        const int64_t rows = std::min(kQueryTile, p.q_len - q0);
        const float* q_tile = q + q0 * p.d_k;
        const float* d_o_tile = d_o + q0 * p.d_v;
        Gemm(false, true, rows, cols, p.d_k, p.scale, q_tile, p.d_k, k + c0 * p.d_k, p.d_k, 0.0f,
             probs, kKeyTile);
        MaskScores(problem, b, q0, rows, c0, cols, probs, kKeyTile);
        for (int64_t r = 0; r < rows; ++r) {
          float* row = probs + r * kKeyTile;
          // lse = -inf: the row saw no key, so all its probabilities are 0.
          if (row_lse[q0 + r] == -std::numeric_limits<float>::infinity()) {
            std::fill(row, row + cols, 0.0f);
          } else {
            simd::ExpShiftedSum(row, cols, row_lse[q0 + r]);
          }
        }
        Gemm(false, true, rows, cols, p.d_v, 1.0f, d_o_tile, p.d_v, v + c0 * p.d_v, p.d_v, 0.0f,
             d_scores, kKeyTile);
        const float* kept = ApplyTileDropout(p, bh, q0, rows, c0, cols, kKeyTile, probs, d_scores,
                                             dropped, multipliers);
        Gemm(true, false, cols, p.d_v, rows, 1.0f, kept, kKeyTile, d_o_tile, p.d_v, 1.0f, d_v,
             p.d_v);
        for (int64_t r = 0; r < rows; ++r) {
          const float* prob_row = probs + r * kKeyTile;
          float* d_row = d_scores + r * kKeyTile;
          const float row_d = row_delta[q0 + r];
          for (int64_t j = 0; j < cols; ++j) d_row[j] = prob_row[j] * (d_row[j] - row_d);
        }
        Gemm(false, false, rows, p.d_k, cols, p.scale, d_scores, kKeyTile, k + c0 * p.d_k, p.d_k,
             1.0f, d_q + q0 * p.d_k, p.d_k);
        Gemm(true, false, cols, p.d_k, rows, p.scale, d_scores, kKeyTile, q_tile, p.d_k, 1.0f, d_k,
             p.d_k);
      }
    }
  });
}

}  // namespace

void Backward(const Problem& problem, const HeadRows<const float>& out, const float* lse,
              const HeadRows<const float>& d_out, const HeadRows<float>& dq,
              const HeadRows<float>& dk, const HeadRows<float>& dv) {
  const AttentionParams& p = problem.params;
  const int64_t heads_total = p.batch * p.heads;
  std::vector<float> delta(heads_total * p.q_len);
  RowDots(p, d_out, out, delta.data());

  const int64_t k_tiles = (p.k_len + kKeyTile - 1) / kKeyTile;
  const int64_t groups =
      std::clamp<int64_t>((kMinTasks + heads_total - 1) / std::max<int64_t>(1, heads_total), 1,
                          std::max<int64_t>(1, k_tiles));
  std::vector<float> slabs(groups > 1 ? groups * heads_total * p.q_len * p.d_k : 0);

  (UsePackedKernels(p) ? BackwardPacked : BackwardBlas)(problem, lse, d_out, delta.data(), groups,
                                                        dq, dk, dv, slabs.data());

  if (groups > 1) {
    // The slabs are heads-first; dq's rows may be interleaved.
    const int64_t row_floats = p.q_len * p.d_k;
    ThreadPool::Default()->ParallelFor(heads_total, 1, [&](int64_t begin, int64_t end) {
      for (int64_t bh = begin; bh < end; ++bh) {
        float* target = dq.Head(bh);
        for (int64_t i = 0; i < p.q_len; ++i) {
          float* row = target + i * dq.ld();
          const float* first = slabs.data() + bh * row_floats + i * p.d_k;
          std::memcpy(row, first, p.d_k * sizeof(float));
          for (int64_t g = 1; g < groups; ++g) {
            const float* slab = slabs.data() + (g * heads_total + bh) * row_floats + i * p.d_k;
            for (int64_t j = 0; j < p.d_k; ++j) row[j] += slab[j];
          }
        }
      }
    });
  }
}

}  // namespace attention_cpu
TFM_ISA_END

#include "ops/attention/attention_cpu_tiles.h"

#include <algorithm>
#include <limits>

#include "ops/blas/openblas_library.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/philox_simd.h"
#include "ops/cpu_math/vec.h"

TFM_ISA_BEGIN
namespace attention_cpu {

void Gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (beta == 0.0f) {
      ZeroRows(c, m, ldc, n);
    }
    return;
  }
  blas::Sgemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void MaskScores(const Problem& problem, int64_t b, int64_t q0, int64_t rows, int64_t c0,
                int64_t cols, float* scores, int64_t ld) {
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  const uint8_t* padding =
      problem.padding.empty() ? nullptr : problem.padding.data() + b * problem.params.k_len + c0;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = scores + r * ld;
    const int64_t visible = std::clamp<int64_t>(problem.RowKeyEnd(b, q0 + r) - c0, 0, cols);
    std::fill(row + visible, row + cols, kMasked);
    if (padding != nullptr) {
      for (int64_t j = 0; j < visible; ++j) {
        if (padding[j]) row[j] = kMasked;
      }
    }
  }
}

void DropoutMultipliers(const AttentionParams& params, uint64_t first, int64_t count,
                        float* multipliers) {
  const float p = params.dropout;
  const float keep = 1.0f / (1.0f - p);
  const simd::VecF vkeep = simd::Set(keep);
  // The generator kLanes Philox blocks at a time: one at a time it was as
  // costly as the tiles' products in the base model's update.
  simd::ForEachKeep(
      params.dropout_state, p, static_cast<int64_t>(first), count,
      [&](int64_t j, simd::Mask kept) {
        simd::Store(simd::IfThenElseZero(kept, vkeep), multipliers + j);
      },
      [&](int64_t j, bool kept) { multipliers[j] = kept ? keep : 0.0f; });
}

BackwardHead StartBackwardHead(const Problem& problem, int64_t task, int64_t groups,
                               const float* lse, const HeadRows<const float>& d_out,
                               const float* delta, const HeadRows<float>& dq, float* dq_slabs) {
  const AttentionParams& p = problem.params;
  const int64_t heads_total = p.batch * p.heads;
  BackwardHead head;
  head.bh = task / groups;
  head.group = task % groups;
  head.b = head.bh / p.heads;
  head.q = problem.q_rows.Head(head.bh);
  head.k = problem.k_rows.Head(head.bh);
  head.v = problem.v_rows.Head(head.bh);
  head.d_out = d_out.Head(head.bh);
  head.lse = lse + head.bh * p.q_len;
  head.delta = delta + head.bh * p.q_len;
  head.ld_q = problem.q_rows.ld();
  head.ld_k = problem.k_rows.ld();
  head.ld_v = problem.v_rows.ld();
  head.ld_d_out = d_out.ld();
  if (groups > 1) {
    head.d_q = dq_slabs + (head.group * heads_total + head.bh) * p.q_len * p.d_k;
    head.ld_d_q = p.d_k;
  } else {
    head.d_q = dq.Head(head.bh);
    head.ld_d_q = dq.ld();
  }
  ZeroRows(head.d_q, p.q_len, head.ld_d_q, p.d_k);
  return head;
}

int64_t FirstQueryRow(const AttentionParams& params, int64_t c0) {
  return params.causal ? std::clamp<int64_t>(c0 - params.k_len + params.q_len, 0, params.q_len) : 0;
}

const float* ApplyTileDropout(const AttentionParams& params, int64_t bh, int64_t q0, int64_t rows,
                              int64_t c0, int64_t cols, int64_t ld, const float* probs,
                              float* d_scores, float* dropped, float* multipliers) {
  if (params.dropout <= 0.0f) return probs;
  for (int64_t r = 0; r < rows; ++r) {
    DropoutMultipliers(params, (bh * params.q_len + q0 + r) * params.k_len + c0, cols, multipliers);
    for (int64_t j = 0; j < cols; ++j) {
      dropped[r * ld + j] = probs[r * ld + j] * multipliers[j];
      d_scores[r * ld + j] *= multipliers[j];
    }
  }
  return dropped;
}

}  // namespace attention_cpu
TFM_ISA_END

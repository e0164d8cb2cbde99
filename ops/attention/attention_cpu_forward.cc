// Forward: online softmax over key tiles (flash attention). Each task owns
// one query tile of one head; per tile of keys it computes the scores,
// updates each row's running max m and normaliser l, rescales the output
// rows it has accumulated so far, and adds P V. Memory per worker is one
// query-by-key tile, whatever the sequence length.
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/attention/attention_cpu_tiles.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/simd_math.h"

TFM_ISA_BEGIN
namespace attention_cpu {

void Forward(const Problem& problem, float* out, float* lse) {
  if (problem.k_f16 != nullptr && problem.params.q_len == 0) return;  // Nothing to compute.
  // Decoding: matrix-vector work (and the only path with key rows, and with
  // f16 keys and values: a beam of 21 rows too, each re-reading its head's
  // keys from L1). No query rows stay with the tile loops, which do nothing
  // for them.
  if (ForwardIsRowwise(problem.params, problem.key_rows != nullptr, problem.k_f16 != nullptr)) {
    ForwardRowwise(problem, out, lse);
    return;
  }
  const AttentionParams& p = problem.params;
  if (UsePackedKernels(p)) {
    ForwardPacked(problem, HeadsFirstRows(out, p.heads, p.q_len, p.d_v), lse);
    return;
  }
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t q_tiles = (p.q_len + kQueryTile - 1) / kQueryTile;
  const int64_t scratch = kQueryTile * kKeyTile + kKeyTile + 2 * kQueryTile;
  ParallelTasks(p.batch * p.heads * q_tiles, scratch, [&](int64_t task, float* buffer) {
    const int64_t bh = task / q_tiles;
    const int64_t b = bh / p.heads;
    const int64_t q0 = (task % q_tiles) * kQueryTile;
    const int64_t rows = std::min(kQueryTile, p.q_len - q0);
    const float* q = problem.q_rows.data + (bh * p.q_len + q0) * p.d_k;
    const float* k = problem.k_rows.data + bh * p.k_len * p.d_k;
    const float* v = problem.v_rows.data + bh * p.k_len * p.d_v;
    float* o = out + (bh * p.q_len + q0) * p.d_v;
    float* scores = buffer;
    float* multipliers = scores + kQueryTile * kKeyTile;
    float* row_max = multipliers + kKeyTile;
    float* row_sum = row_max + kQueryTile;

    std::memset(o, 0, rows * p.d_v * sizeof(float));
    std::fill(row_max, row_max + rows, kNegInf);
    std::fill(row_sum, row_sum + rows, 0.0f);
    // Rows see a prefix of the keys, longest for the last row.
    const int64_t tile_key_end = problem.RowKeyEnd(b, q0 + rows - 1);
    for (int64_t c0 = 0; c0 < tile_key_end; c0 += kKeyTile) {
      const int64_t cols = std::min(kKeyTile, tile_key_end - c0);
      Gemm(false, true, rows, cols, p.d_k, p.scale, q, p.d_k, k + c0 * p.d_k, p.d_k, 0.0f, scores,
           kKeyTile);
      MaskScores(problem, b, q0, rows, c0, cols, scores, kKeyTile);
      for (int64_t r = 0; r < rows; ++r) {
        float* row = scores + r * kKeyTile;
        const float new_max = std::max(row_max[r], simd::Max(row, cols));
        if (new_max == kNegInf) {  // Nothing visible yet: contributes nothing.
          std::fill(row, row + cols, 0.0f);
          continue;
        }
        const float correction = simd::Exp(row_max[r] - new_max);  // 0 on the first tile.
        row_sum[r] = row_sum[r] * correction + simd::ExpShiftedSum(row, cols, new_max);
        row_max[r] = new_max;
        if (correction != 1.0f) simd::Scale(o + r * p.d_v, p.d_v, correction);
        if (p.dropout > 0.0f) {
          DropoutMultipliers(p, (bh * p.q_len + q0 + r) * p.k_len + c0, cols, multipliers);
          for (int64_t j = 0; j < cols; ++j) row[j] *= multipliers[j];
        }
      }
      Gemm(false, false, rows, p.d_v, cols, 1.0f, scores, kKeyTile, v + c0 * p.d_v, p.d_v, 1.0f, o,
           p.d_v);
    }
    for (int64_t r = 0; r < rows; ++r) {
      float* row_lse = lse + bh * p.q_len + q0 + r;
      if (row_sum[r] > 0.0f) {
        simd::Scale(o + r * p.d_v, p.d_v, 1.0f / row_sum[r]);
        *row_lse = row_max[r] + std::log(row_sum[r]);
      } else {
        *row_lse = kNegInf;  // No visible key: the output row stays zero.
      }
    }
  });
}

}  // namespace attention_cpu
TFM_ISA_END

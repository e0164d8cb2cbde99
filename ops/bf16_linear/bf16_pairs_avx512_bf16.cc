#include "ops/bf16_linear/bf16_pairs_avx512_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "core/cache_aligned_vector.h"
#include "core/thread_pool.h"
#include "ops/cpu_math/with_row_count.h"
#include "ops/matmul/gemm_cpu.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")
// GCC 12's false -Wmaybe-uninitialized in its AVX-512 intrinsics (bug
// 105593), as in ops/matmul/gemm_bf16_amx.cc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace tfm {
namespace {

constexpr int64_t kPanel = 16;
// A block: kRows rows by two panels (32 columns), 24 accumulators beside
// the two weight vectors and a broadcast, so each broadcast row value
// serves two vdpbf16ps and each weight load twelve (a panel's pairs are
// read once per block of rows, from L1 after the first).
constexpr int kRows = 12;

inline __mmask16 FirstLanes(int64_t n) {
  return n <= 0 ? __mmask16(0) : n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
}

// Rows [0, R) of y, the columns of P consecutive panels from `column`: `x`
// the rows' bf16 pairs (`pairs` a row), `panel` the first panel's [pairs,
// 16] pairs (the next follows it).
template <int R, int P>
void RowBlock(const uint32_t* x, int64_t pairs, const uint32_t* panel, const float* bias,
              bool relu, int64_t out, int64_t column, float* y) {
  __m512 acc[R][P];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) acc[r][q] = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh w[P];
#pragma GCC unroll 2
    for (int q = 0; q < P; ++q) {
      w[q] = (__m512bh)_mm512_loadu_si512(panel + (q * pairs + p) * kPanel);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512bh xr = (__m512bh)_mm512_set1_epi32(x[r * pairs + p]);
#pragma GCC unroll 2
      for (int q = 0; q < P; ++q) acc[r][q] = _mm512_dpbf16_ps(acc[r][q], xr, w[q]);
    }
  }
#pragma GCC unroll 2
  for (int q = 0; q < P; ++q) {
    const int64_t first = column + q * kPanel;
    const __mmask16 mask = FirstLanes(out - first);
    const __m512 b =
        bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias + first) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      __m512 v = _mm512_add_ps(acc[r][q], b);
      if (relu) {  // x <= 0 (not NaN) to +0, as GemmEpilogue's ReLU.
        v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LE_OQ),
                               _mm512_setzero_ps());
      }
      _mm512_mask_storeu_ps(y + r * out + first, mask, v);
    }
  }
}

// Every row of y in the columns of P panels from `panel_index`.
template <int P>
void Panels(const uint32_t* x, int64_t rows, int64_t pairs, const uint32_t* units,
            int64_t panel_index, const float* bias, bool relu, int64_t out, float* y) {
  const uint32_t* w = units + panel_index * pairs * kPanel;
  const int64_t column = panel_index * kPanel;
  for (int64_t r = 0; r < rows; r += kRows) {
    WithRowCount<kRows>(static_cast<int>(std::min<int64_t>(kRows, rows - r)), [&](auto size) {
      RowBlock<decltype(size)::value, P>(x + r * pairs, pairs, w, bias, relu, out, column,
                                         y + r * out);
    });
  }
}

}  // namespace

void Bf16PairsProductAvx512Bf16(const float* x, int64_t rows, int64_t in, const uint16_t* packed,
                                int64_t kp, int64_t out, const float* bias, bool relu, float* y,
                                ThreadPool* pool) {
  const int64_t pairs = kp / 2;
  // The rows rounded to bf16 once (to nearest, ties to even), in pairs as
  // the weight's: input 2p in the low half of unit p, zeros past `in`.
  static thread_local CacheAlignedVector<uint32_t> pairs_buffer;
  pairs_buffer.resize(rows * pairs);
  uint32_t* xp = pairs_buffer.data();
  pool->ParallelFor(rows, std::max<int64_t>(1, 4096 / kp), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* row = x + r * in;
      for (int64_t j = 0; j < kp; j += 32) {
        const __mmask16 lo_mask = j < in ? FirstLanes(in - j) : __mmask16(0);
        const __mmask16 hi_mask = j + 16 < in ? FirstLanes(in - j - 16) : __mmask16(0);
        const __m512 lo = _mm512_maskz_loadu_ps(lo_mask, row + j);
        const __m512 hi = _mm512_maskz_loadu_ps(hi_mask, row + j + 16);
        _mm512_storeu_si512(xp + r * pairs + j / 2, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
      }
    }
  });
  const uint32_t* units = reinterpret_cast<const uint32_t*>(packed);
  const int64_t panels = (out + kPanel - 1) / kPanel;
  const int64_t grain =
      std::max<int64_t>(1, kGemmSplitWork / std::max<int64_t>(1, rows * kp * 2 * kPanel));
  // Threads take whole pairs of panels with every row (as packed_linear): a
  // row's sums never depend on how the rows were split.
  const int64_t panel_pairs = (panels + 1) / 2;
  pool->ParallelFor(panel_pairs, grain, [&](int64_t first, int64_t last) {
    for (int64_t pair = first; pair < last; ++pair) {
      if (2 * pair + 1 < panels) {
        Panels<2>(xp, rows, pairs, units, 2 * pair, bias, relu, out, y);
      } else {
        Panels<1>(xp, rows, pairs, units, 2 * pair, bias, relu, out, y);
      }
    }
  });
}

}  // namespace tfm
#pragma GCC diagnostic pop
#pragma GCC pop_options

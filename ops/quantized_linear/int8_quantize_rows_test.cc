// The vector quantizations of activation rows give the scalar reference's
// bytes, zero points and scales exactly (and of weight rows, their bytes,
// scales and sums), whatever the row's length (tails
// of every size), range (mixed, ReLU-like, all negative, all zero) and
// place in the [groups, rows, 4] layout, at both levels (255, and 127 for
// the AVX2 kernel); and the reference itself keeps its promises.
#include "ops/quantized_linear/int8_quantize_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

constexpr int64_t kRows = 3;  // Rows side by side in the layout.
constexpr uint8_t kUntouched = 0xAB;

struct Quantized {
  std::vector<uint8_t> u;  // [groups, kRows, 4]
  std::vector<int32_t> zero_points;
  std::vector<float> scales;
};

// Every row of x [kRows, in] with `quantize_row`, into a buffer that
// starts as kUntouched (so a write outside the row's bytes shows).
Quantized QuantizeEveryRow(Int8QuantizeRowFn quantize_row, const std::vector<float>& x, int64_t in,
                           int levels) {
  const int64_t groups = (in + 3) / 4;
  Quantized q{std::vector<uint8_t>(groups * kRows * 4, kUntouched), std::vector<int32_t>(kRows),
              std::vector<float>(kRows)};
  for (int64_t r = 0; r < kRows; ++r) {
    quantize_row(x.data() + r * in, in, groups, kRows * 4, levels, q.u.data() + r * 4,
                 &q.zero_points[r], &q.scales[r]);
  }
  return q;
}

// Rows of the kinds decoding meets: row 0 mixed signs, row 1 as after a
// ReLU (zeros and positives), row 2 by `kind`.
std::vector<float> Rows(int64_t in, int kind, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  std::vector<float> x(kRows * in);
  for (int64_t k = 0; k < in; ++k) {
    x[k] = uniform(engine);
    x[in + k] = std::max(0.0f, uniform(engine));
    const float v = uniform(engine);
    x[2 * in + k] = kind == 0   ? -std::abs(v) - 0.1f     // All negative.
                    : kind == 1 ? 0.0f                    // All zero.
                                : std::round(v * 4) / 4;  // Repeated values, exact ties.
  }
  return x;
}

struct Named {
  const char* name;
  Int8QuantizeRowFn fn;
  bool runs;
};

TEST(Int8QuantizeRowsTest, VectorCopiesGiveTheScalarBytesExactly) {
  const CpuFeatures& f = HostCpuFeatures();
  const Named vectors[] = {{"avx2", Int8QuantizeRowAvx2, f.avx2},
                           {"avx512", Int8QuantizeRowAvx512, f.avx512}};
  int compared = 0;
  for (const Named& v : vectors) {
    if (!v.runs) {
      std::printf("[ skipped  ] %s: this CPU lacks it (%s)\n", v.name, CpuSummary().c_str());
      continue;
    }
    for (int64_t in : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 256, 511, 2051}) {
      for (int levels : {255, 127}) {
        for (int kind = 0; kind < 3; ++kind) {
          const std::vector<float> x = Rows(in, kind, static_cast<uint32_t>(in * 7 + kind));
          const Quantized want = QuantizeEveryRow(Int8QuantizeRowScalar, x, in, levels);
          const Quantized got = QuantizeEveryRow(v.fn, x, in, levels);
          const std::string where = std::string(v.name) + " in " + std::to_string(in) + " levels " +
                                    std::to_string(levels) + " kind " + std::to_string(kind);
          ASSERT_EQ(got.u, want.u) << where;
          ASSERT_EQ(got.zero_points, want.zero_points) << where;
          ASSERT_EQ(got.scales, want.scales) << where;
          ++compared;
        }
      }
    }
  }
  std::printf("[ measured ] %d row sets identical to the scalar quantization\n", compared);
}

// The weights' quantization likewise, weight rows laid out as in a packed
// panel (groups 64 bytes apart), rows of zeros and empty rows included.
TEST(Int8QuantizeRowsTest, VectorWeightCopiesGiveTheScalarBytesExactly) {
  const CpuFeatures& f = HostCpuFeatures();
  struct NamedWeight {
    const char* name;
    Int8QuantizeWeightRowFn fn;
    bool runs;
  };
  const NamedWeight vectors[] = {{"avx2", Int8QuantizeWeightRowAvx2, f.avx2},
                                 {"avx512", Int8QuantizeWeightRowAvx512, f.avx512}};
  constexpr int64_t kStride = 64;
  int compared = 0;
  for (const NamedWeight& v : vectors) {
    if (!v.runs) continue;
    for (int64_t in : {0, 1, 3, 4, 5, 8, 9, 16, 17, 33, 255, 256, 2051}) {
      for (int kind = 0; kind < 3; ++kind) {
        const std::vector<float> rows = Rows(std::max<int64_t>(in, 1), kind, 11 * in + kind);
        const int64_t groups = (in + 3) / 4;
        for (int64_t r = 0; r < kRows; ++r) {
          const float* w = rows.data() + r * std::max<int64_t>(in, 1);
          std::vector<int8_t> want(groups * kStride + 4, 0x5A), got = want;
          float want_scale = -1, got_scale = -2;
          int32_t want_sum = -1, got_sum = -2;
          Int8QuantizeWeightRowScalar(w, in, groups, kStride, want.data(), &want_scale, &want_sum);
          v.fn(w, in, groups, kStride, got.data(), &got_scale, &got_sum);
          const std::string where = std::string(v.name) + " in " + std::to_string(in) + " kind " +
                                    std::to_string(kind) + " row " + std::to_string(r);
          ASSERT_EQ(got, want) << where;
          ASSERT_EQ(got_scale, want_scale) << where;
          ASSERT_EQ(got_sum, want_sum) << where;
          ++compared;
        }
      }
    }
  }
  std::printf("[ measured ] %d weight rows identical to the scalar quantization\n", compared);
}

// The reference: levels within [0, levels], 0 exact, padding 0, and each
// x within half a step of sx (u - zp).
TEST(Int8QuantizeRowsTest, ScalarLevelsAreWithinHalfAStep) {
  for (int levels : {255, 127}) {
    const int64_t in = 37, groups = 10;
    const std::vector<float> x = Rows(in, 2, 5);
    const Quantized q = QuantizeEveryRow(Int8QuantizeRowScalar, x, in, levels);
    for (int64_t r = 0; r < kRows; ++r) {
      const float sx = q.scales[r];
      const int32_t zp = q.zero_points[r];
      EXPECT_GE(zp, 0);
      EXPECT_LE(zp, levels);
      for (int64_t k = 0; k < groups * 4; ++k) {
        const int level = q.u[(k / 4) * kRows * 4 + r * 4 + k % 4];
        EXPECT_LE(level, levels);
        if (k >= in) {
          EXPECT_EQ(level, 0) << "padding, row " << r << " input " << k;
          continue;
        }
        const float value = x[r * in + k];
        if (value == 0.0f) {
          EXPECT_EQ(level, zp) << "0 is exact";
        }
        EXPECT_LE(std::abs(sx * (level - zp) - value), sx * 0.5f * (1 + 1e-5f) + 1e-7f)
            << "row " << r << " input " << k;
      }
    }
  }
}

}  // namespace
}  // namespace tfm

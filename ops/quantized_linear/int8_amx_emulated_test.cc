// The AMX kernel's blocking (int8_amx_body.h) run over a scalar model of the
// tiles, on any CPU with AVX-512 (its finish): the layouts, the K loop, the
// row and panel tails and the finish are checked against the scalar
// reference here, where the real tiles are absent. The model follows the
// instructions' definitions (Intel SDM, TILELOADD / TILESTORED / TDPBUSD):
// a tile is 16 rows of 64 bytes; tdpbusd adds, for each row m and column n
// of C (int32), sum over k < 64 of u8 A[m][k] x s8 B[k / 4][4n + k % 4].
// On a CPU with AMX, the real kernel is compared as well.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/cpu_features.h"
#include "gtest/gtest.h"
#include "ops/quantized_linear/int8_panels.h"
#include "ops/quantized_linear/int8_product_sample.h"
#include "ops/quantized_linear/quantized_linear.h"
#include "ops/random/random.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,avx512f,avx512bw,avx512dq,avx512vl")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace tfm {
namespace {

#include "ops/quantized_linear/int8_zmm_finish.h"

struct Isa : ZmmFinish {};

struct Tiles {
  static inline thread_local uint8_t tile[8][16][64];
  static inline thread_local bool configured = false;
  // A tile used outside Configure .. Release (checked by the test: no
  // gtest in here, which compiles for AVX-512).
  static inline thread_local bool misused = false;
  static void Check() { misused = misused || !configured; }
  static void Configure() {
    std::memset(tile, 0, sizeof(tile));  // ldtilecfg zeroes the tiles.
    configured = true;
  }
  static void Release() { configured = false; }
  template <int T>
  static void Zero() {
    Check();
    std::memset(tile[T], 0, sizeof(tile[T]));
  }
  template <int T>
  static void Load(const void* p, int64_t stride) {
    Check();
    for (int m = 0; m < 16; ++m) {
      std::memcpy(tile[T][m], static_cast<const uint8_t*>(p) + m * stride, 64);
    }
  }
  template <int T>
  static void Store(void* p, int64_t stride) {
    Check();
    for (int m = 0; m < 16; ++m) std::memcpy(static_cast<uint8_t*>(p) + m * stride, tile[T][m], 64);
  }
  template <int C, int A, int B>
  static void Dot() {
    Check();
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 16; ++n) {
        int32_t sum;
        std::memcpy(&sum, &tile[C][m][4 * n], 4);
        for (int k = 0; k < 64; ++k) {
          sum += static_cast<int32_t>(tile[A][m][k]) *
                 static_cast<int32_t>(static_cast<int8_t>(tile[B][k / 4][4 * n + k % 4]));
        }
        std::memcpy(&tile[C][m][4 * n], &sum, 4);
      }
    }
  }
};

#include "ops/quantized_linear/int8_amx_body.h"

void ModelPanels(const Int8Product& product, int64_t first_panel, int64_t last_panel) {
  AmxPanels(product, first_panel, last_panel);
}

bool ModelTilesMisused() { return Tiles::misused; }

}  // namespace
}  // namespace tfm
#pragma GCC diagnostic pop
#pragma GCC pop_options

// The tests compile for the baseline: this file runs on CPUs without
// AVX-512 too, where they skip.
namespace tfm {
namespace {

// Rows around the tiles (16) and blocks (32), panels odd and even, inputs
// of 1 to 3 tile widths, panel ranges as threads take them.
void ExpectSameAsScalar(Int8PanelsFn amx, const char* name) {
  uint32_t seed = 1;
  for (int64_t rows : {1, 4, 15, 16, 17, 31, 32, 33, 48, 70}) {
    for (int64_t out : {16, 17, 32, 48, 100}) {
      for (int64_t groups : {16, 32, 48}) {
        const bool relu = rows % 2 == 1;
        SCOPED_TRACE(absl::StrCat(name, ": ", rows, " rows, ", groups * 4, " -> ", out,
                                  relu ? ", relu" : ""));
        int64_t bad_row = -1, bad_column = -1;
        EXPECT_TRUE(Int8RowMajorKernelAgrees(amx, Int8ProductSample(rows, groups, out, seed++),
                                             relu, &bad_row, &bad_column))
            << "first difference at row " << bad_row << ", column " << bad_column;
      }
    }
  }
}

TEST(Int8AmxTest, BlockingOverModelTilesMatchesTheScalarReference) {
  if (!HostCpuFeatures().avx512) GTEST_SKIP() << "the finish needs AVX-512: " << CpuSummary();
  ExpectSameAsScalar(ModelPanels, "model tiles");
  EXPECT_FALSE(ModelTilesMisused()) << "a tile was used before Configure or after Release";
}

// The comparison can fail: the scalar kernel reads the other layout, so
// over row-major activations of several rows it is wrong.
TEST(Int8AmxTest, TheComparisonCatchesAKernelReadingTheOtherLayout) {
  int64_t bad_row = -1, bad_column = -1;
  EXPECT_FALSE(Int8RowMajorKernelAgrees(Int8PanelsScalar, Int8ProductSample(20, 16, 40, 7),
                                        /*relu=*/false, &bad_row, &bad_column));
  EXPECT_GE(bad_row, 0);
}

// The op's AMX path (row-major activations padded to whole tiles, the
// AVX-512 VNNI fallback for inputs that are no multiple of 64, panels over
// the pool's threads) over the model tiles: the same outputs, bit for bit,
// as the AVX-512 VNNI kernel's (the same levels, the same integer sums, the
// same finish).
TEST(Int8AmxTest, TheOpsAmxPathOverModelTilesGivesTheVnniKernelsOutputs) {
  if (!HostCpuFeatures().avx512_vnni) GTEST_SKIP() << "needs AVX-512 VNNI: " << CpuSummary();
  SetInt8AmxStandInForTesting(ModelPanels);
  struct Restore {
    ~Restore() { SetInt8AmxStandInForTesting(nullptr); }
  } restore;
  uint64_t stream = 1;
  for (int64_t rows : {1, 4, 15, 16, 17, 40}) {
    for (int64_t in : {64, 128, 100}) {
      for (int64_t out : {16, 40}) {
        const bool relu = (rows + out) % 2 == 0;
        SCOPED_TRACE(absl::StrCat(rows, " rows, ", in, " -> ", out, relu ? ", relu" : ""));
        const Tensor x = *RandomUniform({rows, in}, PhiloxState{5, stream++, 0}, -1.0f, 1.0f);
        const Tensor w = *RandomUniform({out, in}, PhiloxState{5, stream++, 0}, -1.0f, 1.0f);
        const Tensor b = *RandomUniform({out}, PhiloxState{5, stream++, 0}, -1.0f, 1.0f);
        absl::StatusOr<QuantizedWeight> q = QuantizeLinearWeight(w);
        ASSERT_TRUE(q.ok()) << q.status();
        absl::StatusOr<Tensor> amx = QuantizedLinear(x, *q, b, relu, Int8Kernel::kAmxInt8);
        ASSERT_TRUE(amx.ok()) << amx.status();
        absl::StatusOr<Tensor> vnni = QuantizedLinear(x, *q, b, relu, Int8Kernel::kAvx512Vnni);
        ASSERT_TRUE(vnni.ok()) << vnni.status();
        EXPECT_EQ(amx->ToVector<float>(), vnni->ToVector<float>());
      }
    }
  }
  if (!HostCpuFeatures().amx_int8) {
    EXPECT_NE(ActiveInt8Kernel(), Int8Kernel::kAmxInt8)
        << "the stand-in became the active kernel on a CPU without AMX";
  }
}

TEST(Int8AmxTest, RealTilesMatchTheScalarReference) {
  if (!HostCpuFeatures().amx_int8) GTEST_SKIP() << "no AMX-INT8 here: " << CpuSummary();
  ExpectSameAsScalar(Int8PanelsAmx, "amx");
}

}  // namespace
}  // namespace tfm

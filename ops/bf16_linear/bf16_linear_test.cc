#include "ops/bf16_linear/bf16_linear.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "gtest/gtest.h"
#include "ops/matmul/gemm_bf16_cpu.h"
#include "ops/random/random.h"

namespace tfm {
namespace {

Tensor Random(const Shape& shape, uint64_t stream) {
  return *RandomUniform(shape, PhiloxState{9, stream, 0}, -1.0f, 1.0f);
}

float Rounded(float x) { return static_cast<float>(BFloat16(x)); }

// x W^T + b with x and W rounded to bf16, in double, and each entry's bound
// on the f32 sums' rounding (a few units of float precision per term).
struct Reference {
  std::vector<double> y, bound;
};

Reference Expected(const Tensor& x, const Tensor& w, const Tensor* b, bool relu) {
  const std::vector<float> xs = x.ToVector<float>(), ws = w.ToVector<float>();
  const int64_t in = w.dim(1), out = w.dim(0), rows = static_cast<int64_t>(xs.size()) / in;
  const std::vector<float> bs = b != nullptr ? b->ToVector<float>() : std::vector<float>(out, 0);
  Reference ref;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0, magnitude = std::abs(bs[o]);
      for (int64_t k = 0; k < in; ++k) {
        const double term =
            static_cast<double>(Rounded(xs[r * in + k])) * Rounded(ws[o * in + k]);
        sum += term;
        magnitude += std::abs(term);
      }
      sum += bs[o];
      ref.y.push_back(relu ? std::max(sum, 0.0) : sum);
      ref.bound.push_back(magnitude * (in + 2) * 6e-8 + 1e-30);
    }
  }
  return ref;
}

// Every element lands where gemm_bf16_cpu.h's layout puts it, rounded to
// nearest; zeros past the weight's rows and inputs.
TEST(Bf16LinearTest, PacksPairsOfInputsInPanelsOfSixteenColumns) {
  const int64_t out = 37, in = 70;
  const Tensor w = Random({out, in}, 1);
  absl::StatusOr<Tensor> packed = PackBf16LinearWeight(w);
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_EQ(packed->dtype(), DType::kBF16);
  ASSERT_EQ(packed->shape(), (Shape{64 / 16, 96 / 2, 32}));
  const std::vector<float> ws = w.ToVector<float>();
  const std::vector<BFloat16> got = packed->ToVector<BFloat16>();
  for (int64_t column = 0; column < 64; ++column) {
    for (int64_t input = 0; input < 96; ++input) {
      const int64_t panel = column / 16, pair = input / 2;
      const size_t at = ((panel * 48 + pair) * 16 + column % 16) * 2 + input % 2;
      const float want = column < out && input < in ? Rounded(ws[column * in + input]) : 0.0f;
      ASSERT_EQ(static_cast<float>(got[at]), want) << "column " << column << " input " << input;
    }
  }
}

// Row counts around the kernels' row blocks (8, 12) and the tiles' (32, and
// 256 a group), sizes off every multiple of 16 and 32, bias and ReLU: every
// kernel this CPU runs.
TEST(Bf16LinearTest, EqualsTheProductOfRoundedInputsInDoubleWithinRounding) {
  const std::vector<Bf16LinearKernel> kernels = Bf16LinearKernelsThisCpuRuns();
  std::string names;
  for (Bf16LinearKernel kernel : kernels) names += absl::StrCat(" ", Bf16LinearKernelName(kernel));
  std::printf("[ kernels  ]%s\n", names.c_str());
  uint64_t stream = 10;
  for (int64_t rows : {1, 4, 7, 8, 9, 31, 33, 130, 300}) {
    for (int64_t out : {1, 16, 17, 33, 100}) {
      for (int64_t in : {1, 31, 64, 70, 520}) {
        for (int variant = 0; variant < 3; ++variant) {
          const bool with_bias = variant != 1, relu = variant == 2;
          SCOPED_TRACE(absl::StrCat(rows, " rows, ", in, " -> ", out, with_bias ? ", bias" : "",
                                    relu ? ", relu" : ""));
          const Tensor x = Random({rows, in}, stream++), w = Random({out, in}, stream++);
          const Tensor b = Random({out}, stream++);
          absl::StatusOr<Tensor> packed = PackBf16LinearWeight(w);
          ASSERT_TRUE(packed.ok()) << packed.status();
          const Reference ref = Expected(x, w, with_bias ? &b : nullptr, relu);
          for (Bf16LinearKernel kernel : kernels) {
            SCOPED_TRACE(Bf16LinearKernelName(kernel));
            absl::StatusOr<Tensor> y =
                Bf16Linear(x, *packed, out, with_bias ? std::optional<Tensor>(b) : std::nullopt,
                           relu, kernel);
            ASSERT_TRUE(y.ok()) << y.status();
            ASSERT_EQ(y->shape(), (Shape{rows, out}));
            const std::vector<float> got = y->ToVector<float>();
            for (size_t i = 0; i < got.size(); ++i) {
              ASSERT_NEAR(got[i], ref.y[i], ref.bound[i]) << "entry " << i;
              if (relu) {
                ASSERT_GE(got[i], 0.0f) << "entry " << i;
              }
            }
          }
        }
      }
    }
  }
}

// A row's result is the same bits alone and among others (decoding's batch
// invariance): within a tile, across tiles and across groups of rows.
TEST(Bf16LinearTest, ARowsResultDoesNotDependOnTheRowsBesideIt) {
  const int64_t rows = 300, in = 200, out = 90;
  const Tensor x = Random({rows, in}, 2), w = Random({out, in}, 3), b = Random({out}, 4);
  const Tensor packed = *PackBf16LinearWeight(w);
  for (Bf16LinearKernel kernel : Bf16LinearKernelsThisCpuRuns()) {
    SCOPED_TRACE(Bf16LinearKernelName(kernel));
    const std::vector<float> all =
        Bf16Linear(x, packed, out, b, false, kernel)->ToVector<float>();
    for (int64_t r : {0, 5, 11, 12, 17, 31, 32, 255, 256, 299}) {
      const Tensor one = *x.Slice(r, r + 1);
      const std::vector<float> alone =
          Bf16Linear(one, packed, out, b, false, kernel)->ToVector<float>();
      for (int64_t o = 0; o < out; ++o) {
        ASSERT_EQ(alone[o], all[r * out + o]) << "row " << r << " column " << o;
      }
    }
  }
}

TEST(Bf16LinearTest, KeepsLeadingAxes) {
  const Tensor x = Random({4, 3, 1, 64}, 5), w = Random({96, 64}, 6);
  absl::StatusOr<Tensor> y = Bf16Linear(x, *PackBf16LinearWeight(w), 96);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{4, 3, 1, 96}));
}

TEST(Bf16LinearTest, RefusesAWeightPackedForOtherSizes) {
  const Tensor packed = *PackBf16LinearWeight(Random({40, 64}, 7));
  // 64 inputs pack to 64; 96 do not fit, nor do 100 outputs in 64 columns.
  absl::StatusOr<Tensor> wrong_in = Bf16Linear(Random({2, 96}, 8), packed, 40);
  ASSERT_FALSE(wrong_in.ok());
  EXPECT_NE(wrong_in.status().message().find("x has 96 inputs"), std::string::npos)
      << wrong_in.status();
  absl::StatusOr<Tensor> wrong_out = Bf16Linear(Random({2, 64}, 9), packed, 100);
  ASSERT_FALSE(wrong_out.ok());
  EXPECT_NE(wrong_out.status().message().find("out_features 100"), std::string::npos)
      << wrong_out.status();
  // An unpacked weight is not a packed one.
  absl::StatusOr<Tensor> unpacked = Bf16Linear(Random({2, 64}, 10), Random({40, 64}, 11), 40);
  ASSERT_FALSE(unpacked.ok());
  EXPECT_NE(unpacked.status().message().find("pack_bf16_linear_weight"), std::string::npos)
      << unpacked.status();
}

// The active kernel is the fastest this CPU runs; one it cannot run is
// refused by name, never run (TFM_CPU_ISA=avx2 leaves f32_of_pairs alone).
TEST(Bf16LinearTest, RunsTheFastestKernelAndRefusesOnesTheCpuLacks) {
  const std::vector<Bf16LinearKernel> runs = Bf16LinearKernelsThisCpuRuns();
  ASSERT_FALSE(runs.empty());
  EXPECT_EQ(runs.front(), Bf16LinearKernel::kF32OfPairs);
  EXPECT_EQ(ActiveBf16LinearKernel(), runs.back());
  const Tensor packed = *PackBf16LinearWeight(Random({16, 32}, 12));
  for (Bf16LinearKernel kernel : {Bf16LinearKernel::kF32OfPairs, Bf16LinearKernel::kAvx512Bf16,
                                  Bf16LinearKernel::kAmxBf16}) {
    const bool runnable = std::find(runs.begin(), runs.end(), kernel) != runs.end();
    absl::StatusOr<Tensor> y =
        Bf16Linear(Random({2, 32}, 13), packed, 16, std::nullopt, false, kernel);
    EXPECT_EQ(y.ok(), runnable) << Bf16LinearKernelName(kernel) << ": " << y.status();
    if (!runnable) {
      EXPECT_NE(y.status().message().find("not one this CPU runs"), std::string::npos)
          << y.status();
    }
  }
}

}  // namespace
}  // namespace tfm

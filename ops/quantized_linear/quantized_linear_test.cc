#include "ops/quantized_linear/quantized_linear.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "gtest/gtest.h"
#include "ops/quantized_linear/int8_panels.h"
#include "ops/quantized_linear/quantization_bound.h"
#include "ops/random/random.h"

namespace tfm {
namespace {

Tensor Random(const Shape& shape, uint64_t stream, float lo = -1.0f, float hi = 1.0f) {
  return *RandomUniform(shape, PhiloxState{11, stream, 0}, lo, hi);
}

// The double reference and each output's quantization bound
// (quantization_bound.h).
using Reference = QuantizationReference;

Reference Expected(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, bool relu,
                   int levels) {
  return QuantizedLinearReference(x, w, b, relu, levels);
}

// The largest error as a fraction of its bound (<= 1 passes).
double WorstFraction(const Tensor& y, const Reference& ref) {
  const std::vector<float> got = y.ToVector<float>();
  EXPECT_EQ(got.size(), ref.y.size());
  double worst = 0;
  for (size_t i = 0; i < got.size() && i < ref.y.size(); ++i) {
    const double fraction = std::abs(got[i] - ref.y[i]) / ref.bound[i];
    EXPECT_LE(fraction, 1.0) << "output " << i << ": " << got[i] << " vs " << ref.y[i] << " (bound "
                             << ref.bound[i] << ")";
    worst = std::max(worst, fraction);
  }
  return worst;
}

TEST(QuantizedLinearTest, HostKernelsIncludeTheAvx2One) {
  std::printf("[ cpu      ] %s\n", CpuSummary().c_str());
  std::vector<Int8Kernel> kernels = HostInt8Kernels();
  ASSERT_FALSE(kernels.empty());
  EXPECT_EQ(kernels.front(), Int8Kernel::kScalar);
  if (HostCpuFeatures().avx2) {
    EXPECT_NE(std::find(kernels.begin(), kernels.end(), Int8Kernel::kAvx2), kernels.end());
  }
  for (Int8Kernel kernel : kernels) std::printf("[ kernel   ] %s\n", Int8KernelName(kernel));
  std::printf("[ active   ] %s\n", Int8KernelName(ActiveInt8Kernel()));
}

// Every kernel this CPU runs (the AVX2 one always, as a CPU without VNNI
// would), at row counts around the row blocks (4, 6, 12), outputs around
// the panels (16 columns; pairs with AVX-512) and inputs around the groups
// of 4, with and without bias and ReLU: within the bound above.
TEST(QuantizedLinearTest, EveryHostKernelIsWithinTheQuantizationBound) {
  for (Int8Kernel kernel : HostInt8Kernels()) {
    double worst = 0;
    uint64_t stream = 1;
    for (int64_t rows : {1, 3, 4, 5, 6, 7, 12, 13, 25, 64}) {
      for (int64_t out : {1, 15, 16, 17, 33, 48, 100}) {
        for (int64_t in : {1, 3, 4, 7, 64, 300}) {
          const bool with_bias = (rows + out + in) % 2 == 0, relu = rows % 3 == 0;
          SCOPED_TRACE(absl::StrCat(Int8KernelName(kernel), ": ", rows, " rows, ", in, " -> ", out,
                                    with_bias ? ", bias" : "", relu ? ", relu" : ""));
          const Tensor x = Random({rows, in}, stream++), w = Random({out, in}, stream++);
          std::optional<Tensor> b;
          if (with_bias) b = Random({out}, stream++);
          absl::StatusOr<QuantizedWeight> q = QuantizeLinearWeight(w);
          ASSERT_TRUE(q.ok()) << q.status();
          absl::StatusOr<Tensor> y = QuantizedLinear(x, *q, b, relu, kernel);
          ASSERT_TRUE(y.ok()) << y.status();
          ASSERT_EQ(y->shape(), (Shape{rows, out}));
          worst = std::max(
              worst, WorstFraction(*y, Expected(x, w, b, relu, Int8ActivationLevels(kernel))));
        }
      }
    }
    std::printf("[ measured ] %s: largest error %.3f of the quantization bound\n",
                Int8KernelName(kernel), worst);
  }
}

// The AVX2 kernel's int16 step: activations at the top of their range
// against weights at +-127 in every pair, the case where 8-bit activations
// would saturate vpmaddubsw (2 x 255 x 127 > 32767) and lose half the sum.
// Every kernel must stay within the bound (and the exact integer sums are
// far from the float limits).
TEST(QuantizedLinearTest, WorstCaseForTheInt16SaturationStaysExact) {
  const int64_t rows = 3, in = 64, out = 32;
  std::vector<float> xs(rows * in), ws(out * in);
  for (int64_t k = 0; k < in; ++k) {
    xs[k] = 255.0f;                               // All at the top.
    xs[in + k] = k % 2 == 0 ? 255.0f : 0.0f;      // Top and zero.
    xs[2 * in + k] = k % 3 == 0 ? -255.0f : 255;  // Both signs.
  }
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t k = 0; k < in; ++k) {
      ws[o * in + k] = o % 3 == 0 ? 127.0f : o % 3 == 1 ? -127.0f : (k % 2 == 0 ? 127.0f : -127.0f);
    }
  }
  const Tensor x = *Tensor::FromVector<float>(xs, {rows, in});
  const Tensor w = *Tensor::FromVector<float>(ws, {out, in});
  const QuantizedWeight q = *QuantizeLinearWeight(w);
  for (Int8Kernel kernel : HostInt8Kernels()) {
    SCOPED_TRACE(Int8KernelName(kernel));
    absl::StatusOr<Tensor> y = QuantizedLinear(x, q, std::nullopt, false, kernel);
    ASSERT_TRUE(y.ok()) << y.status();
    const double worst =
        WorstFraction(*y, Expected(x, w, std::nullopt, false, Int8ActivationLevels(kernel)));
    // Row 0, all weights +127: 255 x 127 x 64 exactly (levels divide 255).
    EXPECT_FLOAT_EQ(y->data<float>()[0], 255.0f * 127.0f * in);
    std::printf("[ measured ] %s worst case: largest error %.3f of the bound\n",
                Int8KernelName(kernel), worst);
  }
}

// The VNNI kernels compute the reference's integer sums: the same outputs
// up to the float rounding of the last scaling.
TEST(QuantizedLinearTest, VnniKernelsEqualTheScalarReference) {
  const Tensor x = Random({37, 200}, 101), w = Random({70, 200}, 102), b = Random({70}, 103);
  const QuantizedWeight q = *QuantizeLinearWeight(w);
  const std::vector<float> reference =
      QuantizedLinear(x, q, b, true, Int8Kernel::kScalar)->ToVector<float>();
  for (Int8Kernel kernel : HostInt8Kernels()) {
    if (Int8ActivationLevels(kernel) != Int8ActivationLevels(Int8Kernel::kScalar)) continue;
    const std::vector<float> got = QuantizedLinear(x, q, b, true, kernel)->ToVector<float>();
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], reference[i], 2e-6 * (1 + std::abs(reference[i])))
          << Int8KernelName(kernel) << " output " << i;
    }
  }
}

// A row's result does not depend on its batch or on the number of threads.
TEST(QuantizedLinearTest, RowsAreIndependentOfBatchAndThreads) {
  const Tensor x = Random({29, 96}, 201), w = Random({80, 96}, 202);
  const QuantizedWeight q = *QuantizeLinearWeight(w);
  for (Int8Kernel kernel : HostInt8Kernels()) {
    const std::vector<float> all =
        QuantizedLinear(x, q, std::nullopt, false, kernel)->ToVector<float>();
    const Tensor row = *x.Slice(5, 6);  // Along the first dimension.
    const std::vector<float> alone =
        QuantizedLinear(row, q, std::nullopt, false, kernel)->ToVector<float>();
    for (int64_t j = 0; j < 80; ++j) ASSERT_EQ(alone[j], all[5 * 80 + j]) << Int8KernelName(kernel);
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      ThreadPool::ScopedDefault scoped(&pool);
      EXPECT_EQ(QuantizedLinear(x, q, std::nullopt, false, kernel)->ToVector<float>(), all)
          << Int8KernelName(kernel) << " on " << threads << " threads";
    }
  }
}

// An output over kInt8StreamOutputBytes is written with non-temporal
// stores (rows of 6,003 columns: starts of every alignment, and a partial
// last panel): each row equals the same row computed alone, which an
// ordinary store writes, on one to three threads (which claim the 376
// panels in runs of 48 or 32, the last run partial).
TEST(QuantizedLinearTest, StreamedLargeOutputsEqualRowsAlone) {
  const int64_t rows = 90, in = 64, out = 6003;
  ASSERT_GT(rows * out * static_cast<int64_t>(sizeof(float)), kInt8StreamOutputBytes);
  const Tensor x = Random({rows, in}, 301), w = Random({out, in}, 302), b = Random({out}, 303);
  const QuantizedWeight q = *QuantizeLinearWeight(w);
  for (Int8Kernel kernel : HostInt8Kernels()) {
    std::vector<float> alone;
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<float> row =
          QuantizedLinear(*x.Slice(r, r + 1), q, b, false, kernel)->ToVector<float>();
      alone.insert(alone.end(), row.begin(), row.end());
    }
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      ThreadPool::ScopedDefault scoped(&pool);
      EXPECT_EQ(QuantizedLinear(x, q, b, false, kernel)->ToVector<float>(), alone)
          << Int8KernelName(kernel) << " on " << threads << " threads";
    }
  }
}

TEST(QuantizedLinearTest, WeightsAreWithinHalfAStepOfTheirLevels) {
  const Tensor w = Random({19, 10}, 301);
  const QuantizedWeight q = *QuantizeLinearWeight(w);
  ASSERT_EQ(q.packed.shape(), (Shape{2, 3, 16, 4}));
  EXPECT_EQ(q.packed.dtype(), DType::kI8);
  EXPECT_EQ(q.out_features(), 19);
  const std::vector<float> ws = w.ToVector<float>(), scales = q.scales.ToVector<float>();
  const std::vector<int32_t> sums = q.row_sums.ToVector<int32_t>();
  const int8_t* packed = q.packed.data<int8_t>();
  for (int64_t j = 0; j < 19; ++j) {
    int32_t sum = 0;
    for (int64_t k = 0; k < 12; ++k) {
      const int8_t level = packed[((j / 16) * 3 + k / 4) * 64 + (j % 16) * 4 + k % 4];
      sum += level;
      if (k >= 10) {
        EXPECT_EQ(level, 0);
        continue;
      }
      EXPECT_LE(std::abs(level), 127);
      EXPECT_LE(std::abs(level * scales[j] - ws[j * 10 + k]), scales[j] / 2 * 1.0001f);
    }
    EXPECT_EQ(sum, sums[j]);
  }
}

TEST(QuantizedLinearTest, BadInputsAreClearErrors) {
  const Tensor w = Random({20, 8}, 401);
  const QuantizedWeight q = *QuantizeLinearWeight(w);
  absl::Status wrong_in = QuantizedLinear(Random({2, 12}, 402), q).status();
  EXPECT_NE(wrong_in.message().find("groups of 4 inputs"), std::string::npos) << wrong_in;
  absl::Status wrong_bias = QuantizedLinear(Random({2, 8}, 403), q, Random({19}, 404)).status();
  EXPECT_NE(wrong_bias.message().find("bias must be f32 [out_features]"), std::string::npos)
      << wrong_bias;
  QuantizedWeight not_int8 = q;
  not_int8.packed = Random({2, 2, 16, 4}, 405);
  absl::Status wrong_packed = QuantizedLinear(Random({2, 8}, 406), not_int8).status();
  EXPECT_NE(wrong_packed.message().find("packed must be i8"), std::string::npos) << wrong_packed;
  EXPECT_FALSE(QuantizeLinearWeight(Random({4}, 407)).ok());
  absl::StatusOr<Int8Kernel> unknown = ParseInt8Kernel("amx");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("scalar, avx2, avx_vnni, avx512_vnni"),
            std::string::npos);
  if (!HostCpuFeatures().avx512_vnni) {
    absl::Status missing =
        QuantizedLinear(Random({2, 8}, 408), q, std::nullopt, false, Int8Kernel::kAvx512Vnni)
            .status();
    EXPECT_NE(missing.message().find("does not run on this CPU"), std::string::npos) << missing;
  }
}

}  // namespace
}  // namespace tfm

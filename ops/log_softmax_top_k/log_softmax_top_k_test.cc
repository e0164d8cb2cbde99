#include "ops/log_softmax_top_k/log_softmax_top_k.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "ops/row_top_k/allowed_bits_testing.h"
#include "ops/softmax/softmax.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

using ::tfm::testing::RandomAllowedBits;

// Logit rows with what a search meets: ties (values on a coarse grid, so
// that log-probabilities tie too), -infinity (masked tokens), a row with
// NaN, a row of -infinity only, a row with +infinity, and lengths that are
// not a multiple of any vector width.
Tensor Logits(int64_t rows, int64_t n, uint64_t seed) {
  Tensor x = *RandomNormal({rows, n}, PhiloxState{seed, 0, 0}, 0.0f, 3.0f);
  float* v = x.data<float>();
  for (int64_t i = 0; i < rows * n; ++i) {
    if (i % 3 == 0) v[i] = std::round(v[i] * 2.0f) / 2.0f;
    if (i % 11 == 3) v[i] = -INFINITY;
  }
  if (rows > 5) {
    v[2 * n + n / 2] = NAN;
    std::fill(v + 3 * n, v + 4 * n, -INFINITY);
    v[4 * n + 1] = INFINITY;
    std::fill(v + 5 * n, v + 6 * n, 1.0f);  // All tied.
  }
  return x;
}

// Exactly RowTopKOf(LogSoftmax(x)): values to the bit (NaN-free: -inf
// compares equal) and columns, for counts below and above the row length,
// with and without a forbidden column and allowed bits (a constraint's),
// on every ISA path (the test runs per ISA), and on the GPU.
void ExpectEqualsRowTopKOfLogSoftmax(const Device& device) {
  {
    for (const int64_t n : {1, 5, 16, 37, 8000}) {
      for (const int64_t count : {int64_t{1}, int64_t{3}, int64_t{5}, int64_t{9}, int64_t{25},
                                  int64_t{40}, kMaxRowTopK + 7}) {
        if (count > kMaxRowTopK && !device.is_cpu()) continue;  // The CPU's alone.
        for (const int64_t forbidden : {int64_t{-1}, int64_t{0}, n / 2}) {
          for (const bool with_allowed : {false, true}) {
            const Tensor host = Logits(8, n, 100 + n + count);
            const Tensor x = *CopyToDevice(host, device);
            const Tensor allowed =
                with_allowed ? *CopyToDevice(RandomAllowedBits(8, n, n * count), device) : Tensor();
            absl::StatusOr<RowTopK> fused = LogSoftmaxTopK(x, count, forbidden, allowed);
            ASSERT_TRUE(fused.ok()) << fused.status();
            const RowTopK composed = *RowTopKOf(*LogSoftmax(x), count, forbidden, allowed);
            const std::string where =
                absl::StrCat(device.ToString(), " n ", n, " count ", count, " forbidden ",
                             forbidden, " allowed bits ", with_allowed);
            EXPECT_EQ(CopyToDevice(fused->columns, Device::Cpu())->ToVector<int32_t>(),
                      CopyToDevice(composed.columns, Device::Cpu())->ToVector<int32_t>())
                << where;
            const std::vector<float> got =
                CopyToDevice(fused->values, Device::Cpu())->ToVector<float>();
            const std::vector<float> want =
                CopyToDevice(composed.values, Device::Cpu())->ToVector<float>();
            ASSERT_EQ(got.size(), want.size());
            EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << where;
          }
        }
      }
    }
  }
}

TEST(LogSoftmaxTopKTest, EqualsRowTopKOfLogSoftmax) {
  ExpectEqualsRowTopKOfLogSoftmax(Device::Cpu());
}

TEST(LogSoftmaxTopKTest, EqualsRowTopKOfLogSoftmaxOnCuda) {
  TFM_SKIP_WITHOUT_GPU();
  ExpectEqualsRowTopKOfLogSoftmax(Device::Cuda(0));
}

// The values are log-probabilities: a row's best is its logit minus the
// log of the sum of exponentials (checked in double).
TEST(LogSoftmaxTopKTest, ValuesAreLogProbabilities) {
  const Tensor x = *RandomNormal({3, 100}, PhiloxState{9, 0, 0}, 0.0f, 2.0f);
  const RowTopK top = *LogSoftmaxTopK(x, 2);
  for (int64_t r = 0; r < 3; ++r) {
    const float* row = x.data<float>() + r * 100;
    double sum = 0;
    for (int64_t c = 0; c < 100; ++c) sum += std::exp(static_cast<double>(row[c]));
    const int32_t best = top.columns.data<int32_t>()[r * 2];
    EXPECT_NEAR(top.values.data<float>()[r * 2], row[best] - std::log(sum), 1e-5);
    for (int64_t c = 0; c < 100; ++c) EXPECT_LE(row[c], row[best]);
  }
}

TEST(LogSoftmaxTopKTest, RejectsBadArguments) {
  const Tensor x = *RandomNormal({2, 10}, PhiloxState{1, 0, 0}, 0.0f, 1.0f);
  EXPECT_FALSE(LogSoftmaxTopK(x, 0).ok());
  EXPECT_TRUE(LogSoftmaxTopK(x, kMaxRowTopK + 1).ok());  // The CPU takes any count.
  EXPECT_FALSE(LogSoftmaxTopK(x, 2, 10).ok());
  EXPECT_FALSE(LogSoftmaxTopK(*x.Reshape({20}), 2).ok());
  absl::StatusOr<RowTopK> bad_bits = LogSoftmaxTopK(x, 2, -1, *Tensor::Zeros({2, 2}, DType::kI32));
  ASSERT_FALSE(bad_bits.ok());
  EXPECT_NE(bad_bits.status().message().find("log_softmax_top_k_allowed"), std::string::npos)
      << bad_bits.status();
}

}  // namespace
}  // namespace tfm

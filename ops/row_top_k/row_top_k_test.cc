#include "ops/row_top_k/row_top_k.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "ops/row_top_k/allowed_bits_testing.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

using ::tfm::testing::OnCuda;
using ::tfm::testing::RandomAllowedBits;

// Log-probability-like rows with what a search meets: ties (values rounded
// to a coarse grid), -infinity (masked tokens), NaN, and whole dead rows.
Tensor Rows(int64_t rows, int64_t n, uint64_t seed) {
  Tensor x = *RandomNormal({rows, n}, PhiloxState{seed, 0, 0}, -8.0f, 3.0f);
  float* v = x.data<float>();
  for (int64_t i = 0; i < rows * n; ++i) {
    if (i % 7 == 0) v[i] = std::round(v[i] * 4.0f) / 4.0f;  // Many ties.
    if (i % 11 == 3) v[i] = -INFINITY;
    if (i % 29 == 5) v[i] = NAN;
  }
  if (rows > 2) std::fill(v + 2 * n, v + 3 * n, -INFINITY);  // Row 2 has nothing.
  return x;
}

struct Expected {
  std::vector<float> values;
  std::vector<int32_t> columns;
};

bool IsAllowed(const Tensor& allowed, int64_t row, int64_t column) {
  if (!allowed.defined()) return true;
  return BitRowHas(
      reinterpret_cast<const uint32_t*>(allowed.data<int32_t>()) + row * allowed.dim(1), column);
}

// The reference: every valid entry of each row (allowed, if `allowed` is
// given) sorted by (value desc, column asc), the first `count` kept, padded
// with (-inf, -1).
Expected Reference(const Tensor& x, int64_t count, int64_t forbidden,
                   const Tensor& allowed = Tensor()) {
  Expected out;
  const int64_t rows = x.dim(0), n = x.dim(1);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<std::pair<float, int32_t>> all;
    for (int64_t c = 0; c < n; ++c) {
      const float v = x.data<float>()[r * n + c];
      if (v > -INFINITY && c != forbidden && IsAllowed(allowed, r, c)) {
        all.push_back({v, static_cast<int32_t>(c)});
      }
    }
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (int64_t k = 0; k < count; ++k) {
      const bool valid = k < static_cast<int64_t>(all.size());
      out.values.push_back(valid ? all[k].first : -INFINITY);
      out.columns.push_back(valid ? all[k].second : -1);
    }
  }
  return out;
}

void ExpectEqual(const RowTopK& got, const Expected& expected) {
  const Tensor values = *CopyToDevice(got.values, Device::Cpu());
  const Tensor columns = *CopyToDevice(got.columns, Device::Cpu());
  EXPECT_EQ(values.ToVector<float>(), expected.values);
  EXPECT_EQ(columns.ToVector<int32_t>(), expected.columns);
}

TEST(RowTopKTest, CpuMatchesAFullSortWithTiesInfinitiesAndNaN) {
  for (const int64_t n : {int64_t{1}, int64_t{5}, int64_t{300}, int64_t{8000}}) {
    for (const int64_t count : {int64_t{1}, int64_t{3}, int64_t{9}, kMaxRowTopK}) {
      for (const int64_t forbidden : {int64_t{-1}, int64_t{0}, n - 1}) {
        SCOPED_TRACE(absl::StrCat("n ", n, " count ", count, " forbidden ", forbidden));
        const Tensor x = Rows(6, n, 7 + n);
        absl::StatusOr<RowTopK> got = RowTopKOf(x, count, forbidden);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(got->values.shape(), (Shape{6, count}));
        ExpectEqual(*got, Reference(x, count, forbidden));
      }
    }
  }
}

// A constrained search's bits (row_top_k_allowed): only allowed columns
// enter, with the forbidden column still kept out, and a row that allows
// none gives (-inf, -1) throughout.
TEST(RowTopKTest, AllowedBitsKeepOutEveryOtherColumn) {
  for (const int64_t n : {int64_t{1}, int64_t{31}, int64_t{33}, int64_t{300}, int64_t{8000}}) {
    for (const int64_t count : {int64_t{1}, int64_t{9}, int64_t{43}}) {
      SCOPED_TRACE(absl::StrCat("n ", n, " count ", count));
      const Tensor x = Rows(6, n, 11 + n);
      const Tensor allowed = RandomAllowedBits(6, n, n + count);
      absl::StatusOr<RowTopK> got = RowTopKOf(x, count, n - 1, allowed);
      ASSERT_TRUE(got.ok()) << got.status();
      const Expected expected = Reference(x, count, n - 1, allowed);
      ExpectEqual(*got, expected);
      // Row 1 allows nothing.
      for (int64_t k = 0; k < count; ++k) EXPECT_EQ(expected.columns[count + k], -1);
    }
  }
}

TEST(RowTopKTest, RefusesAllowedBitsOfAnotherShapeOrType) {
  const Tensor x = Rows(3, 40, 1);
  for (const Tensor& bad :
       {*Tensor::Zeros({3, 1}, DType::kI32), *Tensor::Zeros({2, 2}, DType::kI32),
        *Tensor::Zeros({3, 2}, DType::kF32)}) {
    absl::StatusOr<RowTopK> got = RowTopKOf(x, 2, -1, bad);
    ASSERT_FALSE(got.ok()) << bad.DebugString();
    EXPECT_NE(got.status().message().find("row_top_k_allowed"), std::string::npos) << got.status();
    EXPECT_NE(got.status().message().find("allowed must be i32 [3, 2]"), std::string::npos)
        << got.status();
  }
}

TEST(RowTopKTest, RefusesBadCountsAndColumnsNamingTheOp) {
  const Tensor x = Rows(2, 10, 1);
  absl::StatusOr<RowTopK> none = RowTopKOf(x, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("row_top_k"), std::string::npos) << none.status();
  EXPECT_NE(none.status().message().find("count"), std::string::npos) << none.status();
  // The CPU takes counts past the CUDA kernel's kMaxRowTopK (a wide beam's).
  const Tensor wide = Rows(3, 300, 2);
  absl::StatusOr<RowTopK> many = RowTopKOf(wide, 2 * kMaxRowTopK + 1);
  ASSERT_TRUE(many.ok()) << many.status();
  const Expected expected = Reference(wide, 2 * kMaxRowTopK + 1, -1);
  EXPECT_EQ(many->columns.ToVector<int32_t>(), expected.columns);
  absl::StatusOr<RowTopK> got = RowTopKOf(x, 2, 10);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("forbidden column 10"), std::string::npos) << got.status();
  EXPECT_FALSE(RowTopKOf(*Tensor::Zeros({10}, DType::kF32), 2).ok());
}

// No arithmetic touches the values: the CUDA kernel returns exactly the CPU
// kernel's entries (tolerance zero), vocabulary-sized rows included.
TEST(RowTopKTest, CudaMatchesCpuExactly) {
  TFM_SKIP_WITHOUT_GPU();
  const struct {
    int64_t rows, n, count;
  } cases[] = {{1, 1, 1},
               {6, 300, 9},
               {3, 5, 64},
               {64, 8000, 9},
               {2000, 32000, 9},
               {400, 40000, 33},
               {0, 100, 3},
               // Each count picks the smallest kept list that holds it:
               // lists of 3, 5 and 25 too.
               {8, 1000, 3},
               {8, 1000, 5},
               {8, 1000, 25}};
  for (const auto& c : cases) {
    for (const int64_t forbidden : {int64_t{-1}, c.n - 1}) {
      SCOPED_TRACE(absl::StrCat(c.rows, " x ", c.n, " count ", c.count, " forbidden ", forbidden));
      const Tensor x = Rows(c.rows, c.n, 3 + c.rows);
      const RowTopK cpu = *RowTopKOf(x, c.count, forbidden);
      const Tensor on_gpu = OnCuda(x);
      absl::StatusOr<RowTopK> gpu = RowTopKOf(on_gpu, c.count, forbidden);
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      EXPECT_EQ(gpu->values.device(), Device::Cuda(0));
      ExpectEqual(*gpu, Expected{cpu.values.ToVector<float>(), cpu.columns.ToVector<int32_t>()});
      // With allowed bits, the CPU's entries too.
      const Tensor allowed = RandomAllowedBits(c.rows, c.n, c.count);
      const RowTopK cpu_allowed = *RowTopKOf(x, c.count, forbidden, allowed);
      absl::StatusOr<RowTopK> gpu_allowed = RowTopKOf(on_gpu, c.count, forbidden, OnCuda(allowed));
      ASSERT_TRUE(gpu_allowed.ok()) << gpu_allowed.status();
      ExpectEqual(*gpu_allowed, Expected{cpu_allowed.values.ToVector<float>(),
                                         cpu_allowed.columns.ToVector<int32_t>()});
      // Timing: the launch plus the copy back of the small result, as a
      // decoding step pays it (first call warms up).
      const auto start = std::chrono::steady_clock::now();
      constexpr int kRepeats = 20;
      for (int i = 0; i < kRepeats; ++i) {
        (void)*CopyToDevice(RowTopKOf(on_gpu, c.count, forbidden)->columns, Device::Cpu());
      }
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count() /
          kRepeats;
      std::printf(
          "row_top_k cuda %lld x %lld count %lld forbidden %lld: equal to the CPU, "
          "%.3f ms per call with the copy back\n",
          static_cast<long long>(c.rows), static_cast<long long>(c.n),
          static_cast<long long>(c.count), static_cast<long long>(forbidden), ms);
    }
  }
}

}  // namespace
}  // namespace tfm

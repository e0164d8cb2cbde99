#include "ops/ensemble_combine/ensemble_combine.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

TEST(EnsembleCombineTest, CombinesElementwise) {
  const std::vector<float> a = {std::log(0.5f), std::log(0.25f), kMinusInfinity, kMinusInfinity};
  const std::vector<float> b = {std::log(0.125f), std::log(0.25f), std::log(0.5f), kMinusInfinity};
  const std::vector<Tensor> members = {*Tensor::FromVector<float>(a, {1, 4}),
                                       *Tensor::FromVector<float>(b, {1, 4})};
  absl::StatusOr<Tensor> mean = EnsembleCombine(members, /*probability_mean=*/true);
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_NEAR(mean->span<float>()[0], std::log(0.3125f), 1e-6);
  EXPECT_NEAR(mean->span<float>()[1], std::log(0.25f), 1e-6);
  EXPECT_NEAR(mean->span<float>()[2], std::log(0.25f), 1e-6);  // One member rules it out.
  EXPECT_EQ(mean->span<float>()[3], kMinusInfinity);
  absl::StatusOr<Tensor> log_mean = EnsembleCombine(members, /*probability_mean=*/false);
  ASSERT_TRUE(log_mean.ok()) << log_mean.status();
  EXPECT_NEAR(log_mean->span<float>()[0], std::log(0.25f), 1e-6);  // sqrt(0.5 * 0.125).
  EXPECT_NEAR(log_mean->span<float>()[1], std::log(0.25f), 1e-6);
  EXPECT_EQ(log_mean->span<float>()[2], kMinusInfinity);
}

// Against the formulas in double, for 1 to 5 members of random
// log-probabilities with -infinity entries.
TEST(EnsembleCombineTest, MatchesTheFormulasInDouble) {
  for (int count = 1; count <= 5; ++count) {
    std::vector<Tensor> members;
    for (int k = 0; k < count; ++k) {
      Tensor x = *RandomNormal({7, 301}, PhiloxState{17, static_cast<uint64_t>(k), 0}, -6.0f, 3.0f);
      for (int64_t i = 0; i < x.num_elements(); i += 13 + k) x.data<float>()[i] = kMinusInfinity;
      members.push_back(x);
    }
    for (const bool probability_mean : {true, false}) {
      SCOPED_TRACE(absl::StrCat(count, " members, probability_mean ", probability_mean));
      const Tensor got = *EnsembleCombine(members, probability_mean);
      for (int64_t i = 0; i < got.num_elements(); ++i) {
        double expected = 0;
        bool none = true;
        for (const Tensor& m : members) {
          const double l = m.data<float>()[i];
          none = none && std::isinf(l);
          expected += probability_mean ? std::exp(l) : l;
        }
        expected = probability_mean ? std::log(expected / count) : expected / count;
        const float value = got.data<float>()[i];
        if (std::isinf(expected)) {
          EXPECT_EQ(value, kMinusInfinity) << i;
        } else {
          EXPECT_NEAR(value, expected, 2e-5 * (1 + std::abs(expected))) << i;
        }
        if (none) EXPECT_EQ(value, kMinusInfinity) << i;
      }
    }
  }
}

TEST(EnsembleCombineTest, RefusesMembersOfOtherShapesNamingThem) {
  const Tensor a = *Tensor::Zeros({2, 5}, DType::kF32);
  absl::StatusOr<Tensor> got = EnsembleCombine({a, *Tensor::Zeros({2, 4}, DType::kF32)}, true);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("member 1"), std::string::npos) << got.status();
  EXPECT_FALSE(EnsembleCombine({*Tensor::Zeros({5}, DType::kF32)}, true).ok());
  EXPECT_FALSE(EnsembleCombine({}, true).ok());
}

// On a GPU within the ulps of expf and logf of the CPU's, -infinity where
// the CPU has it; the mean of log-probabilities to the bit.
TEST(EnsembleCombineTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  for (const int count : {1, 3, 8}) {
    std::vector<Tensor> members, on_gpu;
    for (int k = 0; k < count; ++k) {
      Tensor x =
          *RandomNormal({64, 8000}, PhiloxState{5, static_cast<uint64_t>(k), 0}, -9.0f, 3.0f);
      for (int64_t i = 0; i < x.num_elements(); i += 7 + k) x.data<float>()[i] = kMinusInfinity;
      members.push_back(x);
      on_gpu.push_back(*CopyToDevice(x, Device::Cuda(0)));
    }
    for (const bool probability_mean : {true, false}) {
      SCOPED_TRACE(absl::StrCat(count, " members, probability_mean ", probability_mean));
      const Tensor cpu = *EnsembleCombine(members, probability_mean);
      absl::StatusOr<Tensor> gpu = EnsembleCombine(on_gpu, probability_mean);
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      const std::vector<float> want = cpu.ToVector<float>();
      const std::vector<float> got = CopyToDevice(*gpu, Device::Cpu())->ToVector<float>();
      for (size_t i = 0; i < want.size(); ++i) {
        if (!probability_mean || std::isinf(want[i])) {
          ASSERT_EQ(got[i], want[i]) << i;
        } else {
          ASSERT_NEAR(got[i], want[i], 1e-6 * (1 + std::abs(want[i]))) << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tfm

#include "ops/cast/cast.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

using ::tfm::testing::HostF32;
using ::tfm::testing::OnCuda;

constexpr DType kFloating[] = {DType::kF32, DType::kF16, DType::kBF16};

// The raw bits of a host tensor, for bit-for-bit comparisons (NaN included).
std::vector<uint8_t> Bits(const Tensor& host) {
  std::vector<uint8_t> bits(host.num_elements() * DTypeSize(host.dtype()));
  if (!bits.empty()) std::memcpy(bits.data(), host.raw_data(), bits.size());
  return bits;
}

// Random values spanning many binades, with specials spread through them.
Tensor Values(int64_t count) {
  Tensor x = *RandomNormal({count}, PhiloxState{23, 0, 0}, 0.0f, 1.0f);
  const float specials[] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e-40f, 3e38f, 65520.0f};
  float* v = x.data<float>();
  for (int64_t i = 0; i < count; ++i) {
    v[i] = i % 13 == 0 ? specials[(i / 13) % 8] : v[i] * std::ldexp(1.0f, (i % 41) - 20);
  }
  return x;
}

TEST(CastTest, RoundsToNearestEvenAndWidensExactly) {
  // 1 + 2^-8 is halfway between the bf16 neighbours 1 and 1 + 2^-7: the even
  // one (1) wins; 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6 and
  // goes to the even 1 + 2^-6; just past halfway rounds up.
  const Tensor x = *Tensor::FromVector<float>(
      {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, -2.5f, INFINITY}, {5});
  absl::StatusOr<Tensor> bf16 = Cast(x, DType::kBF16);
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ(bf16->dtype(), DType::kBF16);
  absl::StatusOr<Tensor> back = Cast(*bf16, DType::kF32);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToVector<float>(),
            (std::vector<float>{1.0f, 1.0f + 0x1p-6f, 1.0f + 0x1p-7f, -2.5f, INFINITY}));
  // Widening then narrowing again gives the same bits.
  EXPECT_EQ(Bits(*Cast(*back, DType::kBF16)), Bits(*bf16));
}

TEST(CastTest, AgreesWithTheHostConversionsForEveryPair) {
  const Tensor x = Values(1000);
  for (const DType from : kFloating) {
    const Tensor source = testing::HostAs(x, from);
    for (const DType to : kFloating) {
      SCOPED_TRACE(absl::StrCat(DTypeName(from), " -> ", DTypeName(to)));
      absl::StatusOr<Tensor> out = Cast(source, to);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ(out->shape(), x.shape());
      EXPECT_EQ(Bits(*out), Bits(testing::HostAs(HostF32(source), to)));
    }
  }
}

TEST(CastTest, RefusesIntegersNamingTheOp) {
  const absl::Status status = Cast(*Tensor::Zeros({3}, DType::kI32), DType::kF32).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("cast"), std::string::npos) << status;
  EXPECT_NE(status.message().find("i32"), std::string::npos) << status;
  EXPECT_FALSE(Cast(*Tensor::Zeros({3}, DType::kF32), DType::kI64).ok());
}

// A list of tensors of several shapes (one empty) cast in one call: each
// output is that tensor's own Cast, bit for bit; a list of mixed dtypes is
// refused naming the entry.
std::vector<Tensor> ListOfShapes(DType dtype) {
  std::vector<Tensor> list;
  const Tensor x = Values(5000);
  int64_t at = 0;
  for (const int64_t count : {int64_t{3}, int64_t{0}, int64_t{4097}, int64_t{1}, int64_t{700}}) {
    list.push_back(testing::HostAs(*x.Slice(at, at + count), dtype));
    at += count;
  }
  return list;
}

// Values that differ from `expected` in `actual` (same length), through f32
// (exact for all three dtypes): NaN payloads may differ between devices'
// conversions, the rest must be the same bits (signed zeros, subnormals).
int64_t DifferingValues(const Tensor& actual, const Tensor& expected) {
  const std::vector<float> a = HostF32(actual).ToVector<float>();
  const std::vector<float> e = HostF32(expected).ToVector<float>();
  EXPECT_EQ(a.size(), e.size());
  int64_t differing = 0;
  for (size_t i = 0; i < e.size() && i < a.size(); ++i) {
    differing += std::isnan(e[i]) ? !std::isnan(a[i]) : std::memcmp(&e[i], &a[i], 4) != 0;
  }
  return differing;
}

// Every pair of dtypes: ListOfShapes cast in one call (on the GPU with
// `gpu`) gives each tensor's own CPU cast, in shape, dtype and values.
void ExpectListCastsAsSingleCasts(bool gpu) {
  for (const DType from : kFloating) {
    const std::vector<Tensor> host = ListOfShapes(from);
    std::vector<Tensor> list;
    for (const Tensor& t : host) list.push_back(gpu ? OnCuda(t) : t);
    for (const DType to : kFloating) {
      SCOPED_TRACE(absl::StrCat(DTypeName(from), " -> ", DTypeName(to)));
      absl::StatusOr<std::vector<Tensor>> out = CastAll(list, to);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->size(), list.size());
      for (size_t i = 0; i < list.size(); ++i) {
        const Tensor expected = *Cast(host[i], to);
        EXPECT_EQ((*out)[i].device(), list[i].device());
        EXPECT_EQ((*out)[i].dtype(), to);
        EXPECT_EQ((*out)[i].shape(), list[i].shape());
        EXPECT_EQ(DifferingValues((*out)[i], expected), 0) << "entry " << i;
      }
    }
  }
}

TEST(CastTest, AListCastsEachTensorAsItsOwnCast) {
  ExpectListCastsAsSingleCasts(/*gpu=*/false);
  EXPECT_TRUE(CastAll({}, DType::kBF16)->empty());
  const absl::Status mixed =
      CastAll({*Tensor::Zeros({2}, DType::kF32), *Tensor::Zeros({2}, DType::kBF16)}, DType::kF16)
          .status();
  EXPECT_EQ(mixed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.message().find("x[1]"), std::string::npos) << mixed;
}

// Both devices round with round-to-nearest-even: the CUDA kernel's bits
// equal the CPU kernel's for every pair, specials and empty tensors included.
TEST(CastTest, CudaMatchesCpuBitForBit) {
  TFM_SKIP_WITHOUT_GPU();
  for (const int64_t count : {int64_t{0}, int64_t{7}, int64_t{1000}, int64_t{1} << 20}) {
    const Tensor x = Values(count);
    for (const DType from : kFloating) {
      const Tensor source = testing::HostAs(x, from);
      for (const DType to : kFloating) {
        SCOPED_TRACE(absl::StrCat(DTypeName(from), " -> ", DTypeName(to), " count ", count));
        absl::StatusOr<Tensor> gpu = Cast(OnCuda(source), to);
        ASSERT_TRUE(gpu.ok()) << gpu.status();
        EXPECT_EQ(gpu->device(), Device::Cuda(0));
        EXPECT_EQ(gpu->dtype(), to);
        const int64_t differing = DifferingValues(*gpu, *Cast(source, to));
        std::printf("cast %s -> %s, %lld elements: %lld differ from the CPU\n",
                    std::string(DTypeName(from)).c_str(), std::string(DTypeName(to)).c_str(),
                    static_cast<long long>(count), static_cast<long long>(differing));
        EXPECT_EQ(differing, 0);
      }
    }
  }
}

// Views one element into their buffers (not 16-byte aligned: the kernels'
// element-by-element path), alone and in a list beside aligned tensors.
TEST(CastTest, CudaCastsViewsOffTheAlignment) {
  TFM_SKIP_WITHOUT_GPU();
  const Tensor x = Values(5001);
  for (const DType from : kFloating) {
    const Tensor source = testing::HostAs(x, from);
    const Tensor on_gpu = OnCuda(source);
    const Tensor view = *on_gpu.Slice(1, 5001), host_view = *source.Slice(1, 5001);
    for (const DType to : kFloating) {
      SCOPED_TRACE(absl::StrCat(DTypeName(from), " -> ", DTypeName(to)));
      absl::StatusOr<Tensor> single = Cast(view, to);
      ASSERT_TRUE(single.ok()) << single.status();
      EXPECT_EQ(DifferingValues(*single, *Cast(host_view, to)), 0);
      absl::StatusOr<std::vector<Tensor>> listed = CastAll({view, on_gpu}, to);
      ASSERT_TRUE(listed.ok()) << listed.status();
      EXPECT_EQ(DifferingValues((*listed)[0], *Cast(host_view, to)), 0);
      EXPECT_EQ(DifferingValues((*listed)[1], *Cast(source, to)), 0);
    }
  }
}

// The one-launch list kernel gives each tensor's CPU cast, chunk
// boundaries and an empty entry included.
TEST(CastTest, CudaListMatchesCpuBitForBit) {
  TFM_SKIP_WITHOUT_GPU();
  ExpectListCastsAsSingleCasts(/*gpu=*/true);
}

}  // namespace
}  // namespace tfm

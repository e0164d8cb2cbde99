#include "ops/attention/cudnn_sdpa.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "core/tensor.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "ops/attention/attention.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

struct Case {
  int batch, heads, q_len, k_len, head_dim;
  bool causal;
  bool key_lengths;  // Shorter keys in every batch entry but the first.
  bool bf16 = true;  // Else fp16.
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return absl::StrCat("b", c.batch, "h", c.heads, "q", c.q_len, "k", c.k_len, "d", c.head_dim,
                      c.causal ? "_causal" : "", c.key_lengths ? "_lengths" : "",
                      c.bf16 ? "_bf16" : "_fp16");
}

// Random values rounded to the half type: the GPU gets them in that type, the
// CPU reference the same values in f32, so only the computation differs.
struct RoundedInput {
  Tensor device;
  Tensor reference;
};

RoundedInput RandomInput(const Shape& shape, bool bf16, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t count = NumElements(shape);
  std::vector<float> values(count);
  Tensor half = *Tensor::Empty(shape, bf16 ? DType::kBF16 : DType::kF16);
  for (int64_t i = 0; i < count; ++i) {
    const float x = normal(rng);
    if (bf16) {
      half.data<BFloat16>()[i] = BFloat16(x);
      values[i] = static_cast<float>(half.data<BFloat16>()[i]);
    } else {
      half.data<Half>()[i] = Half(x);
      values[i] = static_cast<float>(half.data<Half>()[i]);
    }
  }
  return {*CopyToDevice(half, Device::Cuda(0)), *Tensor::FromVector<float>(values, shape)};
}

// A device tensor's elements as floats on the host.
std::vector<float> ToHostFloats(const Tensor& device_tensor) {
  Tensor host = *CopyToDevice(device_tensor, Device::Cpu());
  std::vector<float> values(host.num_elements());
  for (int64_t i = 0; i < host.num_elements(); ++i) {
    switch (host.dtype()) {
      case DType::kBF16:
        values[i] = static_cast<float>(host.data<BFloat16>()[i]);
        break;
      case DType::kF16:
        values[i] = static_cast<float>(host.data<Half>()[i]);
        break;
      default:
        values[i] = host.data<float>()[i];
    }
  }
  return values;
}

// Elementwise |actual - expected| <= 2e-2 * (|expected| + max |expected|):
// relative where values are large, and relative to the tensor's scale where
// they are near zero (half-precision inputs to the matmuls).
void ExpectClose(const std::vector<float>& actual, const Tensor& expected, const char* what) {
  absl::Span<const float> want = expected.span<float>();
  ASSERT_EQ(actual.size(), want.size()) << what;
  float scale = 0.0f;
  for (float x : want) scale = std::max(scale, std::fabs(x));
  int reported = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const float tolerance = 2e-2f * (std::fabs(want[i]) + scale);
    if (!(std::fabs(actual[i] - want[i]) <= tolerance)) {
      ADD_FAILURE() << what << "[" << i << "] = " << actual[i] << ", expected " << want[i]
                    << " (tolerance " << tolerance << ")";
      if (++reported == 10) return;
    }
  }
}

class CudnnSdpaTest : public testing::TestWithParam<Case> {};

TEST_P(CudnnSdpaTest, MatchesTheCpuOpForwardAndBackward) {
  TFM_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(CudnnSdpaAvailable());
  const Case& c = GetParam();
  std::mt19937 rng(1234);
  const Shape q_shape = {c.batch, c.heads, c.q_len, c.head_dim};
  const Shape kv_shape = {c.batch, c.heads, c.k_len, c.head_dim};
  RoundedInput q = RandomInput(q_shape, c.bf16, rng);
  RoundedInput k = RandomInput(kv_shape, c.bf16, rng);
  RoundedInput v = RandomInput(kv_shape, c.bf16, rng);
  RoundedInput d_out = RandomInput(q_shape, c.bf16, rng);

  AttentionOptions options;
  options.causal = c.causal;
  CudnnSdpaProblem problem{
      c.batch,    c.heads, c.q_len,  c.k_len,
      c.head_dim, c.bf16,  c.causal, 1.0f / std::sqrt(static_cast<float>(c.head_dim)),
      nullptr};
  Tensor key_lengths_device;
  if (c.key_lengths) {
    std::vector<int32_t> lengths(c.batch);
    for (int b = 0; b < c.batch; ++b) lengths[b] = std::max(1, c.k_len - b * c.k_len / 3);
    options.key_lengths = *Tensor::FromVector<int32_t>(lengths, {c.batch});
    key_lengths_device = *Int32OnDevice(lengths, {c.batch}, Device::Cuda(0));
    problem.key_lengths_device = key_lengths_device.data<int32_t>();
  }
  const DType half_type = c.bf16 ? DType::kBF16 : DType::kF16;
  const Device gpu = Device::Cuda(0);

  // Forward.
  AttentionOutput expected =
      *ScaledDotProductAttention(q.reference, k.reference, v.reference, options);
  Tensor out = *Tensor::Empty(q_shape, half_type, gpu);
  Tensor lse = *Tensor::Empty({c.batch, c.heads, c.q_len}, DType::kF32, gpu);
  absl::Status status =
      CudnnSdpaForward(problem, q.device.raw_data(), k.device.raw_data(), v.device.raw_data(),
                       out.raw_data(), lse.data<float>(), nullptr);
  if (c.causal && c.q_len != c.k_len && problem.key_lengths_device != nullptr) {
    // Wrong results from cuDNN here on an H100: refused, the caller falls back.
    EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
    return;
  }
  ASSERT_TRUE(status.ok()) << status;
  ExpectClose(ToHostFloats(out), expected.out, "out");
  ExpectClose(ToHostFloats(lse), expected.lse, "lse");

  // Backward, from the GPU's own out and lse as a layer would run it.
  AttentionGrads expected_grads = *ScaledDotProductAttentionBackward(
      q.reference, k.reference, v.reference, expected.out, expected.lse, d_out.reference, options);
  Tensor dq = *Tensor::Empty(q_shape, half_type, gpu);
  Tensor dk = *Tensor::Empty(kv_shape, half_type, gpu);
  Tensor dv = *Tensor::Empty(kv_shape, half_type, gpu);
  status = CudnnSdpaBackward(problem, q.device.raw_data(), k.device.raw_data(), v.device.raw_data(),
                             out.raw_data(), lse.data<float>(), d_out.device.raw_data(),
                             dq.raw_data(), dk.raw_data(), dv.raw_data(), nullptr);
  ASSERT_TRUE(status.ok()) << status;
  ExpectClose(ToHostFloats(dq), expected_grads.dq, "dq");
  ExpectClose(ToHostFloats(dk), expected_grads.dk, "dk");
  ExpectClose(ToHostFloats(dv), expected_grads.dv, "dv");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudnnSdpaTest,
    testing::Values(Case{2, 3, 64, 64, 64, false, false}, Case{2, 3, 64, 64, 64, true, false},
                    Case{2, 2, 128, 128, 64, false, true}, Case{2, 2, 128, 128, 64, true, true},
                    Case{1, 2, 1000, 1000, 64, false, false},
                    Case{2, 2, 1000, 1000, 64, true, true}, Case{2, 2, 1000, 1000, 64, false, true},
                    // Queries that are the last of the keys (decoding with a cache).
                    Case{2, 2, 64, 192, 64, true, false}, Case{2, 2, 100, 300, 64, true, true},
                    Case{2, 2, 128, 128, 128, true, false},
                    Case{2, 2, 128, 128, 64, true, true, /*bf16=*/false}),
    CaseName);

TEST(CudnnSdpaPlanCacheTest, RepeatedCallsGiveTheSameResult) {
  TFM_SKIP_WITHOUT_GPU();
  std::mt19937 rng(7);
  const Shape shape = {1, 2, 256, 64};
  RoundedInput q = RandomInput(shape, true, rng);
  RoundedInput k = RandomInput(shape, true, rng);
  RoundedInput v = RandomInput(shape, true, rng);
  const CudnnSdpaProblem problem{1, 2, 256, 256, 64, true, true, 0.125f, nullptr};
  std::vector<std::vector<float>> outs;
  for (int run = 0; run < 2; ++run) {
    Tensor out = *Tensor::Empty(shape, DType::kBF16, Device::Cuda(0));
    Tensor lse = *Tensor::Empty({1, 2, 256}, DType::kF32, Device::Cuda(0));
    absl::Status status =
        CudnnSdpaForward(problem, q.device.raw_data(), k.device.raw_data(), v.device.raw_data(),
                         out.raw_data(), lse.data<float>(), nullptr);
    ASSERT_TRUE(status.ok()) << status;
    outs.push_back(ToHostFloats(out));
  }
  EXPECT_EQ(outs[0], outs[1]);
}

TEST(CudnnSdpaErrorTest, UnsupportedHeadDimIsAnErrorNotACrash) {
  TFM_SKIP_WITHOUT_GPU();
  const Device gpu = Device::Cuda(0);
  for (int head_dim : {20, 136, 256}) {
    const Shape shape = {1, 1, 64, head_dim};
    Tensor q = *Tensor::Empty(shape, DType::kBF16, gpu);
    Tensor out = *Tensor::Empty(shape, DType::kBF16, gpu);
    Tensor lse = *Tensor::Empty({1, 1, 64}, DType::kF32, gpu);
    const CudnnSdpaProblem problem{1, 1, 64, 64, head_dim, true, false, 0.1f, nullptr};
    absl::Status status = CudnnSdpaForward(problem, q.raw_data(), q.raw_data(), q.raw_data(),
                                           out.raw_data(), lse.data<float>(), nullptr);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
    EXPECT_NE(status.message().find("head_dim"), std::string::npos) << status;
  }
}

TEST(CudnnSdpaErrorTest, CausalWithMoreQueriesThanKeysIsUnimplemented) {
  TFM_SKIP_WITHOUT_GPU();
  const Device gpu = Device::Cuda(0);
  Tensor q = *Tensor::Empty({1, 1, 128, 64}, DType::kBF16, gpu);
  Tensor out = *Tensor::Empty({1, 1, 128, 64}, DType::kBF16, gpu);
  Tensor lse = *Tensor::Empty({1, 1, 128}, DType::kF32, gpu);
  const CudnnSdpaProblem problem{1, 1, 128, 64, 64, true, true, 0.125f, nullptr};
  absl::Status status = CudnnSdpaForward(problem, q.raw_data(), q.raw_data(), q.raw_data(),
                                         out.raw_data(), lse.data<float>(), nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
}

}  // namespace
}  // namespace tfm

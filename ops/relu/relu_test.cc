#include "ops/relu/relu.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "ops/dropout/dropout.h"
#include "ops/random/random.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"
#include "tests/util/gradient_check.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

using ::tfm::testing::AllClose;
using ::tfm::testing::CheckGradients;
using ::tfm::testing::HostAs;
using ::tfm::testing::HostF32;
using ::tfm::testing::NamedTensors;
using ::tfm::testing::OnCuda;
using ::tfm::testing::RoundedThrough;
using ::tfm::testing::Tolerance;
using ::tfm::testing::TorchReference;

Tensor Random(const Shape& shape, uint64_t stream) {
  return *RandomUniform(shape, PhiloxState{17, stream, 0}, -1.0f, 1.0f);
}

TEST(ReluTest, Values) {
  const Tensor x = *Tensor::FromVector<float>({-1, 0, 2, NAN}, {4});
  const std::vector<float> y = Relu(x)->ToVector<float>();
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 2.0f);
  EXPECT_TRUE(std::isnan(y[3]));  // NaN propagates, as in PyTorch.
}

// The vector body and the scalar tail must agree element for element:
// special values at every position of sizes around the vector width.
TEST(ReluTest, VectorBodyAndTailAgree) {
  const float specials[] = {-1.5f, -0.0f, 0.0f, 3.0f, NAN, -INFINITY, INFINITY};
  for (int n : {1, 7, 8, 9, 17, 31, 70001}) {
    std::vector<float> x(n), dy(n);
    for (int i = 0; i < n; ++i) {
      x[i] = specials[i % 7];
      dy[i] = static_cast<float>(i) + 0.5f;
    }
    const Tensor xt = *Tensor::FromVector<float>(x, {n});
    const std::vector<float> y = Relu(xt)->ToVector<float>();
    const std::vector<float> dx =
        ReluBackward(*Tensor::FromVector<float>(dy, {n}), *Relu(xt))->ToVector<float>();
    for (int i = 0; i < n; ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(y[i])) << n << " " << i;
      } else {
        const float expected = x[i] > 0.0f ? x[i] : 0.0f;
        EXPECT_EQ(y[i], expected) << n << " " << i;
        EXPECT_FALSE(std::signbit(y[i])) << n << " " << i;  // -0 gives +0.
      }
      // Gradient only where the output is > 0 (not at 0, not at NaN).
      EXPECT_EQ(dx[i], y[i] > 0.0f ? dy[i] : 0.0f) << n << " " << i;
    }
  }
}

TEST(ReluTest, Gradients) {
  // Keep inputs farther than the finite-difference step from the kink at 0.
  Tensor x = Random({3, 7}, 1);
  for (float& v : x.span<float>()) v += v >= 0 ? 0.05f : -0.05f;
  auto forward = [](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> out = Relu(in[0]);
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{*out};
  };
  auto backward = [](const std::vector<Tensor>&, const std::vector<Tensor>& out,
                     const std::vector<Tensor>& dout) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> dx = ReluBackward(dout[0], out[0]);
    if (!dx.ok()) return dx.status();
    return std::vector<Tensor>{*dx};
  };
  EXPECT_TRUE(CheckGradients(forward, backward, {x}));
}

TEST(ReluTest, MatchesTorch) {
  NamedTensors inputs = {{"x1", Random({2, 3, 5}, 1)},
                         {"dy1", Random({2, 3, 5}, 2)},
                         {"x2", Random({300, 257}, 3)},
                         {"dy2", Random({300, 257}, 4)}};
  absl::StatusOr<NamedTensors> ref = TorchReference(R"py(
      y1 = torch.relu(x1)
      dx1, = grads(y1, dy1, [x1])
      y2 = torch.relu(x2)
      dx2, = grads(y2, dy2, [x2])
  )py",
                                                    inputs, {"y1", "dx1", "y2", "dx2"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  for (const std::string i : {"1", "2"}) {
    absl::StatusOr<Tensor> y = Relu(inputs.at("x" + i));
    ASSERT_TRUE(y.ok()) << y.status();
    absl::StatusOr<Tensor> dx = ReluBackward(inputs.at("dy" + i), *y);
    ASSERT_TRUE(dx.ok()) << dx.status();
    EXPECT_TRUE(AllClose(*y, ref->at("y" + i))) << i;
    EXPECT_TRUE(AllClose(*dx, ref->at("dx" + i))) << i;
  }
}

// relu is exact: the CUDA kernels must equal the CPU's bit for bit, in f32
// and (on the rounded inputs) in f16 and bf16, on packed and unaligned
// pointers, ragged tails and empty tensors.
TEST(ReluTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const Tolerance exact{.atol = 0.0, .rtol = 0.0};
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (const Shape& shape : {Shape{2, 3, 5}, Shape{300, 257}, Shape{1 << 20}, Shape{7},
                               Shape{0, 4}, Shape{1001, 33}}) {
      SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " " << ShapeToString(shape));
      const Tensor x = RoundedThrough(Random(shape, 1), dtype);
      const Tensor dy = RoundedThrough(Random(shape, 2), dtype);
      absl::StatusOr<Tensor> y = Relu(OnCuda(HostAs(x, dtype)));
      ASSERT_TRUE(y.ok()) << y.status();
      const Tensor y_cpu = *Relu(x);
      EXPECT_TRUE(AllClose(HostF32(*y), y_cpu, exact));
      absl::StatusOr<Tensor> dx = ReluBackward(OnCuda(HostAs(dy, dtype)), *y);
      ASSERT_TRUE(dx.ok()) << dx.status();
      EXPECT_TRUE(AllClose(HostF32(*dx), *ReluBackward(dy, y_cpu), exact));
    }
  }
}

// Special values (NaN, -0, infinities) at every position of a ragged tail,
// through both the packed path and the element-wise one (a view one
// element in is not 16-byte aligned): the same bits as the CPU.
TEST(ReluTest, CudaSpecialValuesMatchCpuBits) {
  TFM_SKIP_WITHOUT_GPU();
  const float specials[] = {-1.5f, -0.0f, 0.0f, 3.0f, NAN, -INFINITY, INFINITY};
  const int n = 1001;
  std::vector<float> x(n), dy(n);
  for (int i = 0; i < n; ++i) {
    x[i] = specials[i % 7];
    dy[i] = static_cast<float>(i) + 0.5f;
  }
  const Tensor xt = *Tensor::FromVector<float>(x, {n});
  const Tensor dyt = *Tensor::FromVector<float>(dy, {n});
  for (const int64_t skip : {0, 1}) {
    const Tensor x_cpu = *xt.Slice(skip, n);
    const Tensor dy_cpu = *dyt.Slice(skip, n);
    const Tensor y_gpu = *Relu(*OnCuda(xt).Slice(skip, n));
    const Tensor dx_gpu = *ReluBackward(*OnCuda(dyt).Slice(skip, n), y_gpu);
    const Tensor y_cpu = *Relu(x_cpu);
    const Tensor dx_cpu = *ReluBackward(dy_cpu, y_cpu);
    const std::vector<float> y = HostF32(y_gpu).ToVector<float>();
    const std::vector<float> dxv = HostF32(dx_gpu).ToVector<float>();
    for (int64_t i = 0; i < n - skip; ++i) {
      // A NaN stays a NaN; its payload is not specified (on the H100 the
      // ragged tail of the unaligned path gave CUDA's canonical 0x7fffffff).
      if (std::isnan(y_cpu.data<float>()[i])) {
        EXPECT_TRUE(std::isnan(y[i])) << skip << " " << i;
        continue;
      }
      EXPECT_EQ(std::memcmp(&y[i], &y_cpu.data<float>()[i], 4), 0) << skip << " " << i;
      EXPECT_EQ(std::memcmp(&dxv[i], &dx_cpu.data<float>()[i], 4), 0) << skip << " " << i;
    }
  }
}

// The feed-forward's dropout after the ReLU: ReluBackward(dz, z, scale) on
// z = Dropout(Relu(x)) is DropoutBackward then ReluBackward on Relu(x), bit
// for bit, at p = 0.1, 0.5 and 1 (nothing kept), sizes around the vector
// width and a threaded one.
void ExpectScaledBackwardIsDropoutThenRelu(const Device& device, DType dtype) {
  for (const double p : {0.1, 0.5, 1.0}) {
    for (int64_t n : {1, 9, 33, 70001}) {
      SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " p " << p << " n " << n);
      const Tensor x_host = RoundedThrough(Random({n}, 3), dtype);
      const Tensor dz_host = RoundedThrough(Random({n}, 4), dtype);
      const Tensor x = device.is_cuda() ? OnCuda(HostAs(x_host, dtype)) : x_host;
      const Tensor dz = device.is_cuda() ? OnCuda(HostAs(dz_host, dtype)) : dz_host;
      const PhiloxState state{5, 9, 0};
      const Tensor y = *Relu(x);
      const Tensor z = *Dropout(y, p, state);
      const Tensor expected = *ReluBackward(*DropoutBackward(dz, p, state), y);
      absl::StatusOr<Tensor> dx = ReluBackward(dz, z, DropoutKeepScale(p));
      ASSERT_TRUE(dx.ok()) << dx.status();
      const std::vector<float> got = HostF32(*dx).ToVector<float>();
      const std::vector<float> want = HostF32(expected).ToVector<float>();
      int64_t nonzero = 0;
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(std::memcmp(&got[i], &want[i], 4), 0) << i << ": " << got[i] << " " << want[i];
        nonzero += got[i] != 0.0f;
      }
      // Not vacuous: at p < 1 some gradients pass (about (1 - p) / 2).
      if (p < 1.0 && n > 1000) {
        EXPECT_GT(nonzero, n / 5);
      }
      if (p == 1.0) {
        EXPECT_EQ(nonzero, 0);
      }
    }
  }
}

TEST(ReluTest, ScaledBackwardIsDropoutThenRelu) {
  ExpectScaledBackwardIsDropoutThenRelu(Device::Cpu(), DType::kF32);
}

TEST(ReluTest, CudaScaledBackwardIsDropoutThenRelu) {
  TFM_SKIP_WITHOUT_GPU();
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    ExpectScaledBackwardIsDropoutThenRelu(Device::Cuda(0), dtype);
  }
}

TEST(ReluTest, BadArgumentsNameTheOpAndShapes) {
  absl::Status status = ReluBackward(Random({2, 3}, 1), Random({3, 2}, 2)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("relu_backward: inputs must have one shape"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("f32[3, 2]"), std::string::npos) << status;
  // Dtypes: one for dout and out, and one the kernel table has.
  status = ReluBackward(Random({3}, 1), *Tensor::Zeros({3}, DType::kI32)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("relu_backward: input 'out' is i32 but the kernel runs in f32; "
                                  "dout, out must share one dtype"),
            std::string::npos)
      << status;
  status = Relu(*Tensor::Zeros({3}, DType::kF16)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("relu: no kernel for CPU/f16; relu's kernels: CPU/f32"),
            std::string::npos)
      << status;
}

}  // namespace
}  // namespace tfm

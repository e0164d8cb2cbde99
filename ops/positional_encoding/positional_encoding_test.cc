#include "ops/positional_encoding/positional_encoding.h"

#include <cmath>

#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"
#include "tests/util/gradient_check.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

using ::tfm::testing::AllClose;
using ::tfm::testing::HostAs;
using ::tfm::testing::HostF32;
using ::tfm::testing::OnCuda;
using ::tfm::testing::RoundedThrough;
using ::tfm::testing::Tolerance;

// The paper's formula in float64, as the usual PyTorch recipe writes it.
constexpr char kReference[] = R"py(
    def pe(length, d, offset):
        pos = torch.arange(offset, offset + length, dtype=torch.float64)[:, None]
        div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * -(math.log(10000.0) / d))
        out = torch.zeros(length, d, dtype=torch.float64)
        out[:, 0::2] = torch.sin(pos * div)
        out[:, 1::2] = torch.cos(pos * div)[:, : d // 2]
        return out
    import math
    table = pe(3000, 64, 0)
    table_odd = pe(10, 7, 0)
    shifted = x.double() + pe(5, 64, 2995)
)py";

TEST(PositionalEncodingTest, TorchParityLongAndOddAndOffset) {
  const Tensor x = *RandomNormal({2, 5, 64}, {6, 0, 0}, 0.0f, 1.0f);
  absl::StatusOr<testing::NamedTensors> ref =
      testing::TorchReference(kReference, {{"x", x}}, {"table", "table_odd", "shifted"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_TRUE(testing::AllClose(*PositionalEncoding(3000, 64), ref->at("table")));
  EXPECT_TRUE(testing::AllClose(*PositionalEncoding(10, 7), ref->at("table_odd")));
  // Incremental decoding: positions 2995.. of each batch item.
  EXPECT_TRUE(testing::AllClose(*AddPositionalEncoding(x, 2995), ref->at("shifted")));
  // A window equals the rows of the full table.
  const Tensor window = *PositionalEncoding(4, 64, 2000);
  const Tensor full = *PositionalEncoding(2004, 64);
  for (int64_t i = 0; i < 4 * 64; ++i) {
    ASSERT_EQ(window.data<float>()[i], full.data<float>()[2000 * 64 + i]);
  }
}

// The cached table (grown as longer runs are asked for) and the on-the-fly
// path (offsets beyond the cache) give the same values as a fresh
// evaluation of the formula.
TEST(PositionalEncodingTest, CachedAndUncachedRowsAgree) {
  const Tensor short_run = *PositionalEncoding(5, 24, 3);
  const Tensor long_run = *PositionalEncoding(500, 24);  // Grows the table.
  const Tensor far = *PositionalEncoding(2, 24, int64_t{1} << 40);
  for (int64_t j = 0; j < 24; ++j) {
    const double frequency = std::exp(-std::log(10000.0) * (j / 2 * 2.0) / 24.0);
    for (int64_t p = 0; p < 500; ++p) {
      const double angle = static_cast<double>(p) * frequency;
      const float expected = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
      ASSERT_EQ(long_run.data<float>()[p * 24 + j], expected) << p << " " << j;
      if (p >= 3 && p < 8) {
        ASSERT_EQ(short_run.data<float>()[(p - 3) * 24 + j], expected);
      }
    }
    const double far_angle = static_cast<double>(int64_t{1} << 40) * frequency;
    EXPECT_EQ(far.data<float>()[j],
              static_cast<float>(j % 2 == 0 ? std::sin(far_angle) : std::cos(far_angle)));
  }
  // Batched input: every sequence gets the same rows.
  const Tensor x = *Tensor::Zeros({3, 4, 24}, DType::kF32);
  const Tensor added = *AddPositionalEncoding(x, 7);
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t i = 0; i < 4 * 24; ++i) {
      ASSERT_EQ(added.data<float>()[b * 96 + i], long_run.data<float>()[7 * 24 + i]);
    }
  }
}

// The engine's backward (AddPositionalEncodingBackward) against finite
// differences of the engine's forward, at an offset so the table rows in play
// are not the first ones.
TEST(PositionalEncodingTest, BackwardMatchesFiniteDifferences) {
  testing::ForwardFn forward =
      [](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> out = AddPositionalEncoding(in[0], 3);
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{*out};
  };
  testing::BackwardFn backward =
      [](const std::vector<Tensor>&, const std::vector<Tensor>&,
         const std::vector<Tensor>& d_out) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> dx = AddPositionalEncodingBackward(d_out[0]);
    if (!dx.ok()) return dx.status();
    return std::vector<Tensor>{*dx};
  };
  EXPECT_TRUE(testing::CheckGradients(forward, backward,
                                      {*RandomNormal({2, 3, 4}, {6, 1, 0}, 0.0f, 1.0f)}));
}

TEST(PositionalEncodingTest, BackwardIsANewTensor) {
  const Tensor dout = *RandomNormal({3, 8}, {6, 2, 0}, 0.0f, 1.0f);
  absl::StatusOr<Tensor> dx = AddPositionalEncodingBackward(dout);
  ASSERT_TRUE(dx.ok()) << dx.status();
  EXPECT_FALSE(dx->SharesBufferWith(dout));
  EXPECT_EQ(dx->shape(), dout.shape());
  EXPECT_EQ(dx->ToVector<float>(), dout.ToVector<float>());
  EXPECT_EQ(AddPositionalEncodingBackward(Tensor()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// CUDA evaluates the same double formula as the CPU's table (and its
// uncached path: a far offset); libdevice and libm may round a double
// sin/cos differently in rare cases, hence 1e-6 and not bit equality.
TEST(PositionalEncodingTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const Tolerance close{.atol = 1e-6, .rtol = 0.0};
  struct Case {
    int64_t length, d_model, offset;
  };
  for (const Case& c : {Case{3000, 64, 0}, Case{10, 7, 0}, Case{5, 64, 2995},
                        Case{17, 513, int64_t{1} << 25}, Case{0, 8, 0}, Case{3, 0, 0}}) {
    SCOPED_TRACE(::testing::Message() << c.length << "x" << c.d_model << " +" << c.offset);
    const Tensor cpu = *PositionalEncoding(c.length, c.d_model, c.offset);
    absl::StatusOr<Tensor> gpu = PositionalEncoding(c.length, c.d_model, c.offset, Device::Cuda(0));
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    EXPECT_EQ(gpu->device(), Device::Cuda(0));
    EXPECT_TRUE(AllClose(HostF32(*gpu), cpu, close));
  }
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const Tolerance tolerance =
        dtype == DType::kF32 ? close : Tolerance{.atol = 1e-2, .rtol = 1e-2};
    for (const Shape& shape : {Shape{2, 37, 65}, Shape{5, 64}, Shape{3, 4, 11, 512}, Shape{0, 4}}) {
      for (const int64_t offset : {0, 11}) {
        SCOPED_TRACE(::testing::Message()
                     << DTypeName(dtype) << " " << ShapeToString(shape) << " +" << offset);
        const Tensor x = RoundedThrough(*RandomNormal(shape, {6, 3, 0}, 0.0f, 1.0f), dtype);
        absl::StatusOr<Tensor> y = AddPositionalEncoding(OnCuda(HostAs(x, dtype)), offset);
        ASSERT_TRUE(y.ok()) << y.status();
        EXPECT_EQ(y->dtype(), dtype);
        EXPECT_TRUE(AllClose(HostF32(*y), *AddPositionalEncoding(x, offset), tolerance));
        absl::StatusOr<Tensor> dx = AddPositionalEncodingBackward(*y);
        ASSERT_TRUE(dx.ok()) << dx.status();
        EXPECT_EQ(dx->device(), Device::Cuda(0));
        EXPECT_TRUE(AllClose(HostF32(*dx), HostF32(*y), Tolerance{.atol = 0.0, .rtol = 0.0}));
      }
    }
  }
}

TEST(PositionalEncodingTest, BadArgumentsAreInvalidArgument) {
  EXPECT_EQ(PositionalEncoding(-1, 8).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PositionalEncoding(4, 8, -2).status().code(), absl::StatusCode::kInvalidArgument);
  absl::Status status = AddPositionalEncoding(*RandomNormal({4}, {6, 0, 0}, 0.0f, 1.0f)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("add_positional_encoding: x must be"), std::string::npos);
}

}  // namespace
}  // namespace tfm

#include "ops/positional_encoding/positional_encoding.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor_copy.h"
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

// A position tensor for add_positional_encoding_at: [1] i32 on the host.
Tensor Position(int32_t position) { return *Tensor::FromVector<int32_t>({position}, {1}); }

// The bytes of `tensor` (any device): equality is bit for bit.
std::vector<uint8_t> Bytes(const Tensor& tensor) {
  const Tensor host = *CopyToDevice(tensor, Device::Cpu());
  const auto* data = static_cast<const uint8_t*>(host.raw_data());
  return std::vector<uint8_t>(data, data + host.nbytes());
}

const Shape kAtShapes[] = {{2, 5, 64}, {5, 64}, {3, 4, 11, 7}, {1, 1, 512}, {0, 4}, {2, 0, 3}};
// The table's first rows, rows further on, and offsets past the table
// (computed on the fly: 2^24 floats of d_model 64 are 262144 rows).
const int32_t kAtPositions[] = {0, 1, 11, 2995, 300000, 2147483647 - 16};

// The position as a tensor gives exactly what it gives as an attribute.
TEST(PositionalEncodingTest, AtMatchesOffsetBitForBit) {
  for (const Shape& shape : kAtShapes) {
    const Tensor x = *RandomNormal(shape, {6, 4, 0}, 0.0f, 1.0f);
    for (const int32_t position : kAtPositions) {
      SCOPED_TRACE(::testing::Message() << ShapeToString(shape) << " +" << position);
      absl::StatusOr<Tensor> at = AddPositionalEncodingAt(x, Position(position));
      ASSERT_TRUE(at.ok()) << at.status();
      absl::StatusOr<Tensor> expected = AddPositionalEncoding(x, position);
      ASSERT_TRUE(expected.ok()) << expected.status();
      ASSERT_EQ(at->shape(), shape);
      EXPECT_EQ(Bytes(*at), Bytes(*expected));
    }
  }
}

TEST(PositionalEncodingTest, AtRejectsANegativeOrMalformedPosition) {
  const Tensor x = *RandomNormal({2, 3, 8}, {6, 5, 0}, 0.0f, 1.0f);
  // Only the kernel sees the value.
  for (const int32_t position : {-1, -2147483647}) {
    const absl::Status status = AddPositionalEncodingAt(x, Position(position)).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find(absl::StrCat("position ", position)), std::string::npos)
        << status;
  }
  for (const Tensor& position :
       {*Tensor::FromVector<int32_t>({0, 1}, {2}), *Tensor::FromVector<int32_t>({0}, {1, 1}),
        *Tensor::FromVector<float>({0.0f}, {1}), *Tensor::FromVector<int64_t>({0}, {1})}) {
    const absl::Status status = AddPositionalEncodingAt(x, position).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << position.DebugString();
    EXPECT_NE(status.message().find("position must be [1] i32"), std::string::npos) << status;
  }
  EXPECT_EQ(AddPositionalEncodingAt(*RandomNormal({4}, {6, 0, 0}, 0.0f, 1.0f), Position(0))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// On the GPU the kernel reads the position from device memory and computes
// exactly what the attribute's kernel does.
TEST(PositionalEncodingTest, CudaAtMatchesOffsetBitForBit) {
  TFM_SKIP_WITHOUT_GPU();
  const Device gpu = Device::Cuda(0);
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    for (const Shape& shape : kAtShapes) {
      const Tensor x = *CopyToDevice(HostAs(*RandomNormal(shape, {6, 6, 0}, 0.0f, 1.0f), dtype),
                                     gpu);
      for (const int32_t position : kAtPositions) {
        SCOPED_TRACE(::testing::Message()
                     << DTypeName(dtype) << " " << ShapeToString(shape) << " +" << position);
        absl::StatusOr<Tensor> at =
            AddPositionalEncodingAt(x, *CopyToDevice(Position(position), gpu));
        ASSERT_TRUE(at.ok()) << at.status();
        absl::StatusOr<Tensor> expected = AddPositionalEncoding(x, position);
        ASSERT_TRUE(expected.ok()) << expected.status();
        EXPECT_EQ(at->device(), gpu);
        EXPECT_EQ(at->dtype(), dtype);
        EXPECT_EQ(Bytes(*at), Bytes(*expected));
      }
    }
  }
  // A position on the host for x on the GPU is rejected.
  EXPECT_FALSE(AddPositionalEncodingAt(
                   *CopyToDevice(*Tensor::Zeros({2, 4}, DType::kF32), gpu), Position(0))
                   .ok());
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

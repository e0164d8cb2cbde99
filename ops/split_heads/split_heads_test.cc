#include "ops/split_heads/split_heads.h"

#include <cstring>
#include <vector>

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
using ::tfm::testing::CheckGradients;
using ::tfm::testing::HostAs;
using ::tfm::testing::NamedTensors;
using ::tfm::testing::OnCuda;
using ::tfm::testing::TorchReference;

TEST(SplitHeadsTest, MovesEachHeadsColumnsIntoItsOwnRows) {
  // batch 1, len 2, heads 2, d 2: row t = [h0d0 h0d1 h1d0 h1d1].
  const Tensor x = *Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 4});
  absl::StatusOr<Tensor> split = SplitHeads(x, 2);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(split->ToVector<float>(), (std::vector<float>{1, 2, 5, 6, 3, 4, 7, 8}));
  absl::StatusOr<Tensor> merged = MergeHeads(*split);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->shape(), x.shape());
  EXPECT_EQ(merged->ToVector<float>(), x.ToVector<float>());
}

TEST(SplitHeadsTest, IntegerTensorsMoveToo) {
  const Tensor x = *Tensor::FromVector<int32_t>({1, 2, 3, 4}, {1, 1, 4});
  absl::StatusOr<Tensor> split = SplitHeads(x, 4);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->shape(), (Shape{1, 4, 1, 1}));
  EXPECT_EQ(split->ToVector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4}));
}

TEST(SplitHeadsTest, RejectsHeadsThatDoNotDivide) {
  const Tensor x = *RandomUniform({2, 3, 10}, PhiloxState{1, 0, 0}, -1, 1);
  absl::Status status = SplitHeads(x, 4).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("divide 10"), std::string::npos) << status;
  EXPECT_FALSE(SplitHeads(x, 0).ok());
  EXPECT_FALSE(MergeHeads(x).ok());  // Rank 3 is not [batch, heads, len, d].
}

// Attention's q (its own length) with k and v, or a longer list: each entry
// moved as its own call moves it; a bad entry is named.
std::vector<Tensor> QkvLike(DType dtype, int entries) {
  std::vector<Tensor> list;
  for (int i = 0; i < entries; ++i) {
    const Shape shape = {2, i == 0 ? 3 : 5 + i, 12};
    list.push_back(HostAs(*RandomUniform(shape, PhiloxState{9, static_cast<uint64_t>(i), 0},
                                         -1, 1), dtype));
  }
  return list;
}

TEST(SplitHeadsTest, AListMovesEachTensorAsItsOwnCall) {
  for (const int entries : {3, 6}) {
    const std::vector<Tensor> list = QkvLike(DType::kF32, entries);
    absl::StatusOr<std::vector<Tensor>> split = SplitHeadsAll(list, 4);
    ASSERT_TRUE(split.ok()) << split.status();
    ASSERT_EQ(split->size(), list.size());
    absl::StatusOr<std::vector<Tensor>> merged = MergeHeadsAll(*split);
    ASSERT_TRUE(merged.ok()) << merged.status();
    for (size_t i = 0; i < list.size(); ++i) {
      EXPECT_EQ((*split)[i].ToVector<float>(), SplitHeads(list[i], 4)->ToVector<float>()) << i;
      EXPECT_EQ((*split)[i].shape(), SplitHeads(list[i], 4)->shape()) << i;
      EXPECT_EQ((*merged)[i].ToVector<float>(), list[i].ToVector<float>()) << i;
      EXPECT_EQ((*merged)[i].shape(), list[i].shape()) << i;
    }
  }
  std::vector<Tensor> bad = QkvLike(DType::kF32, 3);
  bad[2] = *RandomUniform({2, 3, 10}, PhiloxState{1, 0, 0}, -1, 1);
  const absl::Status status = SplitHeadsAll(bad, 4).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("x[2]"), std::string::npos) << status;
  EXPECT_NE(status.message().find("divide 10"), std::string::npos) << status;
  std::vector<Tensor> mixed = QkvLike(DType::kF32, 2);
  mixed[1] = HostAs(mixed[1], DType::kBF16);
  EXPECT_FALSE(SplitHeadsAll(mixed, 4).ok());
}

TEST(SplitHeadsTest, GradientsOfBothDirections) {
  const Tensor x = *RandomUniform({2, 5, 12}, PhiloxState{2, 0, 0}, -1, 1);
  EXPECT_TRUE(CheckGradients(
      [](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        absl::StatusOr<Tensor> out = SplitHeads(in[0], 3);
        if (!out.ok()) return out.status();
        return std::vector<Tensor>{*out};
      },
      [](const std::vector<Tensor>&, const std::vector<Tensor>&,
         const std::vector<Tensor>& dout) -> absl::StatusOr<std::vector<Tensor>> {
        absl::StatusOr<Tensor> dx = SplitHeadsBackward(dout[0]);
        if (!dx.ok()) return dx.status();
        return std::vector<Tensor>{*dx};
      },
      {x}));
  const Tensor y = *RandomUniform({2, 3, 5, 4}, PhiloxState{3, 0, 0}, -1, 1);
  EXPECT_TRUE(CheckGradients(
      [](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        absl::StatusOr<Tensor> out = MergeHeads(in[0]);
        if (!out.ok()) return out.status();
        return std::vector<Tensor>{*out};
      },
      [](const std::vector<Tensor>&, const std::vector<Tensor>&,
         const std::vector<Tensor>& dout) -> absl::StatusOr<std::vector<Tensor>> {
        absl::StatusOr<Tensor> dx = MergeHeadsBackward(dout[0], 3);
        if (!dx.ok()) return dx.status();
        return std::vector<Tensor>{*dx};
      },
      {y}));
}

// PyTorch writes the split as view(b, t, h, d).transpose(1, 2), as
// nn.MultiheadAttention does.
TEST(SplitHeadsTest, MatchesPyTorch) {
  const Tensor x = *RandomUniform({3, 7, 16}, PhiloxState{4, 0, 0}, -1, 1);
  const Tensor dy = *RandomUniform({3, 4, 7, 4}, PhiloxState{5, 0, 0}, -1, 1);
  absl::StatusOr<NamedTensors> ref = TorchReference(R"py(
      y = x.view(3, 7, 4, 4).transpose(1, 2).contiguous()
      dx, = grads(y, dy, [x])
      merged = y.transpose(1, 2).reshape(3, 7, 16)
  )py",
                                                    {{"x", x}, {"dy", dy}}, {"y", "dx", "merged"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  const Tensor y = *SplitHeads(x, 4);
  EXPECT_TRUE(AllClose(y, ref->at("y"), {.atol = 0, .rtol = 0}));
  EXPECT_TRUE(AllClose(*SplitHeadsBackward(dy), ref->at("dx"), {.atol = 0, .rtol = 0}));
  EXPECT_TRUE(AllClose(*MergeHeads(y), ref->at("merged"), {.atol = 0, .rtol = 0}));
}

// A host copy of `tensor` holds the same bytes as the host tensor `expected`.
::testing::AssertionResult SameBytes(const Tensor& tensor, const Tensor& expected) {
  const Tensor host = *CopyToDevice(tensor, Device::Cpu());
  if (host.shape() != expected.shape() || host.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure() << host.DebugString() << " vs " << expected.DebugString();
  }
  if (std::memcmp(host.raw_data(), expected.raw_data(), host.nbytes()) != 0) {
    return ::testing::AssertionFailure() << "bytes differ";
  }
  return ::testing::AssertionSuccess();
}

// Only bytes move, so CUDA must equal the CPU exactly in both directions:
// rows of 16-byte words, of odd widths (4- and 2-byte words), i64, empty
// tensors, and a view one element in (unaligned: narrower words).
TEST(SplitHeadsTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  struct Case {
    Shape shape;
    int64_t heads;
  };
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kI64}) {
    for (const Case& c : {Case{{2, 5, 32}, 4}, Case{{3, 7, 15}, 3}, Case{{2, 33, 512}, 8},
                          Case{{1, 1, 8}, 8}, Case{{0, 3, 4}, 2}, Case{{4, 9, 21}, 7}}) {
      for (const int64_t skip : {0, 1}) {
        SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " " << ShapeToString(c.shape)
                                          << " heads " << c.heads << " skip " << skip);
        Shape flat_shape = {c.shape[0] * c.shape[1] * c.shape[2] + skip};
        const Tensor values = *RandomUniform(flat_shape, {8, 1, 0}, -100.0f, 100.0f);
        Tensor flat;
        if (dtype == DType::kI64) {
          flat = *Tensor::Empty(flat_shape, DType::kI64);
          for (int64_t i = 0; i < flat.num_elements(); ++i) {
            flat.data<int64_t>()[i] = static_cast<int64_t>(values.data<float>()[i] * 1e6f);
          }
        } else {
          flat = HostAs(values, dtype);
        }
        const Tensor x = *flat.Slice(skip, flat_shape[0])->Reshape(c.shape);
        const Tensor x_gpu = *OnCuda(flat).Slice(skip, flat_shape[0])->Reshape(c.shape);
        absl::StatusOr<Tensor> split = SplitHeads(x_gpu, c.heads);
        ASSERT_TRUE(split.ok()) << split.status();
        const Tensor split_cpu = *SplitHeads(x, c.heads);
        EXPECT_TRUE(SameBytes(*split, split_cpu));
        absl::StatusOr<Tensor> merged = MergeHeads(*split);
        ASSERT_TRUE(merged.ok()) << merged.status();
        EXPECT_TRUE(SameBytes(*merged, *MergeHeads(split_cpu)));
        EXPECT_TRUE(SameBytes(*merged, x));
      }
    }
  }
}

// The one-launch list on CUDA (one group of 3, and 6 entries: two
// launches, one a view one element in, so narrower words) gives the CPU's
// bytes.
TEST(SplitHeadsTest, CudaListMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    for (const int entries : {3, 6}) {
      SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " entries " << entries);
      const std::vector<Tensor> list = QkvLike(dtype, entries);
      std::vector<Tensor> gpu;
      for (const Tensor& t : list) gpu.push_back(OnCuda(t));
      if (entries == 6) {
        const Tensor flat = *OnCuda(list[5]).Reshape({list[5].num_elements()});
        const Tensor padded = OnCuda(*Tensor::Zeros({list[5].num_elements() + 1}, dtype));
        ASSERT_TRUE(CopyInto(flat, *padded.Slice(1, padded.num_elements())).ok());
        gpu[5] = *padded.Slice(1, padded.num_elements())->Reshape(list[5].shape());
      }
      absl::StatusOr<std::vector<Tensor>> split = SplitHeadsAll(gpu, 4);
      ASSERT_TRUE(split.ok()) << split.status();
      absl::StatusOr<std::vector<Tensor>> merged = MergeHeadsAll(*split);
      ASSERT_TRUE(merged.ok()) << merged.status();
      for (size_t i = 0; i < list.size(); ++i) {
        EXPECT_TRUE(SameBytes((*split)[i], *SplitHeads(list[i], 4))) << "entry " << i;
        EXPECT_TRUE(SameBytes((*merged)[i], list[i])) << "entry " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tfm

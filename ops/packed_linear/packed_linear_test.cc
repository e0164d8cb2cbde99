#include "ops/packed_linear/packed_linear.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ops/linear/linear.h"
#include "ops/random/random.h"

namespace tfm {
namespace {

Tensor Random(const Shape& shape, uint64_t stream) {
  return *RandomUniform(shape, PhiloxState{5, stream, 0}, -1.0f, 1.0f);
}

// x W^T + b in double, with each entry's bound on float rounding: the sum
// of |x||w| times a few units of float precision per term.
struct Reference {
  std::vector<double> y, bound;
};

Reference Expected(const Tensor& x, const Tensor& w, const Tensor* b) {
  const std::vector<float> xs = x.ToVector<float>(), ws = w.ToVector<float>();
  const int64_t in = w.dim(1), out = w.dim(0), rows = static_cast<int64_t>(xs.size()) / in;
  const std::vector<float> bs = b != nullptr ? b->ToVector<float>() : std::vector<float>(out, 0);
  Reference ref;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double sum = bs[o], magnitude = std::abs(bs[o]);
      for (int64_t k = 0; k < in; ++k) {
        sum += static_cast<double>(xs[r * in + k]) * ws[o * in + k];
        magnitude += std::abs(static_cast<double>(xs[r * in + k]) * ws[o * in + k]);
      }
      ref.y.push_back(sum);
      ref.bound.push_back(magnitude * (in + 2) * 6e-8 + 1e-30);
    }
  }
  return ref;
}

// Row counts around the row blocks (6 with AVX2, 12 with AVX-512) and
// output sizes around the panels (16 or 32 columns), with and without bias.
TEST(PackedLinearTest, EqualsTheProductInDoubleWithinRounding) {
  uint64_t stream = 1;
  for (int64_t rows : {1, 5, 6, 7, 11, 12, 13, 25, 128}) {
    for (int64_t out : {1, 15, 16, 17, 32, 33, 100, 256}) {
      for (int64_t in : {1, 7, 64, 300}) {
        for (bool with_bias : {true, false}) {
          SCOPED_TRACE(absl::StrCat(rows, " rows, ", in, " -> ", out, with_bias ? ", bias" : ""));
          const Tensor x = Random({rows, in}, stream++), w = Random({out, in}, stream++);
          const Tensor b = Random({out}, stream++);
          absl::StatusOr<Tensor> packed = PackLinearWeight(w);
          ASSERT_TRUE(packed.ok()) << packed.status();
          absl::StatusOr<Tensor> y =
              with_bias ? PackedLinear(x, *packed, out, b) : PackedLinear(x, *packed, out);
          ASSERT_TRUE(y.ok()) << y.status();
          ASSERT_EQ(y->shape(), (Shape{rows, out}));
          const Reference ref = Expected(x, w, with_bias ? &b : nullptr);
          const std::vector<float> got = y->ToVector<float>();
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], ref.y[i], ref.bound[i]) << "entry " << i;
          }
        }
      }
    }
  }
}

TEST(PackedLinearTest, KeepsLeadingAxesAndAgreesWithLinear) {
  const Tensor x = Random({4, 3, 1, 64}, 1), w = Random({96, 64}, 2), b = Random({96}, 3);
  const Tensor y = *PackedLinear(x, *PackLinearWeight(w), 96, b);
  EXPECT_EQ(y.shape(), (Shape{4, 3, 1, 96}));
  const std::vector<float> got = y.ToVector<float>(), want = Linear(x, w, b)->ToVector<float>();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
}

// relu = the product's max(0, .), bit for bit (bias or not, whole and
// partial panels), negatives included before clamping.
TEST(PackedLinearTest, ReluClampsTheProduct) {
  for (int64_t out : {32, 45}) {
    const Tensor x = Random({13, 20}, 1), w = Random({out, 20}, 2), b = Random({out}, 3);
    const Tensor packed = *PackLinearWeight(w);
    for (bool with_bias : {true, false}) {
      const std::optional<Tensor> bias = with_bias ? std::optional<Tensor>(b) : std::nullopt;
      const std::vector<float> plain = PackedLinear(x, packed, out, bias)->ToVector<float>();
      const std::vector<float> clamped =
          PackedLinear(x, packed, out, bias, /*relu=*/true)->ToVector<float>();
      int negatives = 0;
      for (size_t i = 0; i < plain.size(); ++i) {
        negatives += plain[i] < 0;
        ASSERT_EQ(clamped[i], std::max(plain[i], 0.0f)) << out << " " << i;
      }
      EXPECT_GT(negatives, 0);
    }
  }
}

// A row's outputs are the same bits whatever rows share its product: what
// makes a decoded sentence independent of its batch.
TEST(PackedLinearTest, EachRowIsIndependentOfTheOthers) {
  const int64_t in = 256, out = 200;
  const Tensor w = Random({out, in}, 1), b = Random({out}, 2);
  const Tensor packed = *PackLinearWeight(w);
  const Tensor all = Random({37, in}, 3);
  const std::vector<float> xs = all.ToVector<float>();
  const std::vector<float> together = PackedLinear(all, packed, out, b)->ToVector<float>();
  for (int64_t rows : {1, 5, 13}) {
    for (int64_t first = 0; first + rows <= 37; first += 8) {
      const std::vector<float> part(xs.begin() + first * in, xs.begin() + (first + rows) * in);
      const Tensor x = *Tensor::FromVector<float>(part, {rows, in});
      const std::vector<float> alone = PackedLinear(x, packed, out, b)->ToVector<float>();
      for (int64_t i = 0; i < rows * out; ++i) {
        ASSERT_EQ(alone[i], together[first * out + i]) << rows << " rows from " << first;
      }
    }
  }
}

// An encoder pass's rows: more than one group of rows (the kernel keeps
// about 512 KiB of x's rows in cache while the panels pass over them: 128
// rows at 1,024 inputs), split between threads by group and panel: two
// groups taken panel by panel (128 rows of 2,048 inputs, a decoding step's
// second feed-forward product), and three or more taken group by group.
// Each row still equals the product in double, and the rows of one call
// equal those of calls on their own, bit for bit.
TEST(PackedLinearTest, ManyRowsSpanSeveralGroups) {
  for (const auto& [in, out, rows] : {std::tuple<int64_t, int64_t, int64_t>{2048, 60, 128},
                                      {1024, 40, 301},
                                      {200, 70, 1500}}) {
    SCOPED_TRACE(absl::StrCat(rows, " rows, ", in, " -> ", out));
    const Tensor w = Random({out, in}, 1), b = Random({out}, 2), x = Random({rows, in}, 3);
    const Tensor packed = *PackLinearWeight(w);
    const std::vector<float> got = PackedLinear(x, packed, out, b)->ToVector<float>();
    const Reference ref = Expected(x, w, &b);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], ref.y[i], ref.bound[i]) << i;
    const std::vector<float> xs = x.ToVector<float>();
    for (const int64_t first : {int64_t{0}, rows / 2, rows - 13}) {
      const std::vector<float> part(xs.begin() + first * in, xs.begin() + (first + 13) * in);
      const Tensor some = *Tensor::FromVector<float>(part, {13, in});
      const std::vector<float> alone = PackedLinear(some, packed, out, b)->ToVector<float>();
      for (int64_t i = 0; i < 13 * out; ++i) {
        ASSERT_EQ(alone[i], got[first * out + i]) << "13 rows from " << first;
      }
    }
  }
}

TEST(PackedLinearTest, RejectsMismatchedShapes) {
  const Tensor w = Random({40, 8}, 1);
  const Tensor packed = *PackLinearWeight(w);
  const int64_t width = packed.dim(2);
  EXPECT_EQ(packed.shape(), (Shape{(40 + width - 1) / width, 8, width}));
  EXPECT_FALSE(PackedLinear(Random({2, 9}, 2), packed, 40).ok());  // in 9, packed for 8.
  EXPECT_FALSE(PackedLinear(Random({2, 8}, 2), packed, packed.dim(0) * width + 1).ok());
  EXPECT_FALSE(PackedLinear(Random({2, 8}, 2), packed, 40, Random({39}, 3)).ok());
  EXPECT_FALSE(PackLinearWeight(Random({40}, 4)).ok());
  // Panels of another width (packed by another instruction set's kernel).
  const int64_t half = width / 2;
  const Tensor foreign = *Tensor::Empty({(40 + half - 1) / half, 8, half}, DType::kF32);
  const absl::StatusOr<Tensor> y = PackedLinear(Random({2, 8}, 2), foreign, 40);
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("this CPU's kernels use"), std::string::npos)
      << y.status();
}

}  // namespace
}  // namespace tfm

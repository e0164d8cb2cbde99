#include "ops/kv_cache/kv_cache.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "ops/cast/cast.h"
#include "ops/random/random.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

// Element (r, h, t, i) of a cache filled by Numbered: a value that names it.
float Code(int64_t r, int64_t h, int64_t t, int64_t i) { return r * 1000 + h * 100 + t * 10 + i; }

Tensor Numbered(int64_t rows, int64_t heads, int64_t len, int64_t d, int64_t t0 = 0) {
  std::vector<float> values;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < len; ++t)
        for (int64_t i = 0; i < d; ++i) values.push_back(Code(r, h, t0 + t, i));
  return *Tensor::FromVector<float>(values, {rows, heads, len, d});
}

TEST(KvCacheTest, WritesStepsInPlaceAndGathersWrittenPrefixes) {
  const int64_t rows = 3, heads = 2, capacity = 5, d = 4;
  const Tensor cache = *Tensor::Zeros({rows, heads, capacity, d}, DType::kF32);
  // Two steps of one position, then one of two.
  ASSERT_TRUE(KvCacheWrite(cache, Numbered(rows, heads, 1, d, 0), 0).ok());
  ASSERT_TRUE(KvCacheWrite(cache, Numbered(rows, heads, 1, d, 1), 1).ok());
  ASSERT_TRUE(KvCacheWrite(cache, Numbered(rows, heads, 2, d, 2), 2).ok());
  const float* c = cache.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < capacity; ++t)
        for (int64_t i = 0; i < d; ++i) {
          const float expected = t < 4 ? Code(r, h, t, i) : 0.0f;
          ASSERT_EQ(c[((r * heads + h) * capacity + t) * d + i], expected) << r << h << t << i;
        }

  const Tensor ids = *Tensor::FromVector<int32_t>({2, 0, 2, 1}, {4});
  absl::StatusOr<Tensor> gathered = KvCacheGather(cache, ids, 4, capacity + 3);
  ASSERT_TRUE(gathered.ok()) << gathered.status();
  ASSERT_EQ(gathered->shape(), Shape({4, heads, capacity + 3, d}));
  const float* g = gathered->data<float>();
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < 4; ++t)
        for (int64_t i = 0; i < d; ++i) {
          ASSERT_EQ(g[((r * heads + h) * (capacity + 3) + t) * d + i],
                    Code(ids.data<int32_t>()[r], h, t, i));
        }
}

// The orders a beam search asks for: none, a swap, a cycle, rows copied to
// several places (and their own rows overwritten), rows dropped, fewer rows
// (sentences finished).
const std::vector<std::vector<int32_t>> kReorders = {
    {0, 1, 2, 3, 4}, {1, 0, 2, 3, 4}, {1, 2, 3, 4, 0}, {3, 3, 0, 0, 2},
    {2, 2, 2, 2, 2}, {4, 3, 2, 1, 0}, {0, 1, 4},       {4, 0}};

// Positions < length of rows 0 .. rows.size() - 1 of `reordered` against
// the gather of the same rows from `original`.
void ExpectReorderedAsGathered(const Tensor& reordered, const Tensor& original,
                               const std::vector<int32_t>& rows, int64_t length) {
  const int64_t heads = original.dim(1), capacity = original.dim(2), d = original.dim(3);
  const Tensor ids = *Tensor::FromVector<int32_t>(rows, {static_cast<int64_t>(rows.size())});
  const Tensor expected = *KvCacheGather(original, ids, length, capacity);
  ASSERT_EQ(reordered.dim(0), static_cast<int64_t>(rows.size()));
  const Tensor got = ::tfm::testing::HostF32(reordered);
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t k = 0; k < length * d; ++k) {
        const int64_t at = (static_cast<int64_t>(r) * heads + h) * capacity * d + k;
        ASSERT_EQ(got.data<float>()[at], expected.data<float>()[at]) << "row " << r;
      }
}

TEST(KvCacheTest, ReorderMovesOnlyChangedRowsInPlace) {
  const int64_t rows = 5, heads = 2, capacity = 6, d = 3, length = 4;
  for (const std::vector<int32_t>& order : kReorders) {
    const Tensor original = Numbered(rows, heads, capacity, d);
    Tensor cache = *CopyToDevice(original, Device::Cpu());
    // Positions past `length` hold markers that must survive.
    float* data = cache.data<float>();
    for (int64_t slice = 0; slice < rows * heads; ++slice) data[(slice * capacity + 5) * d] = -7;
    absl::StatusOr<Tensor> reordered = KvCacheReorder(cache, order, length);
    ASSERT_TRUE(reordered.ok()) << reordered.status();
    EXPECT_EQ(reordered->raw_data(), cache.raw_data());  // The same buffer, no new cache.
    ExpectReorderedAsGathered(*reordered, original, order, length);
    for (int64_t slice = 0; slice < rows * heads; ++slice) {
      EXPECT_EQ(data[(slice * capacity + 5) * d], -7) << "slice " << slice;
    }
  }
  // The plan stages only rows that are read and overwritten.
  const KvReorderPlan swap = *PlanKvReorder(std::vector<int32_t>{1, 0, 2}, 3);
  EXPECT_EQ(swap.staged, (std::vector<int32_t>{1, 0}));
  EXPECT_TRUE(swap.from_cache_dst.empty());
  // Row 2 is read (into row 1) and overwritten (by row 3): staged; row 3
  // is read only, straight from the cache; row 0 stays.
  const KvReorderPlan shift = *PlanKvReorder(std::vector<int32_t>{0, 2, 3}, 4);
  EXPECT_EQ(shift.staged, (std::vector<int32_t>{2}));
  EXPECT_EQ(shift.from_scratch_dst, (std::vector<int32_t>{1}));
  EXPECT_EQ(shift.from_cache_dst, (std::vector<int32_t>{2}));

  const Tensor cache = Numbered(2, 1, 2, 2);
  EXPECT_EQ(KvCacheReorder(cache, std::vector<int32_t>{0, 1, 1}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);  // More rows than the cache has.
  EXPECT_EQ(KvCacheReorder(cache, std::vector<int32_t>{2}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheReorder(cache, std::vector<int32_t>{1, 0}, 3).status().code(),
            absl::StatusCode::kInvalidArgument);  // Past the capacity.
}

// A fused projection [rows, 3 heads, 1, d] (queries, keys, values of a
// decoding step): each third goes to its own cache by first_head.
TEST(KvCacheTest, WritesAHeadRangeOfAWiderX) {
  const int64_t rows = 2, heads = 3, capacity = 4, d = 5;
  const Tensor fused = Numbered(rows, 3 * heads, 1, d, 0);
  for (const int64_t first_head : {int64_t{0}, heads, 2 * heads}) {
    const Tensor cache = *Tensor::Zeros({rows, heads, capacity, d}, DType::kF32);
    ASSERT_TRUE(KvCacheWrite(cache, fused, /*position=*/2, first_head).ok());
    const float* c = cache.data<float>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t t = 0; t < capacity; ++t)
          for (int64_t i = 0; i < d; ++i) {
            // Code(r, first_head + h, 0, i): the fused row's head, at position 2.
            const float expected = t == 2 ? Code(r, first_head + h, 0, i) : 0.0f;
            ASSERT_EQ(c[((r * heads + h) * capacity + t) * d + i], expected)
                << first_head << " " << r << h << t << i;
          }
  }
  const Tensor cache = *Tensor::Zeros({rows, heads, capacity, d}, DType::kF32);
  EXPECT_EQ(KvCacheWrite(cache, fused, 0, 2 * heads + 1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheWrite(cache, fused, 0, -1).code(), absl::StatusCode::kInvalidArgument);
}

// A write of fewer rows than the cache has fills its first rows (a beam
// search reordering by table keeps rows past the live ones); a gather with
// a row per position reads each position from its own row.
TEST(KvCacheTest, FewerRowsWriteTheFirstAndPositionsGatherFromTheirRows) {
  const Tensor cache = *Tensor::Zeros({3, 2, 4, 2}, DType::kF32);
  ASSERT_TRUE(KvCacheWrite(cache, Numbered(3, 2, 2, 2), 0).ok());
  ASSERT_TRUE(KvCacheWrite(cache, Numbered(2, 2, 1, 2, 5), 2).ok());
  const float* c = cache.data<float>();
  const auto at = [&](int64_t r, int64_t h, int64_t t, int64_t i) {
    return c[((r * 2 + h) * 4 + t) * 2 + i];
  };
  EXPECT_EQ(at(1, 1, 2, 1), Code(1, 1, 5, 1));
  EXPECT_EQ(at(2, 0, 2, 0), 0.0f);  // Row 2 is past x's rows: untouched.
  EXPECT_EQ(at(2, 1, 1, 1), Code(2, 1, 1, 1));
  // New row 0: positions 0, 1, 2 from rows 2, 0, 1; new row 1: all from 1.
  absl::StatusOr<Tensor> gathered = KvCacheGather(
      cache, *Tensor::FromVector<int32_t>({2, 0, 1, 1, 1, 1}, {2, 3}), 3, 5);
  ASSERT_TRUE(gathered.ok()) << gathered.status();
  ASSERT_EQ(gathered->shape(), (Shape{2, 2, 5, 2}));
  const float* g = gathered->data<float>();
  const int32_t from[2][3] = {{2, 0, 1}, {1, 1, 1}};
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t t = 0; t < 3; ++t) {
        for (int64_t i = 0; i < 2; ++i) {
          EXPECT_EQ(g[((r * 2 + h) * 5 + t) * 2 + i], at(from[r][t], h, t, i))
              << r << " " << h << " " << t << " " << i;
        }
      }
    }
  }
}

TEST(KvCacheTest, RejectsWhatDoesNotFit) {
  const Tensor cache = *Tensor::Zeros({2, 1, 3, 4}, DType::kF32);
  EXPECT_EQ(KvCacheWrite(cache, Numbered(2, 1, 2, 4), 2).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheWrite(cache, Numbered(3, 1, 1, 4), 0).code(),
            absl::StatusCode::kInvalidArgument);
  // Rows [n, length] must have the length's columns.
  EXPECT_EQ(KvCacheGather(cache, *Tensor::FromVector<int32_t>({0, 1}, {1, 2}), 1, 3)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheGather(cache, *Tensor::FromVector<int32_t>({0, 2}, {1, 2}), 2, 3)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheGather(cache, *Tensor::FromVector<int32_t>({2}, {1}), 1, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheGather(cache, *Tensor::FromVector<int32_t>({0}, {1}), 4, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheGather(cache, *Tensor::FromVector<int32_t>({0}, {1}), 3, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A position tensor for kv_cache_write_at: [1] i32 on the host.
Tensor Position(int32_t position) { return *Tensor::FromVector<int32_t>({position}, {1}); }

// The bytes of `tensor` (any device): equality is bit for bit.
std::vector<uint8_t> Bytes(const Tensor& tensor) {
  const Tensor host = *CopyToDevice(tensor, Device::Cpu());
  const auto* data = static_cast<const uint8_t*>(host.raw_data());
  return std::vector<uint8_t>(data, data + host.nbytes());
}

// Write shapes: x's rows (at most the cache's), heads of x (the cache's or a
// fused projection's three times as many), positions written, row width.
struct WriteCase {
  int64_t rows, x_rows, heads, x_heads, capacity, n, d;
};
const WriteCase kWriteCases[] = {
    {3, 3, 2, 2, 5, 1, 4}, {2, 2, 3, 9, 4, 1, 5},   {4, 2, 2, 2, 7, 3, 3},
    {1, 1, 1, 1, 4, 4, 8}, {2, 2, 2, 6, 9, 0, 64}, {4, 4, 8, 24, 33, 1, 64}};

// The first heads of x each write may start at: 0, and for a fused x each
// third.
std::vector<int64_t> FirstHeads(const WriteCase& c) {
  std::vector<int64_t> heads;
  for (int64_t h = 0; h + c.heads <= c.x_heads; h += c.heads) heads.push_back(h);
  return heads;
}

// The position as a tensor writes exactly what it writes as an attribute:
// at the start, in the middle and at the end of the capacity.
TEST(KvCacheTest, WriteAtMatchesWriteBitForBit) {
  uint64_t stream = 20;
  for (const WriteCase& c : kWriteCases) {
    for (const int64_t first_head : FirstHeads(c)) {
      for (const int64_t position : {int64_t{0}, (c.capacity - c.n) / 2, c.capacity - c.n}) {
        SCOPED_TRACE(::testing::Message() << c.rows << "x" << c.heads << "x" << c.capacity << "x"
                                          << c.d << " n " << c.n << " first_head " << first_head
                                          << " position " << position);
        const Tensor original =
            *RandomUniform({c.rows, c.heads, c.capacity, c.d}, {4, stream++, 0}, -1.0f, 1.0f);
        const Tensor x =
            *RandomUniform({c.x_rows, c.x_heads, c.n, c.d}, {4, stream++, 0}, -1.0f, 1.0f);
        const Tensor expected = *CopyToDevice(original, Device::Cpu());
        const Tensor cache = *CopyToDevice(original, Device::Cpu());
        ASSERT_TRUE(KvCacheWrite(expected, x, position, first_head).ok());
        const absl::Status status =
            KvCacheWriteAt(cache, x, Position(static_cast<int32_t>(position)), first_head);
        ASSERT_TRUE(status.ok()) << status;
        EXPECT_EQ(Bytes(cache), Bytes(expected));
      }
    }
  }
}

// f16 caches on the CPU (int8 decoding's 16-bit caches): an f32 step is
// rounded as it is written, to exactly the bits casting the f32 cache's
// result gives (whole vectors and tails: d 3 .. 64); an f16 step is moved as
// it is; reorders and gathers move f16 rows as they move f32 ones.
TEST(KvCacheTest, F16CachesTakeF32StepsRoundedAndMoveLikeF32) {
  const auto f16 = [](const Tensor& x) { return *Cast(x, DType::kF16); };
  uint64_t stream = 60;
  for (const WriteCase& c : kWriteCases) {
    for (const int64_t first_head : FirstHeads(c)) {
      const int64_t position = c.capacity - c.n;
      SCOPED_TRACE(::testing::Message() << c.rows << "x" << c.heads << "x" << c.capacity << "x"
                                        << c.d << " n " << c.n << " first_head " << first_head);
      const Tensor original =
          *RandomUniform({c.rows, c.heads, c.capacity, c.d}, {4, stream++, 0}, -3.0f, 3.0f);
      const Tensor x =
          *RandomUniform({c.x_rows, c.x_heads, c.n, c.d}, {4, stream++, 0}, -3.0f, 3.0f);
      const Tensor f32_cache = *CopyToDevice(original, Device::Cpu());
      ASSERT_TRUE(KvCacheWrite(f32_cache, x, position, first_head).ok());
      const Tensor rounded_on_write = f16(original);
      const absl::Status status = KvCacheWrite(rounded_on_write, x, position, first_head);
      ASSERT_TRUE(status.ok()) << status;
      EXPECT_EQ(Bytes(rounded_on_write), Bytes(f16(f32_cache)));
      const Tensor moved = f16(original);
      ASSERT_TRUE(
          KvCacheWriteAt(moved, f16(x), Position(static_cast<int32_t>(position)), first_head).ok());
      EXPECT_EQ(Bytes(moved), Bytes(f16(f32_cache)));
    }
  }
  const int64_t rows = 5, heads = 2, capacity = 6, d = 3, length = 4;
  for (const std::vector<int32_t>& order : kReorders) {
    const Tensor original = Numbered(rows, heads, capacity, d);
    const Tensor f32_cache = *CopyToDevice(original, Device::Cpu());
    const Tensor f16_cache = f16(original);
    const Tensor f32_reordered = *KvCacheReorder(f32_cache, order, length);
    absl::StatusOr<Tensor> f16_reordered = KvCacheReorder(f16_cache, order, length);
    ASSERT_TRUE(f16_reordered.ok()) << f16_reordered.status();
    EXPECT_EQ(Bytes(*f16_reordered), Bytes(f16(f32_reordered)));
  }
  const Tensor cache = Numbered(rows, heads, capacity, d);
  for (const Tensor& ids : {*Tensor::FromVector<int32_t>({4, 0, 4}, {3}),
                            *Tensor::FromVector<int32_t>({4, 0, 3, 3, 1, 2, 0, 4}, {2, 4})}) {
    absl::StatusOr<Tensor> gathered = KvCacheGather(f16(cache), ids, 4, capacity);
    ASSERT_TRUE(gathered.ok()) << gathered.status();
    // Positions past the length are unset: compared up to it.
    const Tensor expected = f16(*KvCacheGather(cache, ids, 4, capacity));
    const auto* got_bits = static_cast<const uint16_t*>(gathered->raw_data());
    const auto* expected_bits = static_cast<const uint16_t*>(expected.raw_data());
    for (int64_t slice = 0; slice < ids.dim(0) * heads; ++slice) {
      for (int64_t e = 0; e < 4 * d; ++e) {
        ASSERT_EQ(got_bits[slice * capacity * d + e], expected_bits[slice * capacity * d + e]);
      }
    }
  }
  // An f16 step into an f32 cache, and a bf16 cache (no CPU kernel), are
  // refused.
  EXPECT_FALSE(KvCacheWrite(*CopyToDevice(cache, Device::Cpu()), f16(Numbered(rows, heads, 1, d)),
                            0)
                   .ok());
  EXPECT_FALSE(KvCacheWrite(*Cast(cache, DType::kBF16), Numbered(rows, heads, 1, d), 0).ok());
}

// The host's validation cannot see the position: the CPU kernel rejects one
// that does not fit, naming it and the capacity, before writing anything.
TEST(KvCacheTest, WriteAtRejectsABadPositionAndLeavesTheCache) {
  const Tensor original = *RandomUniform({2, 1, 5, 4}, {4, 40, 0}, -1.0f, 1.0f);
  const Tensor cache = *CopyToDevice(original, Device::Cpu());
  const Tensor x = Numbered(2, 1, 2, 4);
  for (const int32_t position : {-1, 4, 5, 1 << 30}) {
    const absl::Status status = KvCacheWriteAt(cache, x, Position(position));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << position;
    EXPECT_NE(status.message().find(absl::StrCat("position ", position)), std::string::npos)
        << status;
    EXPECT_NE(status.message().find("capacity of 5"), std::string::npos) << status;
    EXPECT_EQ(Bytes(cache), Bytes(original)) << position;
  }
  ASSERT_TRUE(KvCacheWriteAt(cache, x, Position(3)).ok());  // The last that fits.
}

TEST(KvCacheTest, WriteAtValidatesAllButThePositionsValue) {
  const Tensor cache = *Tensor::Zeros({2, 1, 3, 4}, DType::kF32);
  const Tensor x = Numbered(2, 1, 1, 4);
  // The position must be [1] i32.
  for (const Tensor& position :
       {*Tensor::FromVector<int32_t>({0, 1}, {2}), *Tensor::FromVector<int32_t>({0}, {1, 1}),
        *Tensor::FromVector<float>({0.0f}, {1}), *Tensor::FromVector<int64_t>({0}, {1})}) {
    const absl::Status status = KvCacheWriteAt(cache, x, position);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << position.DebugString();
    EXPECT_NE(status.message().find("position must be [1] i32"), std::string::npos) << status;
  }
  // What kv_cache_write checks besides the position: more positions than
  // the capacity, rows, d, dtype, heads.
  EXPECT_EQ(KvCacheWriteAt(cache, Numbered(2, 1, 4, 4), Position(0)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheWriteAt(cache, Numbered(3, 1, 1, 4), Position(0)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheWriteAt(cache, Numbered(2, 1, 1, 3), Position(0)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheWriteAt(cache, *Tensor::Zeros({2, 1, 1, 4}, DType::kI32), Position(0)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheWriteAt(cache, x, Position(0), 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheWriteAt(cache, x, Position(0), -1).code(), absl::StatusCode::kInvalidArgument);
}

using ::tfm::testing::HostAs;
using ::tfm::testing::HostF32;
using ::tfm::testing::OnCuda;
using ::tfm::testing::RoundedThrough;

// Only bytes move, so CUDA in f32 must equal the CPU exactly, and f16 or
// bf16 caches must hold exactly the CPU's f32 results on rounded values.
// Row widths of 16-byte words and odd ones (4- and 2-byte words); writes at
// the start, at the end of the capacity and of no positions; gathers that
// repeat rows and grow the capacity (only the written prefix is compared:
// the rest is unset).
TEST(KvCacheTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  struct Case {
    int64_t rows, heads, capacity, d;
  };
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (const Case& c :
         {Case{3, 2, 10, 8}, Case{2, 3, 7, 5}, Case{1, 1, 4, 3}, Case{4, 8, 33, 64}}) {
      SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " " << c.rows << "x" << c.heads
                                        << "x" << c.capacity << "x" << c.d);
      const Shape shape = {c.rows, c.heads, c.capacity, c.d};
      const Tensor cache = RoundedThrough(*RandomUniform(shape, {4, 1, 0}, -1.0f, 1.0f), dtype);
      const Tensor cache_gpu = OnCuda(HostAs(cache, dtype));
      struct Step {
        int64_t position, n;
      };
      uint64_t stream = 2;
      for (const Step& step :
           {Step{0, 1}, Step{c.capacity - 3 > 0 ? c.capacity - 3 : 0, 3}, Step{1, 0}, Step{2, 1}}) {
        if (step.position + step.n > c.capacity) continue;
        const Tensor x = RoundedThrough(
            *RandomUniform({c.rows, c.heads, step.n, c.d}, {4, stream++, 0}, -1.0f, 1.0f), dtype);
        ASSERT_TRUE(KvCacheWrite(cache, x, step.position).ok());
        const absl::Status status =
            KvCacheWrite(cache_gpu, OnCuda(HostAs(x, dtype)), step.position);
        ASSERT_TRUE(status.ok()) << status;
        EXPECT_EQ(HostF32(cache_gpu).ToVector<float>(), cache.ToVector<float>())
            << "position " << step.position << " n " << step.n;
      }
      // The keys' third of a fused [rows, 3 heads, 1, d] step.
      const Tensor fused = RoundedThrough(
          *RandomUniform({c.rows, 3 * c.heads, 1, c.d}, {4, stream++, 0}, -1.0f, 1.0f), dtype);
      ASSERT_TRUE(KvCacheWrite(cache, fused, 0, c.heads).ok());
      const absl::Status fused_status =
          KvCacheWrite(cache_gpu, OnCuda(HostAs(fused, dtype)), 0, c.heads);
      ASSERT_TRUE(fused_status.ok()) << fused_status;
      EXPECT_EQ(HostF32(cache_gpu).ToVector<float>(), cache.ToVector<float>()) << "first_head";
      const std::vector<int32_t> ids = {static_cast<int32_t>(c.rows - 1), 0,
                                        static_cast<int32_t>(c.rows - 1)};
      const Tensor ids_cpu = *Tensor::FromVector<int32_t>(ids, {3});
      for (const int64_t length : {int64_t{0}, int64_t{1}, c.capacity}) {
        for (const int64_t capacity : {c.capacity, c.capacity + 5}) {
          const Tensor expected = *KvCacheGather(cache, ids_cpu, length, capacity);
          absl::StatusOr<Tensor> gathered =
              KvCacheGather(cache_gpu, OnCuda(ids_cpu), length, capacity);
          ASSERT_TRUE(gathered.ok()) << gathered.status();
          ASSERT_EQ(gathered->shape(), expected.shape());
          const Tensor got = HostF32(*gathered);
          for (int64_t slice = 0; slice < 3 * c.heads; ++slice) {
            for (int64_t k = 0; k < length * c.d; ++k) {
              const int64_t at = slice * capacity * c.d + k;
              ASSERT_EQ(got.data<float>()[at], expected.data<float>()[at])
                  << "length " << length << " capacity " << capacity << " at " << at;
            }
          }
        }
      }
    }
  }
}

// A row per position on the GPU: the CPU's gather, bit for bit, in every
// dtype (the word the kernel moves follows the row's bytes).
TEST(KvCacheTest, CudaPositionGatherMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const int64_t rows = 5, heads = 3, capacity = 9, length = 7, new_capacity = 12;
  std::vector<int32_t> table(4 * length);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>((i * 3 + 1) % rows);
  const Tensor ids = *Tensor::FromVector<int32_t>(table, {4, length});
  for (const int64_t d : {64, 7}) {
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " d ", d));
      const Tensor cache = RoundedThrough(Numbered(rows, heads, capacity, d), dtype);
      absl::StatusOr<Tensor> cpu = KvCacheGather(cache, ids, length, new_capacity);
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      absl::StatusOr<Tensor> gpu =
          KvCacheGather(OnCuda(HostAs(cache, dtype)), OnCuda(ids), length, new_capacity);
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      ASSERT_EQ(gpu->shape(), cpu->shape());
      // Positions past `length` are unset on both sides: compare the rest.
      const Tensor got = HostF32(*gpu);
      for (int64_t i = 0; i < 4 * heads; ++i) {
        for (int64_t t = 0; t < length * d; ++t) {
          const int64_t at = i * new_capacity * d + t;
          ASSERT_EQ(got.data<float>()[at], cpu->data<float>()[at]) << i << " " << t;
        }
      }
    }
  }
  // A row outside the cache is the CPU's error.
  const Tensor cache = OnCuda(*Tensor::Zeros({2, 1, 3, 4}, DType::kF32));
  EXPECT_EQ(KvCacheGather(cache, OnCuda(*Tensor::FromVector<int32_t>({0, 2}, {1, 2})), 2, 3)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(KvCacheTest, CudaBadRowIsInvalidArgument) {
  TFM_SKIP_WITHOUT_GPU();
  const Tensor cache = OnCuda(*Tensor::Zeros({2, 1, 3, 4}, DType::kF32));
  absl::Status status =
      KvCacheGather(cache, OnCuda(*Tensor::FromVector<int32_t>({0, 2}, {2})), 1, 3).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("row 2 is outside the cache's 2 rows"), std::string::npos)
      << status;
}

// The reorder on CUDA moves the same bytes as on the CPU, in every dtype.
TEST(KvCacheTest, CudaReorderMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const int64_t rows = 5, heads = 3, capacity = 9, d = 8, length = 7;
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (const std::vector<int32_t>& order : kReorders) {
      SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " order of " << order.size());
      const Tensor original =
          RoundedThrough(*RandomUniform({rows, heads, capacity, d}, {4, 9, 0}, -1.0f, 1.0f), dtype);
      const Tensor cache_gpu = OnCuda(HostAs(original, dtype));
      absl::StatusOr<Tensor> reordered = KvCacheReorder(cache_gpu, order, length);
      ASSERT_TRUE(reordered.ok()) << reordered.status();
      ExpectReorderedAsGathered(*reordered, original, order, length);
    }
  }
}

// On the GPU the position tensor writes exactly what the attribute does,
// both the CPU's bytes on the rounded values (16-byte words at d 64, 2- and
// 4-byte ones at odd widths); a position outside [0, capacity - n] writes
// nothing.
TEST(KvCacheTest, CudaWriteAtMatchesWrite) {
  TFM_SKIP_WITHOUT_GPU();
  const Device gpu = Device::Cuda(0);
  uint64_t stream = 60;
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    for (const WriteCase& c : kWriteCases) {
      for (const int64_t first_head : FirstHeads(c)) {
        const Shape shape = {c.rows, c.heads, c.capacity, c.d};
        const Tensor original =
            RoundedThrough(*RandomUniform(shape, {4, stream++, 0}, -1.0f, 1.0f), dtype);
        const Tensor x = RoundedThrough(
            *RandomUniform({c.x_rows, c.x_heads, c.n, c.d}, {4, stream++, 0}, -1.0f, 1.0f),
            dtype);
        const Tensor x_gpu = *CopyToDevice(HostAs(x, dtype), gpu);
        for (const int64_t position : {int64_t{0}, (c.capacity - c.n) / 2, c.capacity - c.n}) {
          SCOPED_TRACE(::testing::Message()
                       << DTypeName(dtype) << " " << c.rows << "x" << c.heads << "x"
                       << c.capacity << "x" << c.d << " n " << c.n << " first_head "
                       << first_head << " position " << position);
          const Tensor expected = *CopyToDevice(original, Device::Cpu());
          ASSERT_TRUE(KvCacheWrite(expected, x, position, first_head).ok());
          const Tensor by_attr = *CopyToDevice(HostAs(original, dtype), gpu);
          ASSERT_TRUE(KvCacheWrite(by_attr, x_gpu, position, first_head).ok());
          const Tensor cache = *CopyToDevice(HostAs(original, dtype), gpu);
          const absl::Status status = KvCacheWriteAt(
              cache, x_gpu, *CopyToDevice(Position(static_cast<int32_t>(position)), gpu),
              first_head);
          ASSERT_TRUE(status.ok()) << status;
          EXPECT_EQ(Bytes(cache), Bytes(by_attr));
          EXPECT_EQ(HostF32(cache).ToVector<float>(), expected.ToVector<float>());
        }
        if (c.n == 0) continue;  // Every position up to the capacity fits.
        for (const int64_t position : {int64_t{-1}, c.capacity - c.n + 1, c.capacity,
                                       int64_t{1} << 30}) {
          SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " bad position " << position);
          const Tensor cache = *CopyToDevice(HostAs(original, dtype), gpu);
          const absl::Status status = KvCacheWriteAt(
              cache, x_gpu, *CopyToDevice(Position(static_cast<int32_t>(position)), gpu),
              first_head);
          ASSERT_TRUE(status.ok()) << status;  // Not seen on the host.
          EXPECT_EQ(Bytes(cache), Bytes(HostAs(original, dtype)));
        }
      }
    }
  }
  // A position on the host for a cache on the GPU is rejected.
  const Tensor cache = *CopyToDevice(*Tensor::Zeros({2, 1, 3, 4}, DType::kF32), gpu);
  EXPECT_FALSE(
      KvCacheWriteAt(cache, *CopyToDevice(Numbered(2, 1, 1, 4), gpu), Position(0)).ok());
}

}  // namespace
}  // namespace tfm

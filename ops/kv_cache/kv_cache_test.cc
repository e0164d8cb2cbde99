#include "ops/kv_cache/kv_cache.h"

#include <vector>

#include "gtest/gtest.h"

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

TEST(KvCacheTest, RejectsWhatDoesNotFit) {
  const Tensor cache = *Tensor::Zeros({2, 1, 3, 4}, DType::kF32);
  EXPECT_EQ(KvCacheWrite(cache, Numbered(2, 1, 2, 4), 2).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheWrite(cache, Numbered(1, 1, 1, 4), 0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheGather(cache, *Tensor::FromVector<int32_t>({2}, {1}), 1, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheGather(cache, *Tensor::FromVector<int32_t>({0}, {1}), 4, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(KvCacheGather(cache, *Tensor::FromVector<int32_t>({0}, {1}), 3, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfm

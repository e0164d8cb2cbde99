#include "layers/decoding_cache.h"

#include <algorithm>
#include <vector>

#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "ops/kv_cache/kv_cache.h"
#include "ops/linear/linear.h"
#include "ops/quantized_linear/quantized_linear.h"
#include "ops/random/random.h"

namespace tfm {
namespace {

// One per-row entry [rows, 1, capacity, 1] whose step t writes
// 100 * row + t, and one per-sentence entry [sentences, 1, 1, 1] holding
// the sentence's index.
class Owner {
 public:
  absl::Status Step(DecodingCache& cache) {
    DecodingCache::Entry* entry = cache.Find(&row_key_);
    if (entry == nullptr) {
      DecodingCache::Entry rows{
          DecodingCache::Indexing::kRow,
          {*Tensor::Zeros({cache.rows(), 1, cache.capacity(), 1}, DType::kF32)}};
      entry = &cache.Store(&row_key_, std::move(rows));
      std::vector<float> ids;
      for (int64_t s = 0; s < cache.sentences(); ++s) ids.push_back(s);
      cache.Store(&sentence_key_,
                  {DecodingCache::Indexing::kSentence,
                   {*Tensor::FromVector<float>(ids, {cache.sentences(), 1, 1, 1})}});
    }
    std::vector<float> values;
    for (int64_t r = 0; r < cache.rows(); ++r) values.push_back(100 * r + cache.position());
    return KvCacheWrite(entry->tensors[0],
                        *Tensor::FromVector<float>(values, {cache.rows(), 1, 1, 1}),
                        cache.position());
  }
  // Two entries, two addresses (a layer with one entry would use `this`).
  char row_key_ = 0, sentence_key_ = 0;
};

TEST(DecodingCacheTest, GrowsAndFollowsRowsAndSentences) {
  DecodingCache cache(/*sentences=*/3, /*rows_per_sentence=*/2, /*max_steps=*/40, Device::Cpu());
  Owner owner;
  const int steps = 21;  // Past the first capacity, so the entry grew.
  for (int t = 0; t < steps; ++t) {
    ASSERT_TRUE(cache.BeginStep().ok());
    EXPECT_EQ(cache.key_lengths().ToVector<int32_t>(), std::vector<int32_t>(6, t + 1));
    const absl::Status stepped = owner.Step(cache);
    ASSERT_TRUE(stepped.ok()) << t << stepped;
    cache.EndStep();
  }
  EXPECT_GE(cache.capacity(), steps);
  // Keep sentence 2 (rows 5, 4) then sentence 0 (rows 0, 0).
  absl::StatusOr<std::vector<int32_t>> sentences = cache.Reorder({5, 4, 0, 0}, 2);
  ASSERT_TRUE(sentences.ok()) << sentences.status();
  EXPECT_EQ(*sentences, std::vector<int32_t>({2, 0}));
  EXPECT_EQ(cache.rows(), 4);
  const Tensor& rows = cache.Find(&owner.row_key_)->tensors[0];
  const std::vector<int> sources = {5, 4, 0, 0};
  for (int r = 0; r < 4; ++r) {
    for (int t = 0; t < steps; ++t) {
      ASSERT_EQ(rows.data<float>()[r * cache.capacity() + t], 100 * sources[r] + t) << r << t;
    }
  }
  EXPECT_EQ(cache.Find(&owner.sentence_key_)->tensors[0].ToVector<float>(),
            std::vector<float>({2, 0}));
  // Groups must not mix sentences; steps stop at max_steps.
  EXPECT_EQ(cache.Reorder({0, 2}, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.Reorder({0}, 2).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.Reorder({0, 1}, 0).status().code(), absl::StatusCode::kInvalidArgument);
  DecodingCache short_cache(1, 1, /*max_steps=*/1, Device::Cpu());
  ASSERT_TRUE(short_cache.BeginStep().ok());
  short_cache.EndStep();
  EXPECT_EQ(short_cache.BeginStep().code(), absl::StatusCode::kFailedPrecondition);
}

// A beam's first step runs one row per sentence; the first reorder widens
// each sentence to its beam, copying the row's positions to each new row.
TEST(DecodingCacheTest, WidensOneRowPerSentenceToABeam) {
  DecodingCache cache(/*sentences=*/2, /*rows_per_sentence=*/1, /*max_steps=*/8, Device::Cpu());
  Owner owner;
  ASSERT_TRUE(cache.BeginStep().ok());
  ASSERT_TRUE(owner.Step(cache).ok());
  cache.EndStep();
  absl::StatusOr<std::vector<int32_t>> sentences = cache.Reorder({1, 1, 1, 0, 0, 0}, 3);
  ASSERT_TRUE(sentences.ok()) << sentences.status();
  EXPECT_EQ(*sentences, std::vector<int32_t>({1, 0}));
  EXPECT_EQ(cache.rows_per_sentence(), 3);
  EXPECT_EQ(cache.rows(), 6);
  ASSERT_TRUE(cache.BeginStep().ok());
  EXPECT_EQ(cache.key_lengths().ToVector<int32_t>(), std::vector<int32_t>(6, 2));
  ASSERT_TRUE(owner.Step(cache).ok());
  cache.EndStep();
  const Tensor& rows = cache.Find(&owner.row_key_)->tensors[0];
  const std::vector<int> first = {1, 1, 1, 0, 0, 0};
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(rows.data<float>()[r * cache.capacity() + 0], 100 * first[r]) << r;
    EXPECT_EQ(rows.data<float>()[r * cache.capacity() + 1], 100 * r + 1) << r;
  }
}

// The caches of one search's batches share their kShared entries (weights
// laid out once per search), never their per-row or per-sentence ones.
TEST(DecodingCacheTest, CachesOfOneSearchShareOnlySharedEntries) {
  auto shared = std::make_shared<DecodingCache::SharedEntries>();
  DecodingCache first(2, 1, 10, Device::Cpu(), shared), second(3, 1, 10, Device::Cpu(), shared);
  DecodingCache alone(2, 1, 10, Device::Cpu());
  char weights_key = 0, rows_key = 0;
  first.Store(&weights_key,
              {DecodingCache::Indexing::kShared, {*Tensor::Zeros({4}, DType::kF32)}});
  first.Store(&rows_key,
              {DecodingCache::Indexing::kRow, {*Tensor::Zeros({2, 1, 10, 1}, DType::kF32)}});
  ASSERT_NE(second.Find(&weights_key), nullptr);
  EXPECT_EQ(second.Find(&weights_key), first.Find(&weights_key));
  EXPECT_EQ(second.Find(&rows_key), nullptr);
  EXPECT_EQ(alone.Find(&weights_key), nullptr);
  EXPECT_EQ(shared->size(), 1u);
}

// DecodingLinear is Linear (to float rounding), its weight packed once
// under the owner's key and reused by the next step and the next batch.
TEST(DecodingCacheTest, DecodingLinearPacksTheWeightOncePerSearch) {
  const Tensor w = *RandomUniform({40, 24}, PhiloxState{3, 1, 0}, -1.0f, 1.0f);
  const Tensor b = *RandomUniform({40}, PhiloxState{3, 2, 0}, -1.0f, 1.0f);
  const Tensor x = *RandomUniform({6, 1, 24}, PhiloxState{3, 3, 0}, -1.0f, 1.0f);
  auto shared = std::make_shared<DecodingCache::SharedEntries>();
  DecodingCache batch1(6, 1, 10, Device::Cpu(), shared), batch2(6, 1, 10, Device::Cpu(), shared);
  const std::vector<float> want = Linear(x, w, b)->ToVector<float>();
  for (DecodingCache* cache : {&batch1, &batch1, &batch2}) {
    absl::StatusOr<Tensor> y = DecodingLinear(*cache, &w, x, w, b);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->shape(), (Shape{6, 1, 40}));
    const std::vector<float> got = y->ToVector<float>();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5f) << i;
  }
  ASSERT_EQ(shared->size(), 1u);
  const DecodingCache::Entry* packed = batch2.Find(&w);
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(packed->tensors[0].dim(1), 24);  // [panels, in, width].
}

// With DecodingPrecision::kInt8, DecodingLinear runs quantized_linear on
// the weight quantized once per search (its int8 form kept under the
// owner's key for the next step and batch): equal to QuantizedLinear, and
// Linear to within the int8 steps: with |x|, |w| <= 1, each of the 24 terms
// is off by at most sx / 2 + sw / 2 (sx <= 2 / 255 per activation row,
// sw <= 1 / 127 per weight row), 0.19 in all.
TEST(DecodingCacheTest, DecodingLinearInInt8QuantizesTheWeightOncePerSearch) {
  const Tensor w = *RandomUniform({40, 24}, PhiloxState{4, 1, 0}, -1.0f, 1.0f);
  const Tensor b = *RandomUniform({40}, PhiloxState{4, 2, 0}, -1.0f, 1.0f);
  const Tensor x = *RandomUniform({6, 1, 24}, PhiloxState{4, 3, 0}, -1.0f, 1.0f);
  auto shared = std::make_shared<DecodingCache::SharedEntries>();
  DecodingCache batch1(6, 1, 10, Device::Cpu(), shared, DecodingPrecision::kInt8);
  DecodingCache batch2(6, 1, 10, Device::Cpu(), shared, DecodingPrecision::kInt8);
  const std::vector<float> want = Linear(x, w, b)->ToVector<float>();
  const std::vector<float> quantized =
      QuantizedLinear(x, *QuantizeLinearWeight(w), b, /*relu=*/true)->ToVector<float>();
  for (DecodingCache* cache : {&batch1, &batch1, &batch2}) {
    absl::StatusOr<Tensor> y = DecodingLinear(*cache, &w, x, w, b, /*relu=*/true);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(y->shape(), (Shape{6, 1, 40}));
    const std::vector<float> got = y->ToVector<float>();
    EXPECT_EQ(got, quantized);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], std::max(want[i], 0.0f), 24 * (1.0f / 255 + 0.5f / 127) + 1e-5f) << i;
    }
  }
  ASSERT_EQ(shared->size(), 1u);
  const DecodingCache::Entry* entry = batch2.Find(&w);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->tensors[0].dtype(), DType::kI8);  // [panels, groups, 16, 4].
}

// A weight made only to be laid out (MadeWeight: self-attention's stacked
// q, k and v): in each precision the CPU lays out, `make` runs once per
// search, when the first batch lays the weight out, and the results are
// the kept weight's bit for bit. A new search makes it again.
TEST(DecodingCacheTest, AMadeWeightIsMadeOnlyWhenASearchLaysItOut) {
  const Tensor w = *RandomUniform({40, 24}, PhiloxState{5, 1, 0}, -1.0f, 1.0f);
  const Tensor b = *RandomUniform({40}, PhiloxState{5, 2, 0}, -1.0f, 1.0f);
  const Tensor x = *RandomUniform({6, 1, 24}, PhiloxState{5, 3, 0}, -1.0f, 1.0f);
  const Tensor like = *RandomUniform({8, 24}, PhiloxState{5, 4, 0}, -1.0f, 1.0f);
  for (const DecodingPrecision precision :
       {DecodingPrecision::kF32, DecodingPrecision::kInt8, DecodingPrecision::kBf16}) {
    SCOPED_TRACE(static_cast<int>(precision));
    // The same weight kept, for the expected results.
    auto kept_entries = std::make_shared<DecodingCache::SharedEntries>();
    DecodingCache kept(6, 1, 10, Device::Cpu(), kept_entries, precision);
    const std::vector<float> want = DecodingLinear(kept, &w, x, w, b)->ToVector<float>();
    for (int search = 0; search < 2; ++search) {
      int made = 0;
      const MadeWeight weight{like, w.dim(0), [&]() -> absl::StatusOr<Tensor> {
                                ++made;
                                return CopyToDevice(w, Device::Cpu());
                              }};
      auto shared = std::make_shared<DecodingCache::SharedEntries>();
      DecodingCache batch1(6, 1, 10, Device::Cpu(), shared, precision);
      DecodingCache batch2(6, 1, 10, Device::Cpu(), shared, precision);
      const char owner = 0;
      for (DecodingCache* cache : {&batch1, &batch1, &batch2}) {
        absl::StatusOr<Tensor> y = DecodingLinear(*cache, &owner, x, weight, b);
        ASSERT_TRUE(y.ok()) << y.status();
        EXPECT_EQ(y->ToVector<float>(), want);
      }
      EXPECT_EQ(made, 1);
      EXPECT_EQ(shared->size(), 1u);
    }
  }
}

}  // namespace
}  // namespace tfm

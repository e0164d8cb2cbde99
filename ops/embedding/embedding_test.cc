#include "ops/embedding/embedding.h"

#include "core/deterministic.h"
#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"
#include "tests/util/gradient_check.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

TEST(EmbeddingTest, TorchParityForwardAndBackward) {
  const Tensor table = *RandomNormal({50, 16}, {3, 0, 0}, 0.0f, 1.0f);
  // Repeated ids exercise the scatter-add; 2-D ids keep their shape.
  const Tensor ids = *Tensor::FromVector<int64_t>({1, 7, 7, 49, 0, 7, 3, 1, 2, 48}, {2, 5});
  const Tensor d_out = *RandomNormal({2, 5, 16}, {3, 1, 0}, 0.0f, 1.0f);
  const float scale = 4.0f;  // sqrt(d_model) for d_model 16.
  Tensor out = *Embedding(table, ids, scale);
  Tensor d_table = *EmbeddingBackward(ids, d_out, 50, scale);
  absl::StatusOr<testing::NamedTensors> ref = testing::TorchReference(
      R"py(
      out = F.embedding(ids, table) * 4.0
      d_table, = grads(out, d_out, [table])
  )py",
      {{"table", table}, {"ids", ids}, {"d_out", d_out}}, {"out", "d_table"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_TRUE(testing::AllClose(out, ref->at("out")));
  EXPECT_TRUE(testing::AllClose(d_table, ref->at("d_table")));
  // i32 ids give the same result.
  const Tensor ids32 = *Tensor::FromVector<int32_t>({1, 7, 7, 49, 0, 7, 3, 1, 2, 48}, {2, 5});
  EXPECT_EQ(Embedding(table, ids32, scale)->ToVector<float>(), out.ToVector<float>());
  // Scale 1 (a plain row copy) gives the table's rows exactly.
  const std::vector<float> unscaled = Embedding(table, ids, 1.0f)->ToVector<float>();
  const std::vector<float> rows = table.ToVector<float>();
  const std::vector<int64_t> id_values = ids.ToVector<int64_t>();
  for (size_t p = 0; p < id_values.size(); ++p) {
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(unscaled[p * 16 + j], rows[id_values[p] * 16 + j]) << p << " " << j;
    }
  }
}

TEST(EmbeddingTest, GradientMatchesFiniteDifferences) {
  const Tensor table = *RandomNormal({6, 5}, {3, 0, 0}, 0.0f, 1.0f);
  const Tensor ids = *Tensor::FromVector<int32_t>({0, 5, 5, 2, 0, 0, 4}, {7});
  testing::ForwardFn forward =
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> out = Embedding(in[0], ids, 2.5f);
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{*out};
  };
  testing::BackwardFn backward =
      [&](const std::vector<Tensor>&, const std::vector<Tensor>&,
          const std::vector<Tensor>& d_out) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> d_table = EmbeddingBackward(ids, d_out[0], 6, 2.5f);
    if (!d_table.ok()) return d_table.status();
    return std::vector<Tensor>{*d_table};
  };
  EXPECT_TRUE(testing::CheckGradients(forward, backward, {table}));
}

TEST(EmbeddingTest, BackwardIsDeterministicOnManyTokens) {
  std::vector<int64_t> values(20000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = (i * 7919) % 37;
  const Tensor ids = *Tensor::FromVector<int64_t>(values, {20000});
  const Tensor d_out = *RandomNormal({20000, 8}, {5, 0, 0}, 0.0f, 1.0f);
  const std::vector<float> first = EmbeddingBackward(ids, d_out, 40)->ToVector<float>();
  for (int run = 0; run < 3; ++run) {
    EXPECT_EQ(EmbeddingBackward(ids, d_out, 40)->ToVector<float>(), first);
  }
  for (int j = 0; j < 8; ++j) EXPECT_EQ(first[39 * 8 + j], 0.0f);  // Unused row.
}

// The CPU kernel is deterministic anyway: deterministic mode (which sets
// the op's attribute) gives the very same bits.
TEST(EmbeddingTest, DeterministicModeChangesNothingOnTheCpu) {
  std::vector<int64_t> values(5000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = (i * 7919) % 37;
  const Tensor ids = *Tensor::FromVector<int64_t>(values, {5000});
  const Tensor d_out = *RandomNormal({5000, 8}, {5, 0, 0}, 0.0f, 1.0f);
  const std::vector<float> fast = EmbeddingBackward(ids, d_out, 40, 3.0f)->ToVector<float>();
  absl::StatusOr<Tensor> deterministic = [&] {
    const ScopedDeterministicKernels scope;
    return EmbeddingBackward(ids, d_out, 40, 3.0f);
  }();
  ASSERT_TRUE(deterministic.ok()) << deterministic.status();
  EXPECT_EQ(deterministic->ToVector<float>(), fast);
}

TEST(EmbeddingTest, BadArgumentsAreInvalidArgument) {
  const Tensor table = *RandomNormal({4, 3}, {3, 0, 0}, 0.0f, 1.0f);
  absl::Status status = Embedding(table, *Tensor::FromVector<int32_t>({1, 4}, {2})).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("embedding: token id 4 at position 1 is outside [0, 4)"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("f32[4, 3]"), std::string::npos) << status;
  EXPECT_FALSE(Embedding(table, *Tensor::FromVector<int32_t>({-1}, {1})).ok());
  EXPECT_EQ(Embedding(table, table).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(EmbeddingBackward(*Tensor::FromVector<int32_t>({1, 2}, {2}), table, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
}

using ::tfm::testing::AllClose;
using ::tfm::testing::HostAs;
using ::tfm::testing::HostF32;
using ::tfm::testing::OnCuda;
using ::tfm::testing::RoundedThrough;
using ::tfm::testing::SumTolerance;
using ::tfm::testing::Tolerance;

// ids as `dtype` (i32 or i64) on the host: (i * 7919) % modulus, except
// that `padded_tenths` of every ten positions take id 1, as padding would.
Tensor Ids(int64_t count, int64_t modulus, DType dtype, int64_t padded_tenths = 0) {
  std::vector<int64_t> values(count);
  for (int64_t i = 0; i < count; ++i) {
    values[i] = i % 10 < padded_tenths ? 1 : (i * 7919) % modulus;
  }
  if (dtype == DType::kI64) return *Tensor::FromVector<int64_t>(values, {count});
  return *Tensor::FromVector<int32_t>(std::vector<int32_t>(values.begin(), values.end()), {count});
}

// CUDA against the CPU: the gather exactly in f32, the scatter-add to f32
// rounding (atomics add in another order); f16 and bf16 against the f32 CPU
// kernels on the rounded inputs. Repeated ids, unused rows, odd and packed
// row widths, empty ids and empty rows.
TEST(EmbeddingTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  struct Case {
    int64_t vocab, d, positions, modulus;
  };
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const bool f32 = dtype == DType::kF32;
    const Tolerance gather =
        f32 ? Tolerance{.atol = 0.0, .rtol = 0.0} : Tolerance{.atol = 1e-2, .rtol = 1e-2};
    const Tolerance sums = SumTolerance(f32 ? 1e-5 : 1e-2);
    for (const DType id_dtype : {DType::kI32, DType::kI64}) {
      for (const Case& c : {Case{40, 8, 20000, 37}, Case{1000, 513, 51, 997}, Case{50, 7, 10, 50},
                            Case{300, 512, 4096, 300}, Case{5, 16, 0, 5}, Case{6, 0, 4, 6}}) {
        for (const float scale : {1.0f, 22.627417f}) {
          SCOPED_TRACE(::testing::Message()
                       << DTypeName(dtype) << " " << DTypeName(id_dtype) << " vocab " << c.vocab
                       << " d " << c.d << " positions " << c.positions << " scale " << scale);
          const Tensor table =
              RoundedThrough(*RandomNormal({c.vocab, c.d}, {3, 0, 0}, 0.0f, 1.0f), dtype);
          const Tensor d_out =
              RoundedThrough(*RandomNormal({c.positions, c.d}, {4, 0, 0}, 0.0f, 1.0f), dtype);
          const Tensor ids = Ids(c.positions, c.modulus, id_dtype);
          const Tensor ids_gpu = OnCuda(ids);
          absl::StatusOr<Tensor> out = Embedding(OnCuda(HostAs(table, dtype)), ids_gpu, scale);
          ASSERT_TRUE(out.ok()) << out.status();
          EXPECT_EQ(out->dtype(), dtype);
          EXPECT_TRUE(AllClose(HostF32(*out), *Embedding(table, ids, scale), gather));
          // Ids the caller checked: the same gather, without the check's wait.
          absl::StatusOr<Tensor> unchecked =
              Embedding(OnCuda(HostAs(table, dtype)), ids_gpu, scale, /*ids_checked=*/true);
          ASSERT_TRUE(unchecked.ok()) << unchecked.status();
          EXPECT_EQ(HostF32(*unchecked).ToVector<float>(), HostF32(*out).ToVector<float>());
          absl::StatusOr<Tensor> d_table =
              EmbeddingBackward(ids_gpu, OnCuda(HostAs(d_out, dtype)), c.vocab, scale);
          ASSERT_TRUE(d_table.ok()) << d_table.status();
          EXPECT_EQ(d_table->dtype(), dtype);
          EXPECT_TRUE(
              AllClose(HostF32(*d_table), *EmbeddingBackward(ids, d_out, c.vocab, scale), sums));
        }
      }
    }
  }
}

// Deterministic mode (core/deterministic.h): the CUDA gradient (positions
// sorted by id, each row summed in an order the ids fix,
// embedding_sorted_sums.h) repeats bit for bit and matches the CPU's; with
// repeated ids (20,000 positions over 37 rows), padding on 60% of 12,000
// positions beside 500 other ids, unused rows, odd widths, a single position
// and none.
TEST(EmbeddingTest, CudaDeterministicBackwardRepeatsBitForBit) {
  TFM_SKIP_WITHOUT_GPU();
  const ScopedDeterministicKernels deterministic;
  struct Case {
    int64_t vocab, d, positions, modulus, padded_tenths;
  };
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    for (const DType id_dtype : {DType::kI32, DType::kI64}) {
      for (const Case& c : {Case{40, 8, 20000, 37, 0}, Case{1000, 513, 51, 997, 0},
                            Case{512, 64, 12000, 500, 6}, Case{7, 33, 1, 7, 0},
                            Case{5, 16, 0, 5, 0}}) {
        SCOPED_TRACE(::testing::Message()
                     << DTypeName(dtype) << " " << DTypeName(id_dtype) << " vocab " << c.vocab
                     << " positions " << c.positions << " padded tenths " << c.padded_tenths);
        const Tensor d_out =
            RoundedThrough(*RandomNormal({c.positions, c.d}, {4, 0, 0}, 0.0f, 1.0f), dtype);
        const Tensor ids = Ids(c.positions, c.modulus, id_dtype, c.padded_tenths);
        const Tensor ids_gpu = OnCuda(ids), d_out_gpu = OnCuda(HostAs(d_out, dtype));
        std::vector<float> first;
        for (int run = 0; run < 3; ++run) {
          absl::StatusOr<Tensor> d_table = EmbeddingBackward(ids_gpu, d_out_gpu, c.vocab, 2.0f);
          ASSERT_TRUE(d_table.ok()) << d_table.status();
          const std::vector<float> values = HostF32(*d_table).ToVector<float>();
          if (run == 0) first = values;
          EXPECT_EQ(values, first) << "run " << run;
        }
        EXPECT_TRUE(AllClose(*Tensor::FromVector<float>(first, {c.vocab, c.d}),
                             *EmbeddingBackward(ids, d_out, c.vocab, 2.0f),
                             SumTolerance(dtype == DType::kF32 ? 1e-5 : 1e-2)));
      }
    }
  }
}

// A bad id on CUDA is the CPU's error, and nothing is read out of bounds.
TEST(EmbeddingTest, CudaBadIdsAreInvalidArgument) {
  TFM_SKIP_WITHOUT_GPU();
  const Tensor table = OnCuda(*RandomNormal({4, 3}, {3, 0, 0}, 0.0f, 1.0f));
  absl::Status status =
      Embedding(table, OnCuda(*Tensor::FromVector<int32_t>({1, 4, 9}, {3}))).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("embedding: token id 4 at position 1 is outside [0, 4)"),
            std::string::npos)
      << status;
  status = EmbeddingBackward(OnCuda(*Tensor::FromVector<int64_t>({0, -1}, {2})),
                             OnCuda(*RandomNormal({2, 3}, {3, 0, 0}, 0.0f, 1.0f)), 4)
               .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("token id -1 at position 1"), std::string::npos) << status;
}

}  // namespace
}  // namespace tfm

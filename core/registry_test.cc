// The registries themselves, with entries made up for the test.
#include "core/registry.h"

#include "core/layer_registry.h"
#include "core/op_registry.h"
#include "core/task_registry.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

absl::Status DoubleCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  absl::StatusOr<Tensor*> out = context.AllocateOutput(0, x.shape(), x.dtype());
  if (!out.ok()) return out.status();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    (*out)->data<float>()[i] = 2 * x.data<float>()[i];
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{"test_double", {"x"}, {"y"}, {}, "y = 2x", {}});
TFM_REGISTER_KERNEL("test_double", DeviceType::kCPU, DType::kF32, DoubleCpu);

// Returns its input as its output: fine for an op declared in-place, a
// broken kernel for any other.
absl::Status IdentityCpu(KernelContext& context) {
  context.SetOutput(0, context.input(0));
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{.name = "test_alias", .inputs = {"x"}, .outputs = {"y"}});
TFM_REGISTER_KERNEL("test_alias", DeviceType::kCPU, DType::kF32, IdentityCpu);
TFM_REGISTER_OP(OpDef{.name = "test_in_place",
                      .inputs = {"x"},
                      .outputs = {"x"},
                      .in_place = {{0, 0}}});
TFM_REGISTER_KERNEL("test_in_place", DeviceType::kCPU, DType::kF32, IdentityCpu);

TEST(RegistryTest, AddFindAndDuplicate) {
  Registry<int> registry("widget");
  ASSERT_TRUE(registry.Add("b", 2).ok());
  ASSERT_TRUE(registry.Add("a", 1).ok());
  EXPECT_EQ(**registry.Find("a"), 1);
  absl::Status duplicate = registry.Add("a", 3);
  EXPECT_EQ(duplicate.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(**registry.Find("a"), 1);  // The first registration stays.
  EXPECT_EQ(registry.Names(), std::vector<std::string>({"a", "b"}));
}

TEST(RegistryTest, MissingNameListsKnownNames) {
  Registry<int> registry("widget");
  ASSERT_TRUE(registry.Add("alpha", 1).ok());
  ASSERT_TRUE(registry.Add("beta", 2).ok());
  absl::Status status = registry.Find("gamma").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "unknown widget 'gamma'; known widgets: alpha, beta");
}

TEST(RegistryTest, JournalRecordsAndRollsBack) {
  Registry<int> registry("widget");
  RegistrationJournal& journal = RegistrationJournal::Get();
  const size_t entries = journal.num_entries();
  const size_t errors = journal.num_errors();
  ASSERT_TRUE(registry.Add("x", 1).ok());
  RegisterOrRecordError(registry, "x", 2);  // A duplicate, recorded.
  EXPECT_EQ(journal.EntriesSince(entries).size(), 1u);
  EXPECT_EQ(journal.ErrorsSince(errors).size(), 1u);
  journal.RollBack(entries, errors);
  EXPECT_FALSE(registry.Contains("x"));
  EXPECT_EQ(journal.num_errors(), errors);
}

TEST(OpRegistryTest, RunsAStaticallyRegisteredKernel) {
  Tensor x = *Tensor::FromVector<float>({1, 2, 3}, {3});
  absl::StatusOr<std::vector<Tensor>> y = RunOp("test_double", {x});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].ToVector<float>(), std::vector<float>({2, 4, 6}));
}

TEST(OpRegistryTest, ErrorsNameTheOpAndWhatIsMissing) {
  Tensor x = *Tensor::FromVector<float>({1}, {1});
  absl::Status unknown = RunOp("no_such_op", {x}).status();
  EXPECT_NE(unknown.message().find("unknown op 'no_such_op'; known ops:"), std::string::npos);
  EXPECT_NE(unknown.message().find("test_double"), std::string::npos);

  absl::Status arity = RunOp("test_double", {x, x}).status();
  EXPECT_NE(arity.message().find("test_double: expected 1 inputs (x), got 2"),
            std::string::npos);

  Tensor i = *Tensor::FromVector<int32_t>({1}, {1});
  absl::Status no_kernel = RunOp("test_double", {i}).status();
  EXPECT_EQ(no_kernel.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(no_kernel.message(),
            "test_double: no kernel for CPU/i32; it has kernels for CPU/f32");

  absl::Status undefined = RunOp("test_double", {Tensor()}).status();
  EXPECT_NE(undefined.message().find("input 'x' is undefined"), std::string::npos);
}

TEST(OpRegistryTest, OutputsAliasInputsOnlyWhereDeclaredInPlace) {
  const Tensor x = *Tensor::Zeros({3}, DType::kF32);
  absl::Status aliased = RunOp("test_alias", {x}).status();
  EXPECT_EQ(aliased.code(), absl::StatusCode::kInternal);
  EXPECT_NE(aliased.message().find("test_alias: kernel returned output 'y' sharing memory with "
                                   "input 'x'"),
            std::string::npos)
      << aliased;
  absl::StatusOr<std::vector<Tensor>> in_place = RunOp("test_in_place", {x});
  ASSERT_TRUE(in_place.ok()) << in_place.status();
  EXPECT_TRUE((*in_place)[0].SharesBufferWith(x));
}

TEST(LayerRegistryTest, UnknownLayerListsKnownOnes) {
  absl::Status status = CreateLayer("no_such_layer", LayerArgs{}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("unknown layer 'no_such_layer'; known layers:"),
            std::string::npos);
}

TEST(TaskRegistryTest, UnknownTaskListsKnownOnes) {
  absl::Status status = CreateTask("no_such_task").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("known tasks:"), std::string::npos);
}

}  // namespace
}  // namespace tfm

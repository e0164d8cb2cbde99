// The registries themselves, with entries made up for the test.
#include "core/registry.h"

#include <string>

#include "core/layer_registry.h"
#include "core/op_profile.h"
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

// y = x0 + x1 elementwise, both of the kernel's dtype, y sized by the
// OpDef's shape function; kernels registered over dtype lists.
template <typename T>
absl::Status SumCpu(KernelContext& context) {
  absl::StatusOr<Tensor*> out = context.AllocateOutput(0, context.dtype());
  if (!out.ok()) return out.status();
  for (int64_t i = 0; i < (*out)->num_elements(); ++i) {
    (*out)->data<T>()[i] = context.input(0).data<T>()[i] + context.input(1).data<T>()[i];
  }
  return absl::OkStatus();
}

absl::Status Int64SumCpu(KernelContext& context) { return SumCpu<int64_t>(context); }

TFM_REGISTER_OP(OpDef{
    .name = "test_sum",
    .inputs = {"x0", "x1"},
    .outputs = {"y"},
    .kernel_dtype_inputs = {0, 1},
    .output_shapes = [](const KernelContext& context) -> absl::StatusOr<std::vector<Shape>> {
      return std::vector<Shape>{context.input(0).shape()};
    }});
TFM_REGISTER_TYPED_KERNELS("test_sum", DeviceType::kCPU, SumCpu, float, int32_t);
TFM_REGISTER_KERNELS("test_sum", DeviceType::kCPU, Int64SumCpu, DType::kI64);

// A variadic op: y += alpha * x for every (x, y) of the list, in place,
// alpha (an f32 scalar) given once after the list.
absl::Status AxpyListCpu(KernelContext& context) {
  const float alpha = context.input(context.layout().input(2)).data<float>()[0];
  for (int entry = 0; entry < context.list_size(); ++entry) {
    const Tensor& x = context.list_input(entry, 0);
    Tensor y = context.in_place_input(context.layout().input(1, entry));
    for (int64_t i = 0; i < x.num_elements(); ++i) y.data<float>()[i] += alpha * x.data<float>()[i];
    context.SetOutput(context.layout().output(0, entry), y);
  }
  return absl::OkStatus();
}

// A broken kernel of the same op: hands back x where y was updated.
absl::Status AxpyListHandsBackXCpu(KernelContext& context) {
  for (int entry = 0; entry < context.list_size(); ++entry) {
    context.SetOutput(context.layout().output(0, entry), context.list_input(entry, 0));
  }
  return absl::OkStatus();
}

OpDef AxpyListDef(const char* name) {
  return OpDef{
      .name = name,
      .inputs = {"x", "y", "alpha"},
      .outputs = {"y"},
      .validate =
          [](const KernelContext& context) {
            for (int entry = 0; entry < context.list_size(); ++entry) {
              if (context.list_input(entry, 0).shape() != context.list_input(entry, 1).shape()) {
                return context.EntryError(entry, "x and y must have one shape");
              }
            }
            return absl::OkStatus();
          },
      .kernel_dtype_inputs = {0, 1, 2},
      .in_place = {{0, 1}},
      .list_inputs = 2,
      .list_outputs = 1,
  };
}

TFM_REGISTER_OP(AxpyListDef("test_axpy_list"));
TFM_REGISTER_KERNEL("test_axpy_list", DeviceType::kCPU, DType::kF32, AxpyListCpu);
TFM_REGISTER_OP(AxpyListDef("test_axpy_list_hands_back_x"));
TFM_REGISTER_KERNEL("test_axpy_list_hands_back_x", DeviceType::kCPU, DType::kF32,
                    AxpyListHandsBackXCpu);

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

// TFM_PROFILE_OPS=shapes: a row per op, dtype and input shapes.
TEST(OpRegistryTest, ProfileByShapeGivesARowPerShape) {
  SetOpProfilingByShape(true);
  ResetOpProfile();
  const Tensor a = *Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = *Tensor::FromVector<float>({1, 2, 3}, {3});
  ASSERT_TRUE(RunOp("test_double", {a}).ok());
  ASSERT_TRUE(RunOp("test_double", {a}).ok());
  ASSERT_TRUE(RunOp("test_double", {b}).ok());
  const std::string report = OpProfileReport();
  SetOpProfilingByShape(false);
  SetOpProfilingSynchronizes(false);
  SetOpProfiling(false);
  ResetOpProfile();
  // "test_double f32 2x3   2 calls ..." and "test_double f32 3   1 call".
  EXPECT_NE(report.find("test_double f32 2x3 "), std::string::npos) << report;
  EXPECT_NE(report.find("test_double f32 3 "), std::string::npos) << report;
  const size_t row = report.find("test_double f32 2x3 ");
  const std::string line = report.substr(row, report.find('\n', row) - row);
  EXPECT_NE(line.find(" 2 "), std::string::npos) << line;
}

// A variadic call over many tensors (a model's parameters) is one short
// row: the count of inputs and their elements, not every shape.
TEST(OpRegistryTest, ProfileByShapeSumsUpLongCalls) {
  SetOpProfilingByShape(true);
  ResetOpProfile();
  const Tensor alpha = *Tensor::FromVector<float>({2}, {});
  std::vector<Tensor> inputs;
  for (int entry = 0; entry < 5; ++entry) {  // 11 inputs, 2 x 5 x 3 + 1 elements.
    inputs.push_back(*Tensor::Zeros({3}, DType::kF32));
    inputs.push_back(*Tensor::Zeros({3}, DType::kF32));
  }
  inputs.push_back(alpha);
  const absl::Status ran = RunOp("test_axpy_list", inputs).status();
  const std::string report = OpProfileReport();
  SetOpProfilingByShape(false);
  SetOpProfilingSynchronizes(false);
  SetOpProfiling(false);
  ResetOpProfile();
  ASSERT_TRUE(ran.ok()) << ran;
  EXPECT_NE(report.find("test_axpy_list f32 11 inputs of 31 elements "), std::string::npos)
      << report;
  EXPECT_EQ(report.find(" 3 3 "), std::string::npos) << report;  // No shapes listed.
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
            "test_double: no kernel for CPU/i32; test_double's kernels: CPU/f32");

  absl::Status undefined = RunOp("test_double", {Tensor()}).status();
  EXPECT_NE(undefined.message().find("input 'x' is undefined"), std::string::npos);
}

TEST(OpRegistryTest, KernelsOverDTypeListsAndShapeFunctions) {
  EXPECT_TRUE(KernelRegistry().Contains("test_sum/CPU/f32"));
  EXPECT_TRUE(KernelRegistry().Contains("test_sum/CPU/i32"));
  EXPECT_TRUE(KernelRegistry().Contains("test_sum/CPU/i64"));
  Tensor a = *Tensor::FromVector<int32_t>({1, 2}, {2});
  absl::StatusOr<std::vector<Tensor>> sum = RunOp("test_sum", {a, a});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ((*sum)[0].shape(), Shape{2});
  EXPECT_EQ((*sum)[0].ToVector<int32_t>(), std::vector<int32_t>({2, 4}));

  Tensor f = *Tensor::FromVector<float>({1, 2}, {2});
  absl::Status mixed = RunOp("test_sum", {f, a}).status();
  EXPECT_EQ(mixed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.message().find("test_sum: input 'x1' is i32 but the kernel runs in f32; x0, x1 "
                                 "must share one dtype"),
            std::string::npos)
      << mixed;

  Tensor h = *Tensor::Zeros({2}, DType::kF16);
  EXPECT_EQ(RunOp("test_sum", {h, h}).status().message(),
            "test_sum: no kernel for CPU/f16; test_sum's kernels: CPU/f32, CPU/i32, CPU/i64");
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

TEST(OpRegistryTest, VariadicOpsTakeListsOfAnyLength) {
  const Tensor alpha = *Tensor::FromVector<float>({2}, {});
  // No entries: only what follows the list.
  absl::StatusOr<std::vector<Tensor>> none = RunOp("test_axpy_list", {alpha});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  // Three entries, the y of two of them views of one buffer (a flat
  // parameter buffer's slices): each handed back in place.
  const Tensor flat = *Tensor::FromVector<float>({1, 2, 3, 4}, {4});
  const std::vector<Tensor> y = {*flat.Slice(0, 2), *flat.Slice(2, 4),
                                 *Tensor::FromVector<float>({5}, {1})};
  const std::vector<Tensor> x = {*Tensor::FromVector<float>({1, 1}, {2}),
                                 *Tensor::FromVector<float>({0, 1}, {2}),
                                 *Tensor::FromVector<float>({-1}, {1})};
  absl::StatusOr<std::vector<Tensor>> out =
      RunOp("test_axpy_list", {x[0], y[0], x[1], y[1], x[2], y[2], alpha});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  for (int entry = 0; entry < 3; ++entry) EXPECT_TRUE((*out)[entry].SharesBufferWith(y[entry]));
  EXPECT_EQ(flat.ToVector<float>(), std::vector<float>({3, 4, 3, 6}));
  EXPECT_EQ(y[2].ToVector<float>(), std::vector<float>({3}));
}

TEST(OpRegistryTest, VariadicErrorsNameTheEntry) {
  const Tensor alpha = *Tensor::FromVector<float>({2}, {});
  const Tensor a = *Tensor::Zeros({2}, DType::kF32);
  const Tensor b = *Tensor::Zeros({3}, DType::kF32);
  const Tensor i = *Tensor::Zeros({2}, DType::kI32);
  auto message = [](const absl::Status& status) { return std::string(status.message()); };

  EXPECT_EQ(message(RunOp("test_axpy_list", {a, a, a, alpha}).status()),
            "test_axpy_list: expected 2 inputs per list entry (x, y) followed by alpha; got 4 "
            "inputs");
  EXPECT_EQ(message(RunOp("test_axpy_list", {a, a, a, Tensor(), alpha}).status()),
            "test_axpy_list: input 'y[1]' is undefined");
  const absl::Status dtype = RunOp("test_axpy_list", {a, a, i, a, alpha}).status();
  EXPECT_NE(message(dtype).find("test_axpy_list: input 'x[1]' is i32 but the kernel runs in f32; "
                                "x, y, alpha must share one dtype (inputs: a list of 2 entries, "
                                "alpha=f32[] on cpu)"),
            std::string::npos)
      << dtype;
  EXPECT_EQ(message(RunOp("test_axpy_list", {a, a, a, b, alpha}).status()),
            "test_axpy_list: list entry 1: x and y must have one shape (inputs: x[1]=f32[2] on "
            "cpu, y[1]=f32[3] on cpu)");
  const absl::Status aliased =
      RunOp("test_axpy_list_hands_back_x", {a, *Tensor::Zeros({2}, DType::kF32), alpha}).status();
  EXPECT_EQ(aliased.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(message(aliased),
            "test_axpy_list_hands_back_x: kernel returned output 'y[0]' sharing memory with "
            "input 'x[0]', which the op does not declare in-place");
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

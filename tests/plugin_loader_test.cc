// Loads real shared libraries: the example plugin and broken ones.
#include "core/plugin_loader.h"

#include <string>

#include "absl/strings/str_format.h"
#include "core/layer_registry.h"
#include "core/op_registry.h"
#include "tasks/plugin_abi_version.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

TEST(PluginLoaderTest, LoadsRegistersAndRunsTheExamplePlugin) {
  EXPECT_FALSE(OpRegistry().Contains("example_scale"));
  absl::StatusOr<LoadedPlugin> plugin =
      LoadPlugin(testing::RunfilePath("plugins/example/libexample_plugin.so"), TFM_PLUGIN_ABI_VERSION);
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  EXPECT_EQ(plugin->registered,
            std::vector<std::string>(
                {"op:example_scale", "kernel:example_scale/CPU/f32", "layer:example_scale"}));

  // The op runs through the engine's dispatcher...
  Tensor x = *Tensor::FromVector<float>({1, -2, 3}, {3});
  absl::StatusOr<std::vector<Tensor>> y = RunOp("example_scale", {x}, Attrs{{"alpha", 2.5}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].ToVector<float>(), std::vector<float>({2.5f, -5.0f, 7.5f}));
  // ...with the plugin's own validation.
  EXPECT_NE(RunOp("example_scale", {x}).status().message().find("needs attribute alpha"),
            std::string::npos);

  // The layer is created by name and runs forward and backward.
  LayerArgs args;
  args.attrs.Set("alpha", -1.0);
  absl::StatusOr<std::unique_ptr<Layer>> layer = CreateLayer("example_scale", args);
  ASSERT_TRUE(layer.ok()) << layer.status();
  ForwardContext eval;
  EXPECT_EQ((*(*layer)->Forward(eval, {x}))[0].ToVector<float>(), std::vector<float>({-1, 2, -3}));
  EXPECT_EQ((*(*layer)->Backward({x}))[0].ToVector<float>(), std::vector<float>({-1, 2, -3}));

  // A second load of the same library is refused, not silently ignored.
  absl::Status again =
      LoadPlugin(testing::RunfilePath("plugins/example/libexample_plugin.so"), TFM_PLUGIN_ABI_VERSION).status();
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(again.message().find("already loaded"), std::string::npos);
}

TEST(PluginLoaderTest, RejectsADuplicateAndRollsBack) {
  const std::vector<std::string> ops_before = OpRegistry().Names();
  const std::vector<std::string> kernels_before = KernelRegistry().Names();
  absl::Status status =
      LoadPlugin(testing::RunfilePath("tests/plugins/libduplicate_op_plugin.so"), TFM_PLUGIN_ABI_VERSION).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(status.message().find("op 'fill' is already registered"), std::string::npos) << status;
  EXPECT_NE(status.message().find("libduplicate_op_plugin.so"), std::string::npos);
  // Nothing of the rejected plugin remains, and the built-in fill still works.
  EXPECT_EQ(OpRegistry().Names(), ops_before);
  EXPECT_EQ(KernelRegistry().Names(), kernels_before);
  EXPECT_TRUE(RegistrationJournal::Get().Check().ok());
  Attrs attrs;
  attrs.Set("shape", std::vector<int64_t>{2}).Set("value", 1.0);
  EXPECT_TRUE(RunOp("fill", {}, attrs, OpTarget{Device::Cpu(), DType::kF32}).ok());
}

TEST(PluginLoaderTest, MissingSymbolIsNamed) {
  absl::Status status =
      LoadPlugin(testing::RunfilePath("tests/plugins/libmissing_symbol_plugin.so"), TFM_PLUGIN_ABI_VERSION).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("tfm_test_symbol_that_does_not_exist"), std::string::npos)
      << status;
}

TEST(PluginLoaderTest, RefusesAPluginOfAnotherAbiNamingBothNumbers) {
  const std::vector<std::string> ops_before = OpRegistry().Names();
  const std::vector<std::string> kernels_before = KernelRegistry().Names();
  const std::string path = testing::RunfilePath("tests/plugins/libwrong_abi_plugin.so");
  absl::Status status = LoadPlugin(path, TFM_PLUGIN_ABI_VERSION).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(status.message());
  EXPECT_NE(message.find(path), std::string::npos) << status;
  EXPECT_NE(message.find(absl::StrFormat("built for plugin ABI 0x%016x", TFM_PLUGIN_ABI_VERSION + 1)),
            std::string::npos)
      << status;
  EXPECT_NE(message.find(absl::StrFormat("this engine's ABI is 0x%016x", TFM_PLUGIN_ABI_VERSION)),
            std::string::npos)
      << status;
  // Refused before its registrars ran: none of its names, no journal errors.
  EXPECT_FALSE(OpRegistry().Contains("wrong_abi_op"));
  EXPECT_EQ(OpRegistry().Names(), ops_before);
  EXPECT_EQ(KernelRegistry().Names(), kernels_before);
  EXPECT_TRUE(RegistrationJournal::Get().Check().ok());
}

TEST(PluginLoaderTest, RefusesAPluginWithoutAnAbiNumber) {
  const std::vector<std::string> ops_before = OpRegistry().Names();
  const std::vector<std::string> kernels_before = KernelRegistry().Names();
  absl::Status status =
      LoadPlugin(testing::RunfilePath("tests/plugins/libno_abi_plugin.so"), TFM_PLUGIN_ABI_VERSION).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("libno_abi_plugin.so' has no plugin ABI number"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("tfm_plugin_abi_version"), std::string::npos) << status;
  EXPECT_NE(status.message().find("tfm_plugin"), std::string::npos) << status;
  EXPECT_FALSE(OpRegistry().Contains("no_abi_op"));
  EXPECT_EQ(OpRegistry().Names(), ops_before);
  EXPECT_EQ(KernelRegistry().Names(), kernels_before);
}

TEST(PluginLoaderTest, RefusesAFileThatIsNotALibrary) {
  const std::string path = testing::WriteTempFile("not_a_plugin.so", "just text\n");
  absl::Status status = LoadPlugin(path, TFM_PLUGIN_ABI_VERSION).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find(path), std::string::npos) << status;
  EXPECT_NE(status.message().find("no ELF header"), std::string::npos) << status;
}

TEST(PluginLoaderTest, MissingFileNamesThePath) {
  absl::Status status = LoadPlugin("/nonexistent/libnothing.so", TFM_PLUGIN_ABI_VERSION).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("/nonexistent/libnothing.so"), std::string::npos);
}

}  // namespace
}  // namespace tfm

// Every built-in op, layer and task must be registered in a binary that links
// //ops:all_ops, //layers and //tasks:all_tasks: static libraries silently drop
// registrars that nothing references unless their targets are alwayslink.
//
// The expected names come from the source tree, not from a list kept here
// and not from the registries (a registrar the linker drops vanishes from
// them too): every TFM_REGISTER_OP, TFM_REGISTER_LAYER and TFM_REGISTER_TASK
// in the non-test sources under ops/, layers/ and tasks/. A new op folder
// left out of //ops:all_ops fails here, naming its file.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/layer_registry.h"
#include "core/op_registry.h"
#include "core/registration_journal.h"
#include "core/task_registry.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

// The workspace's source tree: ops/BUILD in the runfiles (the test's data)
// links back to it, and the tree, unlike the runfiles, holds every folder.
fs::path SourceRoot() { return fs::canonical("ops/BUILD").parent_path().parent_path(); }

// Registered name -> the file (relative to the source root) registering it.
using NameSources = std::map<std::string, std::string>;

// The names registered with `macro` (TFM_REGISTER_OP, ...) by the non-test
// .cc files below `folders`. A registration whose name cannot be read fails
// the test instead of shrinking the expected set.
NameSources ScanRegistrations(const std::string& macro, const std::vector<std::string>& folders) {
  // TFM_REGISTER_OP(OpDef{.name = "relu", ...}) or OpDef{"relu", ...}.
  const std::regex registration(macro + R"(\(\s*[\w:]+\s*\{\s*(?:\.name\s*=\s*)?"([^"]+)\")");
  const fs::path root = SourceRoot();
  NameSources names;
  for (const std::string& folder : folders) {
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root / folder)) {
      const std::string file = entry.path().filename().string();
      if (!entry.is_regular_file() || !absl::EndsWith(file, ".cc") ||
          absl::EndsWith(file, "_test.cc")) {
        continue;
      }
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string source = text.str();
      const std::string relative = fs::relative(entry.path(), root).string();
      int matched = 0;
      for (std::sregex_iterator it(source.begin(), source.end(), registration), end; it != end;
           ++it, ++matched) {
        names.emplace((*it)[1].str(), relative);
      }
      size_t calls = 0;
      for (size_t at = source.find(macro + "("); at != std::string::npos;
           at = source.find(macro + "(", at + 1)) {
        ++calls;
      }
      EXPECT_EQ(calls, static_cast<size_t>(matched))
          << relative << ": a " << macro << " whose name this test cannot read";
    }
  }
  return names;
}

const std::vector<std::string> kBuiltinFolders = {"ops", "layers", "tasks"};

// Names in `expected` (from the source) missing from `registered`, and the
// reverse, each with where it comes from.
void ExpectRegistered(const NameSources& expected, const std::vector<std::string>& registered,
                      absl::string_view kind, absl::string_view hint) {
  EXPECT_FALSE(expected.empty()) << "no " << kind << " found in the source tree";
  for (const auto& [name, file] : expected) {
    EXPECT_TRUE(std::find(registered.begin(), registered.end(), name) != registered.end())
        << kind << " '" << name << "' is registered by " << file
        << " but missing from the registry: " << hint;
  }
  for (const std::string& name : registered) {
    EXPECT_TRUE(expected.count(name) != 0)
        << kind << " '" << name << "' is registered but no non-test source under ops/, layers/ "
        << "or tasks/ registers it";
  }
}

TEST(RegistrationTest, NoBuiltinRegistrationFailed) {
  EXPECT_TRUE(RegistrationJournal::Get().Check().ok())
      << RegistrationJournal::Get().Check();
}

TEST(RegistrationTest, EveryOpInTheSourceTreeIsRegisteredWithACpuF32Kernel) {
  const NameSources ops = ScanRegistrations("TFM_REGISTER_OP", kBuiltinFolders);
  ExpectRegistered(ops, OpRegistry().Names(), "op",
                   "add its op folder's target to //ops:all_ops (ops/BUILD); op targets are "
                   "alwayslink (tfm_op in ops/op.bzl)");
  for (const auto& [op, file] : ops) {
    EXPECT_TRUE(KernelRegistry().Contains(KernelName(op, DeviceType::kCPU, DType::kF32)))
        << op << " (" << file << ") has no CPU f32 kernel";
  }
  // And every kernel belongs to a defined op.
  for (const std::string& kernel : KernelRegistry().Names()) {
    EXPECT_TRUE(OpRegistry().Contains(kernel.substr(0, kernel.find('/')))) << kernel;
  }
}

TEST(RegistrationTest, EveryLayerAndTaskInTheSourceTreeIsRegistered) {
  ExpectRegistered(ScanRegistrations("TFM_REGISTER_LAYER", kBuiltinFolders),
                   LayerRegistry().Names(), "layer",
                   "link its file's target into //layers, alwayslink");
  const NameSources tasks = ScanRegistrations("TFM_REGISTER_TASK", kBuiltinFolders);
  ExpectRegistered(tasks, TaskRegistry().Names(), "task",
                   "add its target to //tasks:all_tasks, alwayslink");
  for (const auto& [task, file] : tasks) EXPECT_TRUE(CreateTask(task).ok()) << task;
}

// The scan itself: a registration is found in the file that makes it.
TEST(RegistrationTest, ScanFindsKnownRegistrations) {
  const NameSources ops = ScanRegistrations("TFM_REGISTER_OP", {"ops"});
  ASSERT_EQ(ops.count("sum_to_shape"), 1u);
  EXPECT_EQ(ops.at("sum_to_shape"), "ops/add/add.cc");
  EXPECT_EQ(ops.count("pack_linear_weight"), 1u);
}

}  // namespace
}  // namespace tfm

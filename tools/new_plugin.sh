#!/bin/bash
# Writes a new plugin task folder, plugins/NAME/, that builds and passes its
# test at once, for you to fill in (plugins/README.md walks through it):
#   BUILD                 the plugin library libNAME_plugin.so, its config
#                         message, its preset and its test
#   NAME.proto            the task's own settings (carried in `extensions`)
#   NAME_task.cc          the task: registers "NAME", reads its settings
#   configs/NAME.pbtxt    a preset
#   NAME_plugin_test.cc   loads the plugin into the engine and checks it
#
# Usage: tools/new_plugin.sh NAME [ROOT]
#   NAME: lower case words joined by "_" (a C++ namespace, a proto package
#   and the task's name); ROOT: the repository (default: this script's).
set -euo pipefail

usage() { echo "usage: $0 NAME [ROOT]  (NAME like my_task)" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
name="$1"
root="${2:-$(cd "$(dirname "$0")/.." && pwd)}"
if [[ ! "$name" =~ ^[a-z][a-z0-9]*(_[a-z][a-z0-9]*)*$ ]]; then
  echo "$0: '$name' is not a plugin name: lower case words joined by '_' (e.g. my_task)" >&2
  exit 2
fi
dir="$root/plugins/$name"
if [[ -e "$dir" ]]; then
  echo "$0: $dir already exists; choose another name or remove it" >&2
  exit 1
fi
# my_task -> MyTask: the config message is MyTaskConfig.
camel="$(sed -E 's/(^|_)([a-z])/\U\2/g' <<<"$name")"
message="${camel}Config"
type_url="type.googleapis.com/${name}.${message}"

# Written into a temporary folder and moved into place when complete, so a
# failure never leaves half a plugin.
tmp="$(mktemp -d "$root/plugins/.new_plugin.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/configs"

cat >"$tmp/BUILD" <<EOF
# The ${name} plugin task (written by tools/new_plugin.sh; see
# plugins/README.md). Depends only on the public headers: the engine that
# loads it provides the code.
load("//tools:build_defs.bzl", "tfm_cc_test", "tfm_plugin")
load("//tools:proto.bzl", "cc_proto")

package(default_visibility = ["//visibility:public"])

cc_proto(
    name = "${name}_proto",
    srcs = ["${name}.proto"],
)

# tfm_plugin stamps the library with the engine's plugin ABI number
# (core/plugin_abi.h): an engine with other headers refuses to load it.
tfm_plugin(
    name = "lib${name}_plugin.so",
    srcs = ["${name}_task.cc"],
    deps = [
        ":${name}_proto",
        "//core:plugin_api",
        "//tasks:task_api",
    ],
)

filegroup(
    name = "configs",
    srcs = glob(["configs/*.pbtxt"]),
)

tfm_cc_test(
    name = "${name}_plugin_test",
    srcs = ["${name}_plugin_test.cc"],
    data = [
        ":configs",
        ":lib${name}_plugin.so",
    ],
    deps = [
        "//tasks/driver",
        "//layers",
        "//ops:all_ops",
        "//tasks:all_tasks",
        "//tests/util:peer_python",
        "//tests/util:preset_files",
    ],
)
EOF

cat >"$tmp/${name}.proto" <<EOF
// The ${name} task's own settings, carried in a task config's \`extensions\`:
//   extensions { [${type_url}] { examples: 1000 } }
syntax = "proto2";

package ${name};

message ${message} {
  // TODO: your task's settings. An example: how many examples to make.
  optional int32 examples = 1 [default = 1000];
}
EOF

cat >"$tmp/configs/${name}.pbtxt" <<EOF
# A preset of the ${name} task. Load the plugin to use it:
#   bazel build //plugins/${name}:lib${name}_plugin.so
#   bazel run //tools:transformer -- --plugin=\$PWD/bazel-bin/plugins/${name}/lib${name}_plugin.so \\
#       validate --config=plugins/${name}/configs/${name}.pbtxt
task: "${name}"
name: "${name}"
extensions {
  [${type_url}] {
    examples: 1000
  }
}
data { work_dir: "/tmp/${name}" }
model {
  num_encoder_layers: 2 num_decoder_layers: 2
  d_model: 64 d_ff: 256 num_heads: 4 d_k: 16 d_v: 16
}
train { warmup_steps: 200 max_steps: 1000 }
decode { strategy: GREEDY beam_size: 1 }
EOF

cat >"$tmp/${name}_task.cc" <<EOF
// The ${name} task, a plugin (written by tools/new_plugin.sh). It registers
// the task and reads its settings; fill in Run's commands. A whole task
// with generated data, training, decoding and its own metric is
// plugins/algorithmic/algorithmic_task.cc; plugins/README.md explains each
// interface.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/config/config_extensions.h"
#include "core/status_macros.h"
#include "core/task_registry.h"
#include "plugins/${name}/${name}.pb.h"

namespace ${name} {
namespace {

constexpr char kExample[] = "extensions { [${type_url}] { examples: 1000 } }";

// The task's settings from the config, checked; errors name the file and
// line of the extension.
absl::StatusOr<${message}> ReadSettings(const tfm::LoadedConfig& loaded) {
  ${message} settings;
  TFM_ASSIGN_OR_RETURN(const std::string where,
                       tfm::ReadConfigExtension(loaded, kExample, &settings));
  if (settings.examples() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": examples: must be positive, got ", settings.examples()));
  }
  return settings;
}

class ${camel}Task : public tfm::Task {
 public:
  absl::Status Validate(const tfm::LoadedConfig& loaded) const override {
    return ReadSettings(loaded).status();
  }

  absl::Status Run(const tfm::TaskContext& context) override {
    TFM_ASSIGN_OR_RETURN(const ${message} settings, ReadSettings(context.config));
    if (context.mode == tfm::TaskMode::kValidate) {
      if (context.log) *context.log << "${name} settings:\n" << settings.DebugString();
      return absl::OkStatus();
    }
    // TODO: train (tasks/common/seq2seq_training.h), decode and evaluate
    // (tasks/common/seq2seq_decoding.h), as plugins/algorithmic does.
    return absl::UnimplementedError(
        "task '${name}': only validate is written so far (plugins/${name}/${name}_task.cc; "
        "see plugins/README.md)");
  }
};

TFM_REGISTER_TASK(tfm::TaskDef{
    .name = "${name}",
    .doc = "TODO: what the ${name} task does",
    .create = [] { return std::make_unique<${camel}Task>(); },
});

}  // namespace
}  // namespace ${name}
EOF

cat >"$tmp/${name}_plugin_test.cc" <<EOF
// The ${name} plugin in the engine (written by tools/new_plugin.sh): it
// loads, registers its task, reads its settings from the preset and names
// a missing one. Add a test for each command you write.
#include <sstream>
#include <string>
#include <vector>

#include "tasks/driver/driver.h"
#include "core/plugin_loader.h"
#include "core/task_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"
#include "tests/util/preset_files.h"

namespace ${name} {
namespace {

using ::testing::HasSubstr;

absl::Status Validate(const std::string& config, std::string* out) {
  tfm::DriverOptions options;
  options.config = config;
  options.mode = "validate";
  std::ostringstream log;
  const absl::Status status = tfm::RunDriver(options, log);
  *out = log.str();
  return status;
}

TEST(${camel}PluginTest, LoadsAndReadsItsSettings) {
  absl::StatusOr<tfm::LoadedPlugin> plugin =
      tfm::LoadEnginePlugin(tfm::testing::RunfilePath("plugins/${name}/lib${name}_plugin.so"));
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  EXPECT_TRUE(tfm::TaskRegistry().Contains("${name}"));

  std::string out;
  const absl::Status valid =
      Validate(tfm::testing::RunfilePath("plugins/${name}/configs/${name}.pbtxt"), &out);
  EXPECT_TRUE(valid.ok()) << valid;
  EXPECT_THAT(out, HasSubstr("examples: 1000"));
  // Every preset beside the plugin, found on disk.
  const std::vector<std::string> presets = tfm::testing::PresetFiles("plugins/${name}/configs");
  EXPECT_FALSE(presets.empty());
  for (const std::string& preset : presets) {
    const absl::Status status = Validate(tfm::testing::RunfilePath(preset), &out);
    EXPECT_TRUE(status.ok()) << preset << ": " << status;
  }

  const std::string missing = tfm::testing::WriteTempFile("missing.pbtxt", "task: \"${name}\"\n");
  const absl::Status status = Validate(missing, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("${name}.${message}"));
}

}  // namespace
}  // namespace ${name}
EOF

mv "$tmp" "$dir"
trap - EXIT
echo "wrote $dir:"
(cd "$dir" && find . -type f | sort | sed 's|^\./|  |')
echo "next: bazel test //plugins/${name}:${name}_plugin_test  (then fill in ${name}_task.cc; see plugins/README.md)"

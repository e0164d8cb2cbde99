// The hello task, a plugin (written by tools/new_plugin.sh). It registers
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
#include "plugins/hello/hello.pb.h"

namespace hello {
namespace {

constexpr char kExample[] = "extensions { [type.googleapis.com/hello.HelloConfig] { examples: 1000 } }";

// The task's settings from the config, checked; errors name the file and
// line of the extension.
absl::StatusOr<HelloConfig> ReadSettings(const tfm::LoadedConfig& loaded) {
  HelloConfig settings;
  TFM_ASSIGN_OR_RETURN(const std::string where,
                       tfm::ReadConfigExtension(loaded, kExample, &settings));
  if (settings.examples() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": examples: must be positive, got ", settings.examples()));
  }
  return settings;
}

class HelloTask : public tfm::Task {
 public:
  absl::Status Validate(const tfm::LoadedConfig& loaded) const override {
    return ReadSettings(loaded).status();
  }

  absl::Status Run(const tfm::TaskContext& context) override {
    TFM_ASSIGN_OR_RETURN(const HelloConfig settings, ReadSettings(context.config));
    if (context.mode == tfm::TaskMode::kValidate) {
      if (context.log) *context.log << "hello settings:\n" << settings.DebugString();
      return absl::OkStatus();
    }
    // TODO: train (tasks/common/seq2seq_training.h), decode and evaluate
    // (tasks/common/seq2seq_decoding.h), as plugins/algorithmic does.
    return absl::UnimplementedError(
        "task 'hello': only validate is written so far (plugins/hello/hello_task.cc; "
        "see plugins/README.md)");
  }
};

TFM_REGISTER_TASK(tfm::TaskDef{
    .name = "hello",
    .doc = "TODO: what the hello task does",
    .create = [] { return std::make_unique<HelloTask>(); },
});

}  // namespace
}  // namespace hello

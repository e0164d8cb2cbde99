// A bad plugin for tests: registers a fresh task, then "translation", which
// the engine already has. Loading must fail and leave no trace of either.
#include <memory>

#include "core/task_registry.h"

namespace {

class NoTask : public tfm::Task {
 public:
  absl::Status Validate(const tfm::LoadedConfig&) const override { return absl::OkStatus(); }
  absl::Status Run(const tfm::TaskContext&) override { return absl::OkStatus(); }
};

TFM_REGISTER_TASK(tfm::TaskDef{.name = "duplicate_task_extra",
                               .create = [] { return std::make_unique<NoTask>(); }});
TFM_REGISTER_TASK(tfm::TaskDef{.name = "translation",
                               .create = [] { return std::make_unique<NoTask>(); }});

}  // namespace

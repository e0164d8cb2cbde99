#include "core/task_registry.h"

#include "core/status_macros.h"

namespace tfm {

Registry<TaskDef>& TaskRegistry() {
  static auto* registry = new Registry<TaskDef>("task");
  return *registry;
}

absl::StatusOr<std::unique_ptr<Task>> CreateTask(absl::string_view name) {
  TFM_ASSIGN_OR_RETURN(std::shared_ptr<const TaskDef> def, TaskRegistry().Find(name));
  return def->create();
}

namespace internal {
TaskRegistrar::TaskRegistrar(TaskDef def) {
  const std::string name = def.name;
  RegisterOrRecordError(TaskRegistry(), name, std::move(def));
}
}  // namespace internal

}  // namespace tfm

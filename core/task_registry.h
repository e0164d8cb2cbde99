// Tasks: what the driver runs for a config's `task:` (translation, parsing,
// or a plugin's own), registered by name.
#ifndef TFM_CORE_TASK_REGISTRY_H_
#define TFM_CORE_TASK_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/config/config_loader.h"
#include "core/registry.h"

namespace tfm {

// What a task may be asked to do by the driver.
enum class TaskMode { kValidate, kTrain, kAverage, kPlot, kEvaluate, kDecode, kRun, kPreprocess };

// What decode and evaluate are asked (command-line paths already resolved).
struct DecodeRequest {
  std::string model;      // --model: a work directory or a checkpoint.
  std::string input;      // --input: decode's lines (empty: standard input).
  std::string output;     // --output (empty: standard output).
  std::string source;     // --src: evaluate's sources.
  std::string reference;  // --ref: evaluate's references.
  std::string split;      // --split: evaluate the model's own valid or test split instead.
  int beam = 0;           // --beam (0: the checkpoint's decode section).
  double alpha = -1;      // --alpha (< 0: the checkpoint's).
  int nbest = 0;          // --nbest (0: the checkpoint's).
  // --ensemble_combination: a config::DecodeConfig::EnsembleCombination
  // (< 0: the checkpoint's).
  int ensemble_combination = -1;
  // --device: cpu, cuda, cuda:N or auto (empty: decode.device of the
  // command's config, --config and --set, whose default is auto).
  std::string device;
  // --dtype: f32, bf16 or f16 (empty: the command's config's decode.dtype).
  std::string dtype;
  // --max_tokens: a batch's budget of source tokens x beam (0: the
  // checkpoint's decode.max_tokens; see task_config.proto).
  int max_tokens = 0;
  // --quantize: a config::DecodeConfig::Quantization (< 0: the checkpoint's).
  int quantize = -1;
  // --shortlist: a shortlist file ("none": no shortlist; empty: the
  // checkpoint's decode.shortlist), and how much of it a batch takes
  // (--shortlist_frequent, --shortlist_best; < 0: the checkpoint's).
  std::string shortlist;
  int shortlist_frequent = -1;
  int shortlist_best = -1;
  // The --set=decode.FIELD=VALUE assignments, as typed: applied over the
  // checkpoint's decode section (before the flags above, which win), since
  // a saved model decodes with its own config, not the command's --config.
  std::vector<std::string> settings;
};

// A command-line flag of a task's own, beside the driver's: --name=VALUE.
struct TaskFlag {
  std::string name;
  std::string help;  // For --help: what it does and its values.
};

struct TaskContext {
  LoadedConfig config;
  TaskMode mode = TaskMode::kValidate;
  std::ostream* log = nullptr;  // Progress and results.
  // Checkpoints, logs and the tokenizer live here (train resumes from it).
  std::string work_dir;
  absl::Duration time_limit = absl::InfiniteDuration();  // train: this run's budget.
  int average_last = 0;  // average: checkpoints to average (0: the config's).
  int average_best = 0;  // average --best=N: the N best by validation instead (0: the last).
  DecodeRequest decode;  // decode, evaluate.
  // The task's own flags given on the command line (TaskDef::flags), by
  // name, as typed: the task parses and checks the values.
  std::map<std::string, std::string> task_flags;
  std::string program;   // The binary's name (translate_ende), for the commands a task prints.
};

class Task {
 public:
  virtual ~Task() = default;
  // Task-specific checks of a config that passed the generic validation
  // (e.g. a parsing task needs PTB_MRG corpora). Errors name where.
  virtual absl::Status Validate(const LoadedConfig& config) const = 0;
  // Runs the mode asked for.
  virtual absl::Status Run(const TaskContext& context) = 0;
};

struct TaskDef {
  std::string name;
  std::string doc;
  std::function<std::unique_ptr<Task>()> create;
  // The task's own command-line flags: the driver accepts them for this
  // task (and no other) and hands their values over in TaskContext.
  std::vector<TaskFlag> flags;
  // Why checkpoints `member` and `first` of this task cannot decode as one
  // ensemble, beyond what the engine checks (same task and vocabulary);
  // empty when they can. May be empty (no further check).
  std::function<std::string(const config::TaskConfig& first, const config::TaskConfig& member)>
      ensemble_mismatch;
};

Registry<TaskDef>& TaskRegistry();

absl::StatusOr<std::unique_ptr<Task>> CreateTask(absl::string_view name);

namespace internal {
struct TaskRegistrar {
  explicit TaskRegistrar(TaskDef def);
};
}  // namespace internal

#define TFM_REGISTER_TASK(...)                              \
  static ::tfm::internal::TaskRegistrar TFM_UNIQUE_NAME(    \
      tfm_task_registrar_)(__VA_ARGS__)

}  // namespace tfm

#endif  // TFM_CORE_TASK_REGISTRY_H_

// Loading task configs: protobuf text files checked against task_config.proto,
// command-line overrides, and semantic checks whose errors name the file and
// line of the offending field.
#ifndef TFM_CORE_CONFIG_CONFIG_LOADER_H_
#define TFM_CORE_CONFIG_CONFIG_LOADER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/config/task_config.pb.h"
#include "core/paths.h"  // ResolveDataPath, for config users.

namespace tfm {

// Where each field set in a config came from, for error messages:
// "model.num_heads" -> "ende_base.pbtxt:12" or "--set=model.num_heads=7".
class ConfigSources {
 public:
  void Set(const std::string& field_path, std::string where) {
    where_[field_path] = std::move(where);
  }
  // The origin of `field_path` or of its closest set ancestor, else the file.
  std::string Describe(absl::string_view field_path) const;
  void set_file(std::string file) { file_ = std::move(file); }
  const std::string& file() const { return file_; }

 private:
  std::string file_ = "<config>";
  std::map<std::string, std::string> where_;
};

struct LoadedConfig {
  config::TaskConfig config;
  ConfigSources sources;
};

// Parses protobuf text. Syntax errors and unknown fields are InvalidArgument
// naming `filename`, the 1-based line and column, and the problem.
absl::StatusOr<LoadedConfig> ParseTaskConfig(absl::string_view text,
                                             const std::string& filename);

// Reads and parses a .pbtxt file; a missing file names its path.
absl::StatusOr<LoadedConfig> LoadTaskConfigFile(const std::string& path);

// Applies one "section.field=value" override (nested: "data.batching.max_length=
// 100"; repeated messages by index: "data.train[0].source_path=x"; repeated
// scalars are replaced by a comma-separated list). Unknown fields list the
// fields that exist at that level. Errors, then and later, name `origin`
// (what the user typed: "--device=cuda"), or "--set=ASSIGNMENT" when empty.
absl::Status ApplyOverride(absl::string_view assignment, LoadedConfig* loaded,
                           absl::string_view origin = "");

// A setting a driver flag stands for (--device=cuda sets train.device and
// decode.device): applied after the --set overrides, so the flag wins, and
// errors name the flag as typed, not a --set the user never wrote.
struct FlagOverride {
  std::string assignment;  // "train.device=cuda".
  std::string flag;        // "--device=cuda".
};

// --data=DIR: every corpus of data.train, data.valid and data.test is read
// from `dir` instead of where the config says: a PTB or gettext root becomes
// dir, source and target files keep their names in dir (the layout of the
// preset's data folder, e.g. ../shared/data/multi30k or ptb_sample, moved).
// Each changed field's origin becomes "--data=DIR" for error messages. An
// empty dir changes nothing.
void RelocateCorpora(const std::string& dir, LoadedConfig* loaded);

// Semantic checks beyond the schema (positive sizes, d_model divisible by the
// heads, probabilities in [0, 1), ...). Errors name where the field was set.
absl::Status ValidateTaskConfig(const LoadedConfig& loaded);

// What only the machine that runs the config can check, so that
// ValidateTaskConfig (and --mode=validate) works anywhere: the GPU named by
// train.device exists (cuda::DeviceCount), and data.work_dir exists or can be
// created. The driver calls it before training, evaluating or decoding;
// before a command that computes nothing on a device (preprocess) with
// `check_devices` false, so that a GPU config is prepared on any machine.
absl::Status CheckConfigRunsHere(const LoadedConfig& loaded, bool check_devices = true);

// Parse + overrides + validation: what the command line and the tasks use.
absl::StatusOr<LoadedConfig> LoadTaskConfig(const std::string& path,
                                            const std::vector<std::string>& overrides,
                                            const std::vector<FlagOverride>& flag_overrides = {});

}  // namespace tfm

#endif  // TFM_CORE_CONFIG_CONFIG_LOADER_H_

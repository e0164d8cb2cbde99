// The parsing task's own command-line flags (TaskDef::flags): the tag
// dictionary's settings for parse and evaluate, over the model's
// ParsingConfig.
#ifndef TFM_TASKS_PARSING_PARSING_FLAGS_H_
#define TFM_TASKS_PARSING_PARSING_FLAGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/task_registry.h"
#include "tasks/parsing/parsing_config.pb.h"

namespace tfm {

struct ParsingFlags {
  int tag_dictionary = -1;   // --tag_dictionary (< 0: the checkpoint's).
  int open_class_tags = -1;  // --open_class_tags: 0 or 1 (< 0: the checkpoint's).

  // `settings` with the flags given put over it.
  void ApplyTo(parsing::ParsingConfig* settings) const;
};

// What the parsing task declares (--tag_dictionary, --open_class_tags).
std::vector<TaskFlag> ParsingFlagDefinitions();

// The flags the driver handed over (TaskContext::task_flags). A value that
// is not a whole number (or, for --open_class_tags, not 0 or 1) is
// InvalidArgument naming the flag.
absl::StatusOr<ParsingFlags> ReadParsingFlags(const std::map<std::string, std::string>& given);

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_PARSING_FLAGS_H_

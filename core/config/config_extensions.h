// A plugin's own settings in a task config: one message of the plugin's
// type among the config's `extensions` (google.protobuf.Any), e.g.
//   extensions { [type.googleapis.com/algorithmic.AlgorithmicConfig] { problem: SORT } }
// The text parser finds the type once the plugin that defines it is loaded
// (its generated code registers the message), so a config naming an unknown
// type or field is a syntax error with its line and column.
#ifndef TFM_CORE_CONFIG_CONFIG_EXTENSIONS_H_
#define TFM_CORE_CONFIG_CONFIG_EXTENSIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/config/config_loader.h"
#include "google/protobuf/message.h"

namespace tfm {

// Unpacks the one extension of `message`'s type into *message and returns
// where it was set ("ende.pbtxt:12: extensions[0] (pkg.Config)"), for the
// caller's own checks to prefix their errors with. InvalidArgument naming
// the config file when there is none (listing the types that are there and
// showing `example`, the text a user would add), when there are two, or
// when it does not parse.
absl::StatusOr<std::string> ReadConfigExtension(const LoadedConfig& loaded,
                                                absl::string_view example,
                                                google::protobuf::Message* message);

}  // namespace tfm

#endif  // TFM_CORE_CONFIG_CONFIG_EXTENSIONS_H_

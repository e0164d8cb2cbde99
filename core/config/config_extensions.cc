#include "core/config/config_extensions.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"

namespace tfm {
namespace {

// The full message name in an Any's type URL ("type.googleapis.com/a.B").
std::string TypeName(const google::protobuf::Any& any) {
  const std::string& url = any.type_url();
  return url.substr(url.rfind('/') + 1);
}

}  // namespace

absl::StatusOr<std::string> ReadConfigExtension(const LoadedConfig& loaded,
                                                absl::string_view example,
                                                google::protobuf::Message* message) {
  const std::string wanted = message->GetDescriptor()->full_name();
  const auto& extensions = loaded.config.extensions();
  int found = -1;
  std::vector<std::string> others;
  for (int i = 0; i < extensions.size(); ++i) {
    const std::string field = absl::StrCat("extensions[", i, "]");
    if (TypeName(extensions[i]) != wanted) {
      others.push_back(absl::StrCat(loaded.sources.Describe(field), ": ", field, " holds ",
                                    TypeName(extensions[i])));
      continue;
    }
    if (found >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(loaded.sources.Describe(field), ": ", field, ": a second ", wanted,
                       " (the first is extensions[", found, "]); give one"));
    }
    found = i;
  }
  if (found < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        loaded.sources.file(), ": task '", loaded.config.task(), "' needs its settings: an extension of type ",
        wanted, ", e.g. ", example,
        others.empty() ? "" : absl::StrCat("; found only: ", absl::StrJoin(others, "; "))));
  }
  const std::string field = absl::StrCat("extensions[", found, "]");
  const std::string where =
      absl::StrCat(loaded.sources.Describe(field), ": ", field, " (", wanted, ")");
  if (!extensions[found].UnpackTo(message)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": does not parse as ", wanted));
  }
  return where;
}

}  // namespace tfm

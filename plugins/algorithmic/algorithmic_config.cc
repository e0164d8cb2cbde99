#include "plugins/algorithmic/algorithmic_config.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace algorithmic {
namespace {

constexpr char kExample[] =
    "extensions { [type.googleapis.com/algorithmic.AlgorithmicConfig] { problem: REVERSE } }";

// The full message name in an Any's type URL ("type.googleapis.com/a.B").
std::string TypeName(const google::protobuf::Any& any) {
  const std::string& url = any.type_url();
  return url.substr(url.rfind('/') + 1);
}

std::vector<std::string> Problems(const AlgorithmicConfig& config, const tfm::LoadedConfig& loaded) {
  std::vector<std::string> problems;
  if (config.problem() == AlgorithmicConfig::PROBLEM_UNSPECIFIED) {
    problems.push_back("problem: must be REVERSE, SORT or ADD");
  }
  if (config.base() < 2 || config.base() > 10) {
    problems.push_back(absl::StrCat("base: ", config.base(), " is not in 2..10"));
  }
  if (config.min_length() < 1 || config.max_length() < config.min_length()) {
    problems.push_back(absl::StrCat("min_length ", config.min_length(), ", max_length ",
                                    config.max_length(),
                                    ": need 1 <= min_length <= max_length"));
  }
  for (const auto& [name, size] : {std::pair<const char*, int>{"train_size", config.train_size()},
                                   {"valid_size", config.valid_size()},
                                   {"test_size", config.test_size()}}) {
    if (size <= 0) problems.push_back(absl::StrCat(name, ": must be positive, got ", size));
  }
  const int max_tokens = loaded.config.data().batching().max_length();
  if (problems.empty() && MaxSourceSymbols(config) + 1 > max_tokens) {
    problems.push_back(absl::StrCat(
        "max_length ", config.max_length(), ": a source has up to ", MaxSourceSymbols(config),
        " symbols and an eos, over data.batching.max_length ", max_tokens));
  }
  return problems;
}

}  // namespace

int MaxSourceSymbols(const AlgorithmicConfig& config) {
  return config.problem() == AlgorithmicConfig::ADD ? 2 * config.max_length() + 1
                                                    : config.max_length();
}

absl::StatusOr<AlgorithmicConfig> ReadAlgorithmicConfig(const tfm::LoadedConfig& loaded) {
  const std::string ours = AlgorithmicConfig::descriptor()->full_name();
  const auto& extensions = loaded.config.extensions();
  int found = -1;
  std::vector<std::string> others;
  for (int i = 0; i < extensions.size(); ++i) {
    const std::string field = absl::StrCat("extensions[", i, "]");
    if (TypeName(extensions[i]) != ours) {
      others.push_back(absl::StrCat(loaded.sources.Describe(field), ": ", field, " holds ",
                                    TypeName(extensions[i])));
      continue;
    }
    if (found >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          loaded.sources.Describe(field), ": ", field, ": a second ", ours,
          " (the first is extensions[", found, "]); give one"));
    }
    found = i;
  }
  if (found < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        loaded.sources.file(), ": the algorithmic task needs its settings, an ", ours,
        " in `extensions`, e.g. ", kExample,
        others.empty() ? "" : absl::StrCat("; found only: ", absl::StrJoin(others, "; "))));
  }
  const std::string field = absl::StrCat("extensions[", found, "]");
  const std::string where = absl::StrCat(loaded.sources.Describe(field), ": ", field, " (", ours, ")");
  AlgorithmicConfig config;
  if (!extensions[found].UnpackTo(&config)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": does not parse"));
  }
  const std::vector<std::string> problems = Problems(config, loaded);
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", absl::StrJoin(problems, "; ")));
  }
  return config;
}

}  // namespace algorithmic

#include "plugins/algorithmic/algorithmic_config.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/config_extensions.h"
#include "core/status_macros.h"

namespace algorithmic {
namespace {

constexpr char kExample[] =
    "extensions { [type.googleapis.com/algorithmic.AlgorithmicConfig] { problem: REVERSE } }";

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
  AlgorithmicConfig config;
  TFM_ASSIGN_OR_RETURN(const std::string where,
                       tfm::ReadConfigExtension(loaded, kExample, &config));
  const std::vector<std::string> problems = Problems(config, loaded);
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", absl::StrJoin(problems, "; ")));
  }
  return config;
}

}  // namespace algorithmic

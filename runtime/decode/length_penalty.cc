#include "runtime/decode/length_penalty.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace tfm {

double LengthPenalty(int steps, double alpha, LengthPenaltyKind kind) {
  switch (kind) {
    case config::DecodeConfig::POWER:
      // No step taken: nothing to normalise (0^alpha would divide by 0).
      return steps < 1 ? 1.0 : std::pow(static_cast<double>(steps), alpha);
    case config::DecodeConfig::GNMT:
      break;
  }
  return std::pow((5.0 + steps) / 6.0, alpha);
}

absl::StatusOr<LengthPenaltyKind> ParseLengthPenaltyKind(absl::string_view name) {
  if (name == "gnmt") return config::DecodeConfig::GNMT;
  if (name == "power") return config::DecodeConfig::POWER;
  return absl::InvalidArgumentError(absl::StrCat(
      "length penalty '", name,
      "' is not known: gnmt (((5 + steps) / 6)^alpha) or power (steps^alpha)"));
}

absl::string_view LengthPenaltyKindName(LengthPenaltyKind kind) {
  return kind == config::DecodeConfig::POWER ? "power" : "gnmt";
}

}  // namespace tfm

#include "runtime/decode/length_penalty.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace tfm {

double LengthPenalty(int steps, double alpha, LengthPenaltyKind kind) {
  switch (kind) {
    case LengthPenaltyKind::kPower:
      // No step taken: nothing to normalise (0^alpha would divide by 0).
      return steps < 1 ? 1.0 : std::pow(static_cast<double>(steps), alpha);
    case LengthPenaltyKind::kGnmt:
      break;
  }
  return std::pow((5.0 + steps) / 6.0, alpha);
}

LengthPenaltyKind LengthPenaltyKindFromConfig(config::DecodeConfig::LengthPenaltyKind kind) {
  return kind == config::DecodeConfig::POWER ? LengthPenaltyKind::kPower
                                             : LengthPenaltyKind::kGnmt;
}

absl::StatusOr<LengthPenaltyKind> ParseLengthPenaltyKind(absl::string_view name) {
  if (name == "gnmt") return LengthPenaltyKind::kGnmt;
  if (name == "power") return LengthPenaltyKind::kPower;
  return absl::InvalidArgumentError(absl::StrCat(
      "length penalty '", name,
      "' is not known: gnmt (((5 + steps) / 6)^alpha) or power (steps^alpha)"));
}

absl::string_view LengthPenaltyKindName(LengthPenaltyKind kind) {
  return kind == LengthPenaltyKind::kPower ? "power" : "gnmt";
}

}  // namespace tfm

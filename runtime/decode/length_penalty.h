// The length penalty lp(steps) that turns a finished hypothesis' summed
// log-probability into its score (score = log_prob / lp(steps), steps
// counting its eos, or every step when cut at the maximum length). Two
// kinds, because the toolkits a user compares with disagree:
// - GNMT: ((5 + steps) / 6)^alpha (Wu et al. 2016, eq. 14), the paper's and
//   our default.
// - POWER: steps^alpha, what fairseq's --lenpen, CTranslate2's
//   length_penalty and Hugging Face's length_penalty compute (each counts the
//   eos: CTranslate2 divides before it strips the eos from the tokens). With
//   it our beam search ranks as theirs do, so a benchmark can compare the
//   same translations. steps 0 (the empty output of an empty source, no step
//   taken) gives 1, not 0^alpha.
// Both grow with steps, which the beam search's early stop relies on (a live
// hypothesis' best reachable score is its log-probability over lp(max)).
#ifndef TFM_RUNTIME_DECODE_LENGTH_PENALTY_H_
#define TFM_RUNTIME_DECODE_LENGTH_PENALTY_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/config/task_config.pb.h"

namespace tfm {

// The config's own enum (decode.length_penalty_kind): GNMT or POWER.
using LengthPenaltyKind = config::DecodeConfig::LengthPenaltyKind;

// lp(steps) of `kind` with exponent alpha (>= 0).
double LengthPenalty(int steps, double alpha, LengthPenaltyKind kind = config::DecodeConfig::GNMT);

// "gnmt" or "power" (a flag's value); anything else is InvalidArgument
// naming the known ones.
absl::StatusOr<LengthPenaltyKind> ParseLengthPenaltyKind(absl::string_view name);

// "gnmt" or "power".
absl::string_view LengthPenaltyKindName(LengthPenaltyKind kind);

}  // namespace tfm

#endif  // TFM_RUNTIME_DECODE_LENGTH_PENALTY_H_

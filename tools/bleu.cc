// Scores a translation against references with sacreBLEU 2.4.3's default
// BLEU (and chrF on request), printing sacreBLEU's score line, the n-gram
// counts and the signature that makes the score reproducible.
//
//   bazel run //tools:bleu -- --ref=newstest2014.de --hyp=output.de [--chrf]
//
// Several --ref flags (or a comma-separated list) give multiple references.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "core/metrics/text_report.h"
#include "core/paths.h"

ABSL_FLAG(std::vector<std::string>, ref, {},
          "reference file(s), plain or .gz, one segment per line; repeat for more references");
ABSL_FLAG(std::string, hyp, "", "hypothesis file, plain or .gz, one segment per line");
ABSL_FLAG(bool, chrf, false, "also print chrF (sacreBLEU defaults: nc 6, nw 0, beta 2)");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("bleu --ref=REF [--ref=REF2] --hyp=HYP [--chrf]");
  // Files are given only by flag: a stray argument (another reference, a
  // flag without its "--") would otherwise be ignored without a word.
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    std::cerr << "bleu: unexpected argument '" << positional[1]
              << "': give the files as --ref=REF [--ref=REF2] --hyp=HYP\n";
    return 2;
  }
  // Relative paths are the user's, also under `bazel run`.
  std::vector<std::string> refs = absl::GetFlag(FLAGS_ref);
  for (std::string& ref : refs) ref = tfm::ResolveUserPath(ref);
  const std::string hyp = tfm::ResolveUserPath(absl::GetFlag(FLAGS_hyp));
  if (refs.empty() || hyp.empty()) {
    std::cerr << "bleu: both --ref and --hyp are required\n";
    return 2;
  }
  absl::StatusOr<tfm::FileScores> scores = tfm::ScoreFiles(hyp, refs, absl::GetFlag(FLAGS_chrf));
  if (!scores.ok()) {
    std::cerr << "bleu: " << scores.status().message() << "\n";
    return 1;
  }
  std::cout << scores->Format();
  return 0;
}

// The algorithmic problems' data: source and target lines of digit symbols
// separated by spaces ("3 1 4" -> "4 1 3"), drawn from the config's seed.
#ifndef TFM_PLUGINS_ALGORITHMIC_PROBLEMS_H_
#define TFM_PLUGINS_ALGORITHMIC_PROBLEMS_H_

#include <string>
#include <vector>

#include "plugins/algorithmic/algorithmic.pb.h"

namespace algorithmic {

struct Examples {
  std::vector<std::string> sources;
  std::vector<std::string> targets;
};

struct Splits {
  Examples train;
  Examples valid;
  Examples test;
};

// Every split of `config` (a checked config: see algorithmic_config.h). The
// same config gives the same lines on any machine: the generator is
// std::mt19937_64, whose sequence the standard fixes.
Splits GenerateSplits(const AlgorithmicConfig& config);

// The target line of `source` under `config`'s problem.
std::string Solve(const AlgorithmicConfig& config, const std::string& source);

// The number of distinct symbols the problem's lines use: the digits, and
// "+" for ADD.
int SymbolCount(const AlgorithmicConfig& config);

// The SentencePiece BPE vocabulary size that makes every symbol one piece:
// pad, unk, bos and eos, the characters (the symbols and the word mark "▁")
// and one merge "▁ + symbol" per symbol, after which BPE has nothing left
// to merge. So the model sees one token per symbol, whatever the seed.
int VocabularySize(const AlgorithmicConfig& config);

}  // namespace algorithmic

#endif  // TFM_PLUGINS_ALGORITHMIC_PROBLEMS_H_

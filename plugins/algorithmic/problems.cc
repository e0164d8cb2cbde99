#include "plugins/algorithmic/problems.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace algorithmic {
namespace {

// Digits of a number, most significant first.
using Digits = std::vector<int>;

std::string Line(const Digits& digits) { return absl::StrJoin(digits, " "); }

// a + b in `base`, most significant digit first.
Digits Add(const Digits& a, const Digits& b, int base) {
  Digits sum;
  int carry = 0;
  for (size_t i = 0; i < std::max(a.size(), b.size()) || carry > 0; ++i) {
    int total = carry;
    if (i < a.size()) total += a[a.size() - 1 - i];
    if (i < b.size()) total += b[b.size() - 1 - i];
    sum.push_back(total % base);
    carry = total / base;
  }
  std::reverse(sum.begin(), sum.end());
  return sum;
}

class Generator {
 public:
  explicit Generator(const AlgorithmicConfig& config)
      : config_(config), random_(config.seed()) {}

  // `n` in [0, n): the modulo's bias is below 1e-17 for these small n.
  int Below(int n) { return static_cast<int>(random_() % static_cast<uint64_t>(n)); }

  // A number of min_length..max_length digits; more than one digit never
  // starts with 0, so that ADD's sums are unambiguous.
  Digits Number() {
    const int length =
        config_.min_length() + Below(config_.max_length() - config_.min_length() + 1);
    Digits digits(length);
    for (int& digit : digits) digit = Below(config_.base());
    if (config_.problem() == AlgorithmicConfig::ADD && length > 1 && digits[0] == 0) {
      digits[0] = 1 + Below(config_.base() - 1);
    }
    return digits;
  }

  std::string Source() {
    if (config_.problem() == AlgorithmicConfig::ADD) {
      const Digits a = Number();
      const Digits b = Number();
      return Line(a) + " + " + Line(b);
    }
    return Line(Number());
  }

  Examples Draw(int count) {
    Examples examples;
    for (int i = 0; i < count; ++i) {
      examples.sources.push_back(Source());
      examples.targets.push_back(Solve(config_, examples.sources.back()));
    }
    return examples;
  }

 private:
  const AlgorithmicConfig& config_;
  std::mt19937_64 random_;
};

}  // namespace

std::string Solve(const AlgorithmicConfig& config, const std::string& source) {
  Digits first, second;
  Digits* current = &first;
  for (absl::string_view symbol : absl::StrSplit(source, ' ', absl::SkipEmpty())) {
    if (symbol == "+") {
      current = &second;
    } else {
      current->push_back(symbol[0] - '0');
    }
  }
  switch (config.problem()) {
    case AlgorithmicConfig::REVERSE:
      std::reverse(first.begin(), first.end());
      return Line(first);
    case AlgorithmicConfig::SORT:
      std::sort(first.begin(), first.end());
      return Line(first);
    case AlgorithmicConfig::ADD:
      return Line(Add(first, second, config.base()));
    default:
      return "";
  }
}

Splits GenerateSplits(const AlgorithmicConfig& config) {
  // Held-out splits first, so that changing train_size leaves them as
  // they are.
  Generator generator(config);
  Splits splits;
  splits.test = generator.Draw(config.test_size());
  splits.valid = generator.Draw(config.valid_size());
  splits.train = generator.Draw(config.train_size());
  return splits;
}

int SymbolCount(const AlgorithmicConfig& config) {
  return config.base() + (config.problem() == AlgorithmicConfig::ADD ? 1 : 0);
}

int VocabularySize(const AlgorithmicConfig& config) { return 4 + 1 + 2 * SymbolCount(config); }

}  // namespace algorithmic

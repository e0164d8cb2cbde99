// Quoting for the command lines that tests and benchmarks hand to a shell
// (peer Python processes through popen/system).
#ifndef TFM_TESTS_UTIL_SHELL_QUOTE_H_
#define TFM_TESTS_UTIL_SHELL_QUOTE_H_

#include <string>

namespace tfm {
namespace testing {

// `text` as one POSIX shell word: single-quoted, each ' written as '\''.
std::string ShellQuote(const std::string& text);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TESTS_UTIL_SHELL_QUOTE_H_

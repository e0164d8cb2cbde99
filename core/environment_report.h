// Lines that describe the machine and the kernels chosen for it ("cpu: ...",
// "blas: ..."), contributed by whichever part made the choice, so that
// `--list`, logs and benchmarks print the same facts without core depending
// on ops.
#ifndef TFM_CORE_ENVIRONMENT_REPORT_H_
#define TFM_CORE_ENVIRONMENT_REPORT_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tfm {

// Adds a line source; `describe` runs each time the report is made.
void AddEnvironmentLine(std::string label, std::function<std::string()> describe);

// (label, text) for every source, in registration order; "cpu" always first.
std::vector<std::pair<std::string, std::string>> EnvironmentReport();

namespace internal {
struct EnvironmentLineRegistrar {
  EnvironmentLineRegistrar(std::string label, std::function<std::string()> describe) {
    AddEnvironmentLine(std::move(label), std::move(describe));
  }
};
}  // namespace internal

}  // namespace tfm

#endif  // TFM_CORE_ENVIRONMENT_REPORT_H_

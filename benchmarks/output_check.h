// The check before any timing: do our outputs and PyTorch's for the same
// inputs agree, by the unit tests' tolerances? A row that fails it shows no
// ratio (peer_table.h).
#ifndef TFM_BENCHMARKS_OUTPUT_CHECK_H_
#define TFM_BENCHMARKS_OUTPUT_CHECK_H_

#include <vector>

#include "absl/status/status.h"
#include "benchmarks/op_cases.h"
#include "core/tensor.h"

namespace tfm {
namespace bench {

// OK when `ours` and `torch` (the peer's outputs, in the same order) agree
// as `op_case.check` says; `inputs` are the case's inputs (the dropout check
// holds each output against the last input). The error says which output
// and how it differs.
absl::Status CheckOutputs(const OpCase& op_case, const std::vector<NamedTensor>& inputs,
                          const std::vector<Tensor>& ours, const std::vector<Tensor>& torch);

}  // namespace bench
}  // namespace tfm

#endif  // TFM_BENCHMARKS_OUTPUT_CHECK_H_

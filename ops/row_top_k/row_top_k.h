// row_top_k: each row's best `count` entries of an f32 matrix [rows, n],
// best first, in the order of a beam search's candidates (value descending,
// then column ascending), skipping NaN and -infinity and, optionally, one
// forbidden column (the end-of-sentence token under ignore_eos), and with
// `allowed` bits (row_top_k_allowed) every column whose bit is clear (the
// tokens a decoding constraint forbids; column_filter.h). A search
// decoding on a GPU ranks the step's log-probabilities where they are and
// brings back rows x count numbers instead of rows x vocabulary
// (runtime/decode/beam_search.cc merges each sentence's rows on the host).
#ifndef TFM_OPS_ROW_TOP_K_ROW_TOP_K_H_
#define TFM_OPS_ROW_TOP_K_ROW_TOP_K_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

// Most entries a row may keep on CUDA: the kernel holds each thread's best
// entries in registers, in lists of up to this many. The CPU takes any count (a beam search of a
// wide beam ranks 2 x beam + 1 per row).
inline constexpr int64_t kMaxRowTopK = 64;

// Whether `device` ranks `count` entries a row (the CPU any count, others
// at most kMaxRowTopK); where not, a caller ranks on the CPU.
inline bool RowTopKRunsOn(const Device& device, int64_t count) {
  return device.is_cpu() || count <= kMaxRowTopK;
}

struct RowTopK {
  Tensor values;   // [rows, count] f32; -infinity past a row's valid entries.
  Tensor columns;  // [rows, count] i32; -1 past a row's valid entries.
};

// On x's device. `forbidden_column` < 0 forbids none; `allowed` (i32 [rows,
// BitRowWords(n)] on x's device, or undefined for every column) lets in
// only the columns whose bit is set.
absl::StatusOr<RowTopK> RowTopKOf(const Tensor& x, int64_t count, int64_t forbidden_column = -1,
                                  const Tensor& allowed = Tensor());

}  // namespace tfm

#endif  // TFM_OPS_ROW_TOP_K_ROW_TOP_K_H_

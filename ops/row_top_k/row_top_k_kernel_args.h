// What row_top_k's CPU and CUDA kernels both read from their context: the
// attributes (validated by the OpDef) and the outputs, allocated.
#ifndef TFM_OPS_ROW_TOP_K_ROW_TOP_K_KERNEL_ARGS_H_
#define TFM_OPS_ROW_TOP_K_ROW_TOP_K_KERNEL_ARGS_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"
#include "ops/row_top_k/column_filter.h"

namespace tfm {

struct RowTopKArgs {
  int64_t count = 0;
  int64_t forbidden = -1;
  // The `_allowed` ops' second input's bits [rows, BitRowWords(n)], or
  // null.
  const uint32_t* allowed = nullptr;
  Tensor* values = nullptr;   // [rows, count] f32.
  Tensor* columns = nullptr;  // [rows, count] i32.
};

// The checks of an op with row_top_k's inputs, attributes and outputs
// (row_top_k, log_softmax_top_k and their `_allowed` forms): x [rows, n],
// 1 <= count (<= kMaxRowTopK off the CPU), forbidden_column < n, and the
// `_allowed` forms' allowed bits i32 [rows, BitRowWords(n)]
// (column_filter.h).
absl::Status ValidateRowTopKArgs(const KernelContext& context);
// Its outputs' shapes: values and columns [rows, count].
absl::StatusOr<std::vector<Shape>> RowTopKOutputShapes(const KernelContext& context);

inline absl::StatusOr<RowTopKArgs> RowTopKArgsOf(KernelContext& context) {
  RowTopKArgs args;
  TFM_ASSIGN_OR_RETURN(args.count, context.attrs().Get<int64_t>("count"));
  TFM_ASSIGN_OR_RETURN(args.forbidden, context.attrs().Get<int64_t>("forbidden_column"));
  if (context.num_inputs() == 2) {
    const Tensor& allowed = context.input(1);
    args.allowed = reinterpret_cast<const uint32_t*>(allowed.data<int32_t>());
  }
  TFM_ASSIGN_OR_RETURN(args.values, context.AllocateOutput(0, DType::kF32));
  TFM_ASSIGN_OR_RETURN(args.columns, context.AllocateOutput(1, DType::kI32));
  return args;
}

// A row's best `count` so far, best first (value desc, column asc), as the
// CPU kernels keep them in the row's outputs.
struct RowTopKeeper {
  float* values;
  int32_t* columns;
  int64_t count;
  int64_t size = 0;

  // Every slot empty: (-inf, -1), what is left where a row has fewer.
  void Clear() {
    for (int64_t i = 0; i < count; ++i) {
      values[i] = -std::numeric_limits<float>::infinity();
      columns[i] = -1;
    }
    size = 0;
  }

  // The value an entry must beat to enter (-inf until `count` are kept).
  float Bar() const {
    return size < count ? -std::numeric_limits<float>::infinity() : values[count - 1];
  }

  // Offers entry `column` (columns come in ascending order, so an equal
  // value loses to the one already kept); NaN, -infinity and the columns
  // `filter` excludes never enter.
  void Offer(float v, int64_t column, const ColumnFilter& filter) {
    if (!(v > -std::numeric_limits<float>::infinity()) || (size == count && !(v > values[count - 1])) ||
        filter.Excludes(column)) {
      return;
    }
    int64_t slot = size < count ? size++ : count - 1;
    for (; slot > 0 && v > values[slot - 1]; --slot) {
      values[slot] = values[slot - 1];
      columns[slot] = columns[slot - 1];
    }
    values[slot] = v;
    columns[slot] = static_cast<int32_t>(column);
  }
};

// A CPU kernel of a row_top_k-shaped op: `top_of_row(x_row, n, keeper,
// filter, next_row)` fills each row's keeper (cleared first) with what the
// row's filter lets in, rows spread over the context's threads. next_row:
// the row the same thread takes next (null after its last), which it may
// prefetch.
template <typename TopOfRow>
absl::Status RunRowTopKCpu(KernelContext& context, const TopOfRow& top_of_row) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const RowTopKArgs args, RowTopKArgsOf(context));
  const int64_t n = x.dim(1);
  const float* in = x.data<float>();
  float* values = args.values->data<float>();
  int32_t* columns = args.columns->data<int32_t>();
  // Rows per task: enough entries to outweigh the scheduling.
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n));
  context.thread_pool()->ParallelFor(x.dim(0), grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      RowTopKeeper keeper{values + row * args.count, columns + row * args.count, args.count};
      keeper.Clear();
      top_of_row(in + row * n, n, keeper, ColumnFilter::OfRow(args.forbidden, args.allowed, n, row),
                 row + 1 < end ? in + (row + 1) * n : nullptr);
    }
  });
  return absl::OkStatus();
}

// A CUDA launcher of row_top_k_cuda.h (LaunchRowTopK, LaunchLogSoftmaxTopK),
// and the CUDA kernel of a row_top_k-shaped op through it (defined in CUDA
// builds only, in row_top_k_cuda_kernels.cc).
using RowTopKLauncher = const char* (*)(const float* x, int64_t rows, int64_t n, int count,
                                        int64_t forbidden, const uint32_t* allowed,
                                        float* values, int32_t* columns, StreamHandle stream);
absl::Status RunRowTopKCuda(KernelContext& context, RowTopKLauncher launch);

}  // namespace tfm

#endif  // TFM_OPS_ROW_TOP_K_ROW_TOP_K_KERNEL_ARGS_H_

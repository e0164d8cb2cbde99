// Column sums of a row-major matrix on the host: the gradient of a bias that
// was broadcast over rows (add's db, linear's dbias).
#ifndef TFM_OPS_ADD_SUM_ROWS_CPU_H_
#define TFM_OPS_ADD_SUM_ROWS_CPU_H_

#include <cstdint>

namespace tfm {

// out[c] = sum_r in[r * cols + c] for c < cols. Threaded over row chunks and
// column blocks; the summation order depends on the shape only, never on the
// thread count.
void SumRowsCpu(const float* in, int64_t rows, int64_t cols, float* out);

}  // namespace tfm

#endif  // TFM_OPS_ADD_SUM_ROWS_CPU_H_

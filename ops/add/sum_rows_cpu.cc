#include "ops/add/sum_rows_cpu.h"

#include <algorithm>
#include <vector>

#include "core/thread_pool.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/simd_math.h"
#include "ops/cpu_math/vec.h"

TFM_ISA_BEGIN
namespace {

// Columns per task: 8 KiB of partial sums, which stay in L1 while the rows
// stream past.
constexpr int64_t kColumnBlock = 2048;
// At most this many row chunks (the partial sums to merge), each at least
// kMinChunkRows long.
constexpr int64_t kMaxChunks = 16;
constexpr int64_t kMinChunkRows = 64;

// acc[c] = sum of rows [begin, end) of `in` at columns [c0, c1), four rows
// per step, added as acc + ((r0 + r1) + (r2 + r3)), so that acc is loaded and
// stored a quarter as often. Explicitly vectorised: at -O2 GCC leaves these
// loops (unknown trip counts) scalar. The masked last vector rounds like the
// others, so a column's sum does not depend on where it falls.
void SumRowRange(const float* in, int64_t cols, int64_t begin, int64_t end, int64_t c0,
                 int64_t c1, float* __restrict acc) {
  std::fill(acc + c0, acc + c1, 0.0f);
  int64_t r = begin;
  for (; r + 4 <= end; r += 4) {
    const float* __restrict r0 = in + r * cols;
    const float* __restrict r1 = r0 + cols;
    const float* __restrict r2 = r1 + cols;
    const float* __restrict r3 = r2 + cols;
    simd::ForEachVector(c0, c1, [&](int64_t c, auto lanes) {
      using simd::Load;
      const simd::VecF s01 = Load(r0 + c, lanes) + Load(r1 + c, lanes);
      const simd::VecF s23 = Load(r2 + c, lanes) + Load(r3 + c, lanes);
      simd::Store(Load(acc + c, lanes) + (s01 + s23), acc + c, lanes);
    });
  }
  for (; r < end; ++r) simd::Add(acc + c0, in + r * cols + c0, acc + c0, c1 - c0);
}

}  // namespace

void SumRowsCpu(const float* in, int64_t rows, int64_t cols, float* out) {
  if (cols <= 0) return;
  // Rows are cut into chunks by the shape alone, and each chunk's partial
  // sums are added in chunk order, so the result does not depend on the
  // thread count. Tasks are (chunk, column block) pairs: contiguous row
  // reads for a tall matrix, column parallelism for a wide one.
  const int64_t chunks = std::clamp<int64_t>(rows / kMinChunkRows, 1, kMaxChunks);
  const int64_t col_blocks = (cols + kColumnBlock - 1) / kColumnBlock;
  std::vector<float> partial(chunks > 1 ? chunks * cols : 0);
  ThreadPool::Default()->ParallelFor(chunks * col_blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t chunk = task / col_blocks, block = task % col_blocks;
      const int64_t c0 = block * kColumnBlock, c1 = std::min(cols, c0 + kColumnBlock);
      float* acc = chunks > 1 ? partial.data() + chunk * cols : out;
      SumRowRange(in, cols, rows * chunk / chunks, rows * (chunk + 1) / chunks, c0, c1, acc);
    }
  });
  if (chunks == 1) return;
  ThreadPool::Default()->ParallelFor(cols, 1024, [&](int64_t c0, int64_t c1) {
    std::copy(partial.data() + c0, partial.data() + c1, out + c0);
    for (int64_t chunk = 1; chunk < chunks; ++chunk) {
      simd::Add(out + c0, partial.data() + chunk * cols + c0, out + c0, c1 - c0);
    }
  });
}

TFM_ISA_END

// The entry point for baseline callers (add, linear) is in the AVX2 build.
#if defined(TFM_KERNEL_ISA_AVX2)
namespace tfm {
namespace avx512 {
void SumRowsCpu(const float* in, int64_t rows, int64_t cols, float* out);
}  // namespace avx512

void SumRowsCpu(const float* in, int64_t rows, int64_t cols, float* out) {
  static const auto chosen = SelectCpuFunction(&avx2::SumRowsCpu, &avx512::SumRowsCpu);
  chosen(in, rows, cols, out);
}

}  // namespace tfm
#endif

// How the fused residual LayerNorm backward (residual_layer_norm_cuda.cu)
// splits its rows into chunks, one block each: in whole waves of the blocks
// the GPU holds at once. A block walks its chunk's rows one after another,
// so the kernel takes as long as its longest wave times a chunk; fixed
// 128-row chunks gave 216 blocks for the big update's 27,648 rows (1.6
// waves of an H200's 132 one-block multiprocessors: as long as 2 full
// ones) and 96 for the Multi30k GPU preset's 12,288 rows (a third of the
// 264 blocks its layout keeps resident). Plain C++: the CUDA host code
// calls it, and it is tested on the CPU.
#ifndef TFM_OPS_RESIDUAL_LAYER_NORM_BACKWARD_CHUNKS_H_
#define TFM_OPS_RESIDUAL_LAYER_NORM_BACKWARD_CHUNKS_H_

#include <algorithm>
#include <cstdint>

namespace tfm {

struct RowChunks {
  int64_t rows_per_chunk = 1;
  int64_t count = 0;  // ceil(rows / rows_per_chunk).
};

// Chunks of about target_rows rows (at least min_rows, unless fewer rows
// than that), as many as a whole number of waves of `resident` blocks
// (rounded to the nearest, at least one), at most max_chunks.
inline RowChunks ChunksInWholeWaves(int64_t rows, int64_t resident, int64_t target_rows,
                                    int64_t min_rows, int64_t max_chunks) {
  if (rows <= 0) return RowChunks{1, 0};
  max_chunks = std::max<int64_t>(max_chunks, 1);
  resident = std::clamp<int64_t>(resident, 1, max_chunks);
  target_rows = std::max<int64_t>(target_rows, 1);
  min_rows = std::max<int64_t>(min_rows, 1);
  const int64_t per_wave = resident * target_rows;
  const int64_t waves = std::clamp<int64_t>((rows + per_wave / 2) / per_wave, 1,
                                            max_chunks / resident);
  const int64_t chunks = std::max<int64_t>(1, std::min(waves * resident, rows / min_rows));
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  return RowChunks{rows_per_chunk, (rows + rows_per_chunk - 1) / rows_per_chunk};
}

// The most chunks ChunksInWholeWaves gives for `rows` (whatever the GPU):
// what the workspace of their partial sums must hold.
inline int64_t MostChunksInWholeWaves(int64_t rows, int64_t min_rows, int64_t max_chunks) {
  if (rows <= 0) return 0;
  min_rows = std::max<int64_t>(min_rows, 1);
  return std::max<int64_t>(1, std::min(std::max<int64_t>(max_chunks, 1), rows / min_rows));
}

}  // namespace tfm

#endif  // TFM_OPS_RESIDUAL_LAYER_NORM_BACKWARD_CHUNKS_H_

// The register-blocked int8 product that every vector kernel runs, written
// once over an instruction set's few operations. Each int8_panels_<isa>.cc
// includes it inside its `#pragma GCC target` region and an anonymous
// namespace, after defining `struct Isa` with:
//   kLanes, kRows                  int32 lanes of a vector; rows of a block
//   Acc, W                         accumulator (int32 lanes), weight vector
//   Acc Zero()
//   W Load(const int8_t* w)        kLanes x 4 weight bytes
//   Acc Broadcast(const uint8_t* x)  4 activation bytes into every lane
//   Acc Dot(Acc acc, Acc x, W w)   acc + each lane's 4 u8 x s8 products
//   void Finish(Acc acc, int32_t zp, float sx, const float* scales,
//               const int32_t* row_sums, const float* bias, bool relu,
//               bool stream, float* y)  kLanes outputs (bias may be null;
//                                  stream: non-temporal where aligned)
// The anonymous namespace gives each file's copy internal linkage, so the
// linker never swaps in another instruction set's copy (ops/cpu_math/isa.h).
// No standard-library templates in here, for the same reason.
#ifndef TFM_OPS_QUANTIZED_LINEAR_INT8_PANELS_BODY_H_
#define TFM_OPS_QUANTIZED_LINEAR_INT8_PANELS_BODY_H_

#include "ops/quantized_linear/int8_finish_body.h"

// A block is R rows by V vectors of columns: R x V accumulators, V weight
// vectors and one broadcast in registers; every weight load serves R
// products, every broadcast V. Every loop over r and v is unrolled, so
// the accumulators never live in memory.
template <int R, int V>
void Block(const Int8Product& p, int64_t row0, int64_t column0) {
  constexpr int64_t kGroupBytes = kInt8PanelColumns * kInt8GroupInputs;
  typename Isa::Acc acc[R][V];
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = Isa::Zero();
  }
  const int8_t* w[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    const int64_t column = column0 + v * Isa::kLanes;
    w[v] = p.packed + (column / kInt8PanelColumns) * p.groups * kGroupBytes +
           (column % kInt8PanelColumns) * kInt8GroupInputs;
  }
  // Activations are [groups, rows, 4]: a group's rows of the block lie
  // side by side, one pointer with constant offsets.
  const int64_t x_group_stride = p.rows * kInt8GroupInputs;
  const uint8_t* x = p.x + row0 * kInt8GroupInputs;
  for (int64_t g = 0; g < p.groups; ++g, x += x_group_stride) {
    typename Isa::W wv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) wv[v] = Isa::Load(w[v] + g * kGroupBytes);
#pragma GCC unroll 32
    for (int r = 0; r < R; ++r) {
      const typename Isa::Acc xb = Isa::Broadcast(x + r * kInt8GroupInputs);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = Isa::Dot(acc[r][v], xb, wv[v]);
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) FinishVector(p, acc[r][v], row0 + r, column0 + v * Isa::kLanes);
  }
}

// The rows left after the whole blocks: a block of exactly that many.
template <int N, int V>
void TailBlock(const Int8Product& p, int64_t row0, int64_t count, int64_t column0) {
  if constexpr (N >= 1) {
    if (count == N) return Block<N, V>(p, row0, column0);
    TailBlock<N - 1, V>(p, row0, count, column0);
  }
}

template <int V>
void EveryRow(const Int8Product& p, int64_t column0) {
  int64_t row = 0;
  for (; row + Isa::kRows <= p.rows; row += Isa::kRows) Block<Isa::kRows, V>(p, row, column0);
  if (row < p.rows) TailBlock<Isa::kRows - 1, V>(p, row, p.rows - row, column0);
}

// Column blocks of two vectors (two panels with 512-bit vectors, one with
// 256-bit ones), outside; row blocks inside, so that a column block's
// weights stay in L1 while every row block reads them.
void Panels(const Int8Product& p, int64_t first_panel, int64_t last_panel) {
  constexpr int64_t kBlockPanels = 2 * Isa::kLanes / kInt8PanelColumns;
  static_assert(kBlockPanels >= 1, "a block covers whole panels");
  for (int64_t panel = first_panel; panel < last_panel; panel += kBlockPanels) {
    if (panel + kBlockPanels <= last_panel) {
      EveryRow<2>(p, panel * kInt8PanelColumns);
    } else {
      EveryRow<1>(p, panel * kInt8PanelColumns);  // An odd last panel of 512-bit blocks.
    }
  }
}

#endif  // TFM_OPS_QUANTIZED_LINEAR_INT8_PANELS_BODY_H_

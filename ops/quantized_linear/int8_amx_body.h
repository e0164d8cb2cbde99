// The int8 product on AMX tiles (Sapphire Rapids and later), written once
// over a `struct Tiles` so that a test can run the same blocking over a
// scalar model of the tiles (int8_amx_emulated_test.cc) on CPUs without
// AMX. Included inside a target region and an anonymous namespace after
// `struct Isa : ZmmFinish` (int8_zmm_finish.h) and `struct Tiles` with:
//   void Configure()                      8 tiles of 16 rows x 64 bytes
//   void Release()
//   template <int T> void Zero()
//   template <int T> void Load(const void* p, int64_t stride)   16 rows
//   template <int T> void Store(void* p, int64_t stride)        16 rows
//   template <int C, int A, int B> void Dot()   C += A (u8) x B (s8), tdpbusd
// (see int8_panels_body.h for why each file keeps its own copy).
//
// tdpbusd takes A as 16 rows x 64 bytes (16 groups of 4 inputs of each
// row) and B as 16 rows x 64 bytes in the pairing VNNI uses: B's row k
// holds, for each of 16 columns, inputs 4k .. 4k + 3. One packed panel's
// group (int8_panels.h: 16 columns x 4 inputs) is exactly one such row,
// and a panel's groups follow each other, so B is the packed weight as it
// is, 64 bytes a row. A needs a row's groups side by side: the AMX layout
// of the activations is row-major (int8_panels.h: kInt8AmxTileRows), unlike
// the vector kernels' [groups, rows, 4].
//
// Blocks are 2 x 2 tiles of C (32 rows x 2 panels): C in tiles 0-3, A in
// 4-5, B in 6-7, so every A load serves 2 products and every B load 2.
#ifndef TFM_OPS_QUANTIZED_LINEAR_INT8_AMX_BODY_H_
#define TFM_OPS_QUANTIZED_LINEAR_INT8_AMX_BODY_H_

#include "ops/quantized_linear/int8_finish_body.h"

constexpr int64_t kTileRows = 16;
constexpr int64_t kTileBytes = 64;  // A row of A or B: 16 groups of 4.

// R row tiles (1 or 2) by V panels (1 or 2), rows row0 .. row0 + 16 R - 1
// of the (padded) activations, panels panel0 .. panel0 + V - 1. `c` holds
// the int32 sums between the tiles and the finish: [32 rows, 32 columns].
template <int R, int V>
void AmxBlock(const Int8Product& p, int64_t row0, int64_t panel0, int32_t* c) {
  constexpr int64_t kGroupBytes = kInt8PanelColumns * kInt8GroupInputs;
  constexpr int64_t kCStride = 2 * kInt8PanelColumns * sizeof(int32_t);
  const int64_t row_bytes = p.groups * kInt8GroupInputs;
  Tiles::template Zero<0>();
  if constexpr (V == 2) Tiles::template Zero<1>();
  if constexpr (R == 2) Tiles::template Zero<2>();
  if constexpr (R == 2 && V == 2) Tiles::template Zero<3>();
  const uint8_t* a = p.x + row0 * row_bytes;
  const int8_t* b = p.packed + panel0 * p.groups * kGroupBytes;
  for (int64_t k = 0; k < row_bytes; k += kTileBytes) {
    Tiles::template Load<4>(a + k, row_bytes);
    if constexpr (R == 2) Tiles::template Load<5>(a + kTileRows * row_bytes + k, row_bytes);
    // Group k / 4 of the panel: 16 groups of 64 bytes from there.
    const int8_t* panel_b = b + (k / kInt8GroupInputs) * kGroupBytes;
    Tiles::template Load<6>(panel_b, kGroupBytes);
    if constexpr (V == 2) Tiles::template Load<7>(panel_b + p.groups * kGroupBytes, kGroupBytes);
    Tiles::template Dot<0, 4, 6>();
    if constexpr (V == 2) Tiles::template Dot<1, 4, 7>();
    if constexpr (R == 2) Tiles::template Dot<2, 5, 6>();
    if constexpr (R == 2 && V == 2) Tiles::template Dot<3, 5, 7>();
  }
  Tiles::template Store<0>(c, kCStride);
  if constexpr (V == 2) Tiles::template Store<1>(c + kInt8PanelColumns, kCStride);
  if constexpr (R == 2) Tiles::template Store<2>(c + kTileRows * 2 * kInt8PanelColumns, kCStride);
  if constexpr (R == 2 && V == 2) {
    Tiles::template Store<3>(c + kTileRows * 2 * kInt8PanelColumns + kInt8PanelColumns, kCStride);
  }
  for (int64_t r = 0; r < R * kTileRows && row0 + r < p.rows; ++r) {
    for (int v = 0; v < V; ++v) {
      const int32_t* sums = c + r * 2 * kInt8PanelColumns + v * kInt8PanelColumns;
      FinishVector(p, _mm512_loadu_si512(sums), row0 + r, (panel0 + v) * kInt8PanelColumns);
    }
  }
}

template <int V>
void AmxEveryRow(const Int8Product& p, int64_t panel, int32_t* c) {
  int64_t row = 0;
  for (; row + 2 * kTileRows <= p.rows; row += 2 * kTileRows) AmxBlock<2, V>(p, row, panel, c);
  // The rest (1 to 31 rows): the activations are padded to whole tiles.
  if (p.rows - row > kTileRows) {
    AmxBlock<2, V>(p, row, panel, c);
  } else if (row < p.rows) {
    AmxBlock<1, V>(p, row, panel, c);
  }
}

// Panels outside, rows inside, as the vector kernels: a pair of panels'
// weights stays in cache while every row block reads them.
void AmxPanels(const Int8Product& p, int64_t first_panel, int64_t last_panel) {
  alignas(64) int32_t c[2 * kTileRows * 2 * kInt8PanelColumns];
  Tiles::Configure();
  for (int64_t panel = first_panel; panel < last_panel; panel += 2) {
    if (panel + 2 <= last_panel) {
      AmxEveryRow<2>(p, panel, c);
    } else {
      AmxEveryRow<1>(p, panel, c);
    }
  }
  Tiles::Release();
}

#endif  // TFM_OPS_QUANTIZED_LINEAR_INT8_AMX_BODY_H_

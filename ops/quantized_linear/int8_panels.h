// The int8 product over a range of weight panels, one function per kernel
// (quantized_linear.h's Int8Kernel): what quantized_linear_cpu.cc hands to
// its threads. Each vector kernel lives in its own file, compiled for its
// instruction set (int8_panels_body.h).
#ifndef TFM_OPS_QUANTIZED_LINEAR_INT8_PANELS_H_
#define TFM_OPS_QUANTIZED_LINEAR_INT8_PANELS_H_

#include <cstdint>

namespace tfm {

// Panels are 16 output columns; groups are 4 inputs (quantized_linear.h).
inline constexpr int64_t kInt8PanelColumns = 16;
inline constexpr int64_t kInt8GroupInputs = 4;

// One product: y[r, j] = sx[r] * scales[j] * (sum_k u[r, k] q[j, k] -
// zp[r] * row_sums[j]) + bias[j], then max(0, .) with relu.
struct Int8Product {
  int64_t rows = 0, groups = 0, out = 0;
  // [groups, rows, 4] u8: group g of row r at (g * rows + r) * 4, so that
  // the rows of a block are side by side; zero past `in`.
  const uint8_t* x = nullptr;
  const int32_t* x_zero_points = nullptr;  // [rows]
  const float* x_scales = nullptr;         // [rows]
  const int8_t* packed = nullptr;          // [panels, groups, 16, 4]
  const float* scales = nullptr;           // [out]
  const int32_t* row_sums = nullptr;       // [out]
  const float* bias = nullptr;             // [out] or null
  bool relu = false;
  float* y = nullptr;  // [rows, out]
  // y written with non-temporal stores (where aligned): for outputs larger
  // than a core's L2, whose lines an ordinary store would first read for
  // ownership and then lose before the next op reads them. Each thread
  // that ran the kernel issues an sfence before its work is published.
  bool stream_y = false;
};

// Outputs above this size are written with non-temporal stores
// (Int8Product::stream_y): 2 MiB, a Sapphire Rapids core's L2 (Zen 4's is
// 1 MiB). In decoding that is the output projection's logits at batch 32
// and up (128 rows x 8,000: 4 MB), not the inner products (1 MiB at most
// there): on an AMX Xeon streaming the logits took int8 decoding at batch
// 32 from 7,700 to 9,340-9,500 target tokens/s
// (benchmarks/results/README.md, eighteenth session).
inline constexpr int64_t kInt8StreamOutputBytes = int64_t{2} << 20;

// The AMX kernel reads x row-major instead: row r's groups side by side at
// x + r * groups * 4, the rows past `rows` up to a multiple of
// kInt8AmxTileRows readable (zeros), and it needs `groups` to be a
// multiple of kInt8AmxTileGroups (a tile row's 64 bytes: inputs a multiple
// of 64, as every Transformer width is). quantized_linear_cpu.cc lays the
// activations out so and gives other products to the AVX-512 VNNI kernel.
inline constexpr int64_t kInt8AmxTileRows = 16;
inline constexpr int64_t kInt8AmxTileGroups = 16;

// Columns of panels [first_panel, last_panel) for every row.
using Int8PanelsFn = void (*)(const Int8Product& product, int64_t first_panel, int64_t last_panel);

void Int8PanelsScalar(const Int8Product& product, int64_t first_panel, int64_t last_panel);
void Int8PanelsAvx2(const Int8Product& product, int64_t first_panel, int64_t last_panel);
void Int8PanelsAvxVnni(const Int8Product& product, int64_t first_panel, int64_t last_panel);
void Int8PanelsAvx512Vnni(const Int8Product& product, int64_t first_panel, int64_t last_panel);
void Int8PanelsAmx(const Int8Product& product, int64_t first_panel, int64_t last_panel);

// What quantized_linear runs for the AMX kernel: Int8PanelsAmx, or the
// stand-in a test set. SetInt8AmxStandInForTesting(panels) (the AMX
// blocking over a model of the tiles, int8_amx_emulated_test) lets kernel
// "amx_int8" be asked for on a CPU with AVX-512 VNNI but no AMX, so that
// the op's AMX path (its activation layout, the fallback) runs there; null
// removes it. The active kernel is never the stand-in.
Int8PanelsFn Int8AmxPanels();
void SetInt8AmxStandInForTesting(Int8PanelsFn panels);

}  // namespace tfm

#endif  // TFM_OPS_QUANTIZED_LINEAR_INT8_PANELS_H_

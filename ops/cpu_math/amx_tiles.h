// The AMX tile configuration both tile kernels use (the int8 product of
// quantized_linear, the bf16 product of gemm_bf16_amx): palette 1, eight
// tiles of 16 rows x 64 bytes. Plain code, includable anywhere: ldtilecfg
// is written as inline assembly, which GCC passes on whatever the target.
#ifndef TFM_OPS_CPU_MATH_AMX_TILES_H_
#define TFM_OPS_CPU_MATH_AMX_TILES_H_

#include <cstdint>

namespace tfm {

// The configuration's memory form.
struct alignas(64) AmxTileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64, "ldtilecfg reads 64 bytes");

// Tiles 0-7 as 16 rows of 64 bytes, for this thread (until tilerelease).
// ldtilecfg is given the whole 64-byte operand: GCC 12's _tile_loadconfig
// tells the compiler it reads 8 bytes, which would let it drop the other
// stores to the configuration.
inline void ConfigureFullAmxTiles() {
  AmxTileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.colsb[t] = 64;
    config.rows[t] = 16;
  }
  __asm__ volatile("ldtilecfg %0" ::"m"(config));
}

}  // namespace tfm

#endif  // TFM_OPS_CPU_MATH_AMX_TILES_H_

// The int8 product on AMX tiles: tdpbusd, 16 rows x 16 columns x 64 inputs
// an instruction (int8_amx_body.h); the sums are written out with AVX-512.
// Only where the CPU has AMX-INT8 and the kernel may use its tiles
// (CpuFeatures::amx_int8: XCR0's tile state and arch_prctl's permission).
#include <immintrin.h>

#include <cstdint>

#include "ops/cpu_math/amx_tiles.h"
#include "ops/quantized_linear/int8_panels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,avx512f,avx512bw,avx512dq,avx512vl,amx-tile,amx-int8")
// As in int8_panels_avx512_vnni.cc: GCC 12's false -Wmaybe-uninitialized
// in its AVX-512 intrinsics (bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace tfm {
namespace {

#include "ops/quantized_linear/int8_zmm_finish.h"

struct Isa : ZmmFinish {};

// GCC's tile intrinsics are macros that paste the tile number into the
// instruction, so each tile the body names is spelled out here.
struct Tiles {
  static void Configure() { ConfigureFullAmxTiles(); }
  static void Release() { _tile_release(); }
  template <int T>
  static void Zero() {
    if constexpr (T == 0) _tile_zero(0);
    if constexpr (T == 1) _tile_zero(1);
    if constexpr (T == 2) _tile_zero(2);
    if constexpr (T == 3) _tile_zero(3);
  }
  // GCC's tileloadd carries no memory operand: the barrier keeps every
  // store before it (the tile configuration's, the caller's) ahead of the
  // load.
  template <int T>
  static void Load(const void* p, int64_t stride) {
    __asm__ volatile("" ::: "memory");
    if constexpr (T == 4) _tile_loadd(4, p, stride);
    if constexpr (T == 5) _tile_loadd(5, p, stride);
    if constexpr (T == 6) _tile_loadd(6, p, stride);
    if constexpr (T == 7) _tile_loadd(7, p, stride);
  }
  template <int T>
  static void Store(void* p, int64_t stride) {
    if constexpr (T == 0) _tile_stored(0, p, stride);
    if constexpr (T == 1) _tile_stored(1, p, stride);
    if constexpr (T == 2) _tile_stored(2, p, stride);
    if constexpr (T == 3) _tile_stored(3, p, stride);
  }
  template <int C, int A, int B>
  static void Dot() {
    static_assert(C >= 0 && C < 4 && A == 4 + C / 2 && B == 6 + C % 2, "the body's pairing");
    if constexpr (C == 0) _tile_dpbusd(0, 4, 6);
    if constexpr (C == 1) _tile_dpbusd(1, 4, 7);
    if constexpr (C == 2) _tile_dpbusd(2, 5, 6);
    if constexpr (C == 3) _tile_dpbusd(3, 5, 7);
  }
};

#include "ops/quantized_linear/int8_amx_body.h"

}  // namespace

void Int8PanelsAmx(const Int8Product& product, int64_t first_panel, int64_t last_panel) {
  AmxPanels(product, first_panel, last_panel);
}

}  // namespace tfm
#pragma GCC diagnostic pop
#pragma GCC pop_options

// GemmBf16Amx: a product of f32 matrices rounded to bf16, summed in f32 on
// AMX tiles (tdpbf16ps: 16 rows x 16 columns x 32 inputs an instruction).
//
// Layouts (both zero-padded, so that the tiles never read past an edge):
//   A: [mp, kp] bf16, row-major: a tile row is 32 consecutive inputs of
//      one row of op(A). mp is a multiple of 32 (two row tiles a block), kp
//      of 32.
//   B: panels of 16 columns of op(B), [np / 16, kp / 2, 16, 2]: for each
//      pair of inputs 2r, 2r + 1, the 16 columns' two values side by side,
//      the pairing tdpbf16ps reads; one tile of B is 1 KiB of consecutive
//      memory. np is a multiple of 32 (two column tiles a block).
// Blocks are 2 x 2 tiles of C (32 rows x 32 columns): C in tiles 0-3, A in
// 4-5, B in 6-7, so every tile load serves two products.
//
// Only where CpuFeatures::amx_bf16 holds (the tiles usable by this process).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/cache_aligned_vector.h"
#include "core/thread_pool.h"
#include "ops/cpu_math/amx_tiles.h"
#include "ops/matmul/gemm_bf16_cpu.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,amx-tile,amx-bf16")
// GCC 12's false -Wmaybe-uninitialized in its AVX-512 intrinsics (bug
// 105593), as in ops/quantized_linear.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace tfm {
namespace {

constexpr int64_t kTileRows = 16;
constexpr int64_t kTileInputs = 32;  // bf16 inputs in a row of an A tile.
constexpr int64_t kBlock = 32;       // Rows and columns of C a block computes.

// The packed A rows a thread keeps in its core's L2 (a quarter of the
// smallest AMX part's 2 MiB) while every column block of B passes over them:
// each B tile loaded serves that many rows. At most 8 blocks (256 rows).
constexpr int64_t kRowGroupBytes = int64_t{1} << 19;
constexpr int64_t kMaxRowGroup = 8 * 32;
// Likewise the column blocks of packed B that pass over those rows before
// the next ones: C is written a row's stretch at a time (32 rows 32 columns
// apart would touch a page each).
constexpr int64_t kColumnChunkBytes = int64_t{1} << 19;
// The most inputs one pass sums (GemmBf16Amx): 32 rows of A are then 64 KiB.
// (512 kept more in L1 but passed over C more often: no better overall.)
constexpr int64_t kPassInputs = 1024;
// The inputs of a block's rows that stay in L1 (16 KiB of A's 32 rows)
// while a chunk's column blocks pass over them. With all of a pass's 1,024
// (64 KiB) the tiles waited on L2 for both operands: 1.6 against 1.8
// TFLOP/s on a core in a microbenchmark of the loop (results document).
constexpr int64_t kSliceInputs = 256;

int64_t RoundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// 16 floats rounded to bf16 (to nearest, ties to even; NaN stays NaN).
inline __m256i Bf16Of(__m512 v) { return (__m256i)_mm512_cvtneps_pbh(v); }

inline __mmask16 FirstLanes(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
}

// r[0..15] as a 16 x 16 matrix of 32-bit elements, transposed in place
// (unpacks within 128-bit lanes, then two rounds of lane shuffles).
inline void Transpose16(__m512i r[16]) {
  __m512 x[16], t[16];
  for (int i = 0; i < 16; ++i) x[i] = _mm512_castsi512_ps(r[i]);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(x[i], x[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(x[i], x[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    x[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    x[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    x[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    x[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int h = 0; h < 16; h += 8) {
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_f32x4(x[h + i], x[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_f32x4(x[h + i], x[h + i + 4], 0xdd);
    }
  }
  for (int i = 0; i < 8; ++i) {
    x[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    x[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
  for (int i = 0; i < 16; ++i) r[i] = _mm512_castps_si512(x[i]);
}

// 16 floats of `first` and 16 of `second` rounded to bf16 and paired: 32-bit
// element c holds first[c] (low half) and second[c] (high half).
inline __m512i Bf16Pairs(__m512 first, __m512 second) {
  alignas(64) static const uint16_t kInterleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,
                                                       21, 6, 22, 7, 23, 8,  24, 9,  25, 10, 26,
                                                       11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(second, first);  // first low.
  return _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), both);
}

// Rows [row0, row1) of op(A) into `packed`, from its start (rows past m and
// inputs past k are zeros).
void PackA(const GemmOperand& a, int64_t m, int64_t k, int64_t kp, int64_t row0, int64_t row1,
           uint16_t* packed) {
  if (!a.trans) {
    for (int64_t i = row0; i < row1; ++i) {
      uint16_t* out = packed + (i - row0) * kp;
      if (i >= m) {
        std::memset(out, 0, kp * sizeof(uint16_t));
        continue;
      }
      const float* row = a.data + i * a.ld;
      for (int64_t j = 0; j < kp; j += 16) {
        const __mmask16 mask = j < k ? FirstLanes(k - j) : __mmask16(0);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j),
                            Bf16Of(_mm512_maskz_loadu_ps(mask, row + j)));
      }
    }
    return;
  }
  // op(A) = A^T, A stored [k, m]: 16 rows of op(A) by 32 inputs at a time.
  // Vector q pairs inputs 2q and 2q + 1 of the 16 rows; transposed, vector
  // r is row r's 32 inputs, one 64-byte store.
  // The inputs outermost: the rows' values of one input are neighbours in
  // memory, read while their page is in the TLB.
  for (int64_t j = 0; j < kp; j += kTileInputs) {
    for (int64_t i0 = row0; i0 < row1; i0 += 16) {
      const __mmask16 mask = i0 < m ? FirstLanes(m - i0) : __mmask16(0);
      auto input = [&](int64_t jj) {
        return jj < k ? _mm512_maskz_loadu_ps(mask, a.data + jj * a.ld + i0)
                      : _mm512_setzero_ps();
      };
      __m512i v[16];
      for (int q = 0; q < 16; ++q) v[q] = Bf16Pairs(input(j + 2 * q), input(j + 2 * q + 1));
      Transpose16(v);
      for (int r = 0; r < 16; ++r) _mm512_storeu_si512(packed + (i0 - row0 + r) * kp + j, v[r]);
    }
  }
}

// Panels [panel0, panel1) of op(B) into the packed B (columns past n and
// inputs past k are zeros).
void PackB(const GemmOperand& b, int64_t n, int64_t k, int64_t kp, int64_t panel0,
           int64_t panel1, uint16_t* packed) {
  const int64_t pairs = kp / 2;
  if (!b.trans) {
    // B stored [k, n]: rows 2r and 2r + 1 give one 64-byte row of a panel.
    for (int64_t p = panel0; p < panel1; ++p) {
      const int64_t col = p * 16;
      const __mmask16 mask = col < n ? FirstLanes(n - col) : __mmask16(0);
      auto input = [&](int64_t j) {
        return j < k ? _mm512_maskz_loadu_ps(mask, b.data + j * b.ld + col) : _mm512_setzero_ps();
      };
      uint16_t* out = packed + p * pairs * 32;
      for (int64_t r = 0; r < pairs; ++r) {
        _mm512_storeu_si512(out + r * 32, Bf16Pairs(input(2 * r), input(2 * r + 1)));
      }
    }
    return;
  }
  // op(B) = B^T, B stored [n, k]: column c of op(B) is row c of B, whose
  // consecutive pairs are already the 32-bit units of a panel's rows. 16
  // columns by 32 inputs at a time: vector c is column c's 16 pairs;
  // transposed, vector u is pair u's 16 columns, one 64-byte row.
  for (int64_t p = panel0; p < panel1; ++p) {
    uint16_t* out = packed + p * pairs * 32;
    for (int64_t j = 0; j < kp; j += kTileInputs) {
      __m512i v[16];
      for (int c = 0; c < 16; ++c) {
        const int64_t col = p * 16 + c;
        __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
        if (col < n && j < k) {
          const float* row = b.data + col * b.ld + j;
          lo = _mm512_maskz_loadu_ps(FirstLanes(k - j), row);
          if (j + 16 < k) hi = _mm512_maskz_loadu_ps(FirstLanes(k - j - 16), row + 16);
        }
        v[c] = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);  // lo's 16 values first.
      }
      Transpose16(v);
      for (int u = 0; u < 16; ++u) _mm512_storeu_si512(out + (j / 2 + u) * 32, v[u]);
    }
  }
}

// The sums of C's block at rows row0.., panels 2 pair.. (32 x 32) over
// inputs [j0, j1) of the packed operands (`a` at row row0), added to
// `partial` (the sums of the inputs before j0; none when j0 == 0), left in
// tiles 0-3.
void BlockSums(const uint16_t* a, const uint16_t* b, int64_t kp, int64_t pair, int64_t j0,
               int64_t j1, const float* partial) {
  const int64_t pairs = kp / 2;
  const int64_t a_stride = kp * sizeof(uint16_t);
  const uint16_t* a0 = a;
  const uint16_t* a1 = a0 + kTileRows * kp;
  const uint16_t* b0 = b + 2 * pair * pairs * 32;
  const uint16_t* b1 = b0 + pairs * 32;
  // GCC's tileloadd carries no memory operand: the barriers keep the
  // packing's and the partial sums' stores ahead of the loads.
  __asm__ volatile("" ::: "memory");
  if (j0 == 0) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  } else {
    _tile_loadd(0, partial, kBlock * sizeof(float));
    _tile_loadd(1, partial + 16, kBlock * sizeof(float));
    _tile_loadd(2, partial + kTileRows * kBlock, kBlock * sizeof(float));
    _tile_loadd(3, partial + kTileRows * kBlock + 16, kBlock * sizeof(float));
  }
  for (int64_t j = j0; j < j1; j += kTileInputs) {
    __asm__ volatile("" ::: "memory");
    _tile_loadd(4, a0 + j, a_stride);
    _tile_loadd(5, a1 + j, a_stride);
    _tile_loadd(6, b0 + (j / 2) * 32, 64);
    _tile_loadd(7, b1 + (j / 2) * 32, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
}

// Tiles 0-3 (a 32 x 32 block of sums) into `sums`, rows 32 floats apart.
void StoreBlockSums(float* sums) {
  _tile_stored(0, sums, kBlock * sizeof(float));
  _tile_stored(1, sums + 16, kBlock * sizeof(float));
  _tile_stored(2, sums + kTileRows * kBlock, kBlock * sizeof(float));
  _tile_stored(3, sums + kTileRows * kBlock + 16, kBlock * sizeof(float));
  __asm__ volatile("" ::: "memory");
}

// The block's sums (32 x 32, as StoreBlockSums left them) written to C's
// rows row0.., columns from col0, with beta (beta == 0 ignores C's old
// values) and the epilogue.
void WriteBlock(const float* sums, int64_t row0, int64_t col0, int64_t m, int64_t n, float beta,
                const GemmEpilogue& epilogue, float* c, int64_t ldc) {
  const int64_t rows = std::min(kBlock, m - row0);
  const __m512 scale = _mm512_set1_ps(beta);
  for (int64_t r = 0; r < rows; ++r) {
    float* out = c + (row0 + r) * ldc + col0;
    for (int64_t h = 0; h < kBlock && col0 + h < n; h += 16) {
      const __mmask16 mask = FirstLanes(n - col0 - h);
      __m512 v = _mm512_load_ps(sums + r * kBlock + h);
      if (beta != 0.0f) v = _mm512_fmadd_ps(scale, _mm512_maskz_loadu_ps(mask, out + h), v);
      if (epilogue.bias != nullptr) {
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, epilogue.bias + col0 + h));
      }
      if (epilogue.relu) {  // x <= 0 (not NaN) to +0.
        v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LE_OQ),
                               _mm512_setzero_ps());
      }
      _mm512_mask_storeu_ps(out + h, mask, v);
    }
  }
}

// One pass over all of C for inputs [0, k) of the operands given.
void AmxPass(const GemmOperand& a, const GemmOperand& b, int64_t m, int64_t n, int64_t k,
             float beta, float* c, ThreadPool* pool, const GemmEpilogue& epilogue) {
  const int64_t kp = RoundUp(k, kTileInputs);
  const int64_t mp = RoundUp(m, kBlock);
  const int64_t np = RoundUp(n, kBlock);
  // B packed once, shared by the threads; kept between calls (training
  // repeats its shapes). Both packed operands start on a cache line, so
  // that each 64-byte row of a tile is one line (core/cache_aligned_vector.h).
  static thread_local CacheAlignedVector<uint16_t> packed_b_buffer;
  packed_b_buffer.resize(np * kp);
  uint16_t* packed_b = packed_b_buffer.data();
  pool->ParallelFor(np / 16, 1, [&](int64_t first, int64_t last) {
    PackB(b, n, k, kp, first, last, packed_b);
  });
  // Each thread packs a group of rows of A at a time and passes every
  // column block of B over it.
  // At most what L2 holds, and small enough that every thread gets about
  // two groups (a weight's gradient has only d_model rows).
  const int64_t threads = pool->num_threads();
  const int64_t balanced = RoundUp((m + 2 * threads - 1) / (2 * threads), kBlock);
  const int64_t group_rows = std::clamp<int64_t>(
      std::min(balanced, kRowGroupBytes / (kp * int64_t{sizeof(uint16_t)}) / kBlock * kBlock),
      kBlock, kMaxRowGroup);
  const int64_t groups = (m + group_rows - 1) / group_rows;
  const int64_t chunk_pairs =
      std::max<int64_t>(1, kColumnChunkBytes / (kBlock * kp * int64_t{sizeof(uint16_t)}));
  pool->ParallelFor(groups, 1, [&](int64_t first, int64_t last) {
    // The executing thread's own (a thread_local named in the lambda).
    static thread_local CacheAlignedVector<uint16_t> packed_a_buffer;
    packed_a_buffer.resize(group_rows * kp);
    uint16_t* packed_a = packed_a_buffer.data();
    static thread_local CacheAlignedVector<float> partial_buffer;
    partial_buffer.resize(chunk_pairs * kBlock * kBlock);
    float* partial = partial_buffer.data();
    ConfigureFullAmxTiles();
    for (int64_t g = first; g < last; ++g) {
      const int64_t row0 = g * group_rows;
      const int64_t row1 = std::min(row0 + group_rows, mp);
      PackA(a, m, k, kp, row0, row1, packed_a);
      for (int64_t pair0 = 0; pair0 < np / kBlock; pair0 += chunk_pairs) {
        const int64_t pair1 = std::min(np / kBlock, pair0 + chunk_pairs);
        for (int64_t r = row0; r < row1; r += kBlock) {
          const uint16_t* a_rows = packed_a + (r - row0) * kp;
          // A slice of the block's rows' inputs stays in L1 while the
          // chunk's column blocks pass over it; the sums of the slices
          // before are kept in `partial`, a block each.
          for (int64_t j0 = 0; j0 < kp; j0 += kSliceInputs) {
            const int64_t j1 = std::min(kp, j0 + kSliceInputs);
            for (int64_t pair = pair0; pair < pair1; ++pair) {
              float* sums = partial + (pair - pair0) * kBlock * kBlock;
              BlockSums(a_rows, packed_b, kp, pair, j0, j1, sums);
              StoreBlockSums(sums);
              if (j1 == kp) WriteBlock(sums, r, pair * kBlock, m, n, beta, epilogue, c, n);
            }
          }
        }
      }
    }
    _tile_release();
  });
}

}  // namespace

void GemmBf16AmxPackedWeight(const float* x, int64_t m, const uint16_t* packed, int64_t n,
                             int64_t k, float* y, ThreadPool* pool, const GemmEpilogue& epilogue) {
  const int64_t kp = RoundUp(k, kTileInputs);
  const int64_t blocks = RoundUp(n, kBlock) / kBlock;
  // A group of rows (a decoding step has beam x sentences of them) packed
  // once and shared; the threads split the output columns, so each reads
  // its own part of the weight once while every row passes over it: a
  // step's products read far more weight than activations.
  static thread_local CacheAlignedVector<uint16_t> packed_x_buffer;
  for (int64_t row0 = 0; row0 < m; row0 += kMaxRowGroup) {
    const int64_t rows = std::min(kMaxRowGroup, m - row0);
    const int64_t mp = RoundUp(rows, kBlock);
    packed_x_buffer.resize(mp * kp);
    uint16_t* packed_x = packed_x_buffer.data();
    const GemmOperand a{x + row0 * k, k, false};
    pool->ParallelFor(mp / kTileRows, 1, [&](int64_t first, int64_t last) {
      PackA(a, rows, k, kp, first * kTileRows, last * kTileRows, packed_x + first * kTileRows * kp);
    });
    float* c = y + row0 * n;
    pool->ParallelFor(blocks, 1, [&](int64_t first, int64_t last) {
      alignas(64) float sums[kBlock * kBlock];
      ConfigureFullAmxTiles();
      for (int64_t pair = first; pair < last; ++pair) {
        for (int64_t r = 0; r < mp; r += kBlock) {
          // All of a row's inputs in one run of the tiles: the same order
          // of sums for the row whatever the rows beside it.
          BlockSums(packed_x + r * kp, packed, kp, pair, 0, kp, nullptr);
          StoreBlockSums(sums);
          WriteBlock(sums, r, pair * kBlock, rows, n, 0.0f, epilogue, c, n);
        }
      }
      _tile_release();
    });
  }
}

void GemmBf16Amx(const GemmOperand& a, const GemmOperand& b, int64_t m, int64_t n, int64_t k,
                 float beta, float* c, ThreadPool* pool, const GemmEpilogue& epilogue) {
  // Deep products (a weight's gradient sums over every row of the batch)
  // run as passes of kPassInputs inputs each, C carrying the sums between
  // them, so that a row group of A and a column chunk of B stay within the
  // core's caches whatever the depth.
  for (int64_t k0 = 0; k0 < k; k0 += kPassInputs) {
    const int64_t depth = std::min(kPassInputs, k - k0);
    const GemmOperand a_part{a.data + (a.trans ? k0 * a.ld : k0), a.ld, a.trans};
    const GemmOperand b_part{b.data + (b.trans ? k0 : k0 * b.ld), b.ld, b.trans};
    const bool last = k0 + depth == k;
    AmxPass(a_part, b_part, m, n, depth, k0 == 0 ? beta : 1.0f, c, pool,
            last ? epilogue : GemmEpilogue{});
  }
}

}  // namespace tfm
#pragma GCC diagnostic pop
#pragma GCC pop_options

// bf16 and f16 attention forward on tensor cores (FlashAttention-2): mma.sync
// m16n8k16 with fp32 accumulation through inline PTX, operands loaded from
// shared memory with ldmatrix, K and V tiles double-buffered with cp.async.
//
// Tiles: a block of 4 warps owns kBlockM = 4 * 16 * kMTiles query rows of
// one head, each warp 16 * kMTiles rows, and walks the keys 64 at a time.
// kMTiles = 2 (128-row blocks) for head sizes 32 and 64: each K and V
// fragment loaded from shared memory then feeds two MMAs, which halves the
// shared-memory traffic per MMA (it, not the tensor cores, limits a
// 16-row warp). Head size 128 keeps kMTiles = 1 so that the O accumulators
// (64 floats) and the scores (32) fit the register file without spills, and
// so do problems of at most 64 queries.
// Shared memory: Q [kBlockM][d] + 2 x (K, V) [64][d] 16-bit and each warp's
// dropout keep bits, 40.5 KiB at d = 64 with 64-row blocks, 49 KiB with 128
// (persistent blocks: a second Q tile).
// Fragment layouts and the swizzle: attention_cuda_mma.cuh.
#include <algorithm>

#include "ops/attention/attention_cuda_mma.cuh"

namespace tfm {
namespace attention_cuda {
namespace {

constexpr int kWarps = kMmaWarps;
constexpr int kThreads = kMmaThreads;
constexpr int kBlockN = 64;

template <int kHeadDim, int kMTiles>
struct Tiles {
  static constexpr int kBlockM = 16 * kMTiles * kWarps;
  static constexpr int kKSteps = kHeadDim / 16;
  static constexpr int kScoreTiles = kBlockN / 8;
  static constexpr int kOutTiles = kHeadDim / 8;
  // Persistent blocks (below) keep two Q tiles.
  // A warp's dropout keep bits for a key tile: 16 kMTiles rows of 64 keys.
  static constexpr int kKeepWords = 16 * kMTiles * kBlockN / 32;
  static constexpr size_t SmemBytes(bool persistent) {
    return sizeof(bf16) * ((persistent ? 2 : 1) * kBlockM + 4 * kBlockN) * kHeadDim +
           sizeof(uint32_t) * kWarps * kKeepWords;
  }
};

// The forward of one block, or with kPersistent of a persistent block: the
// grid is what the GPU holds at once (MultiprocessorCount() x kMinBlocks)
// and each block walks the items (heads) blockIdx.x, + gridDim.x, ...,
// loading the next item's Q, K and V into its second buffers while it
// computes this one, so that a short problem's loads no longer wait alone
// (TFM_ATTENTION_SHORT_OCCUPANCY=2; only for problems of one query tile and
// one key tile: q_len and k_len at most 64, where the second K and V
// buffers are otherwise idle).
template <typename E, int kHeadDim, int kMTiles, int kMinBlocks, bool kPersistent>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    ForwardMmaKernel(AttentionCudaProblem p, const E* q, const E* k, const E* v, E* out, float* lse,
                     bool shared_dropout) {
  using T = Tiles<kHeadDim, kMTiles>;
  static_assert(!kPersistent || kMTiles == 1, "persistent blocks take one 64-row query tile");
  extern __shared__ __align__(128) unsigned char smem[];
  E* const s_q_buffers = reinterpret_cast<E*>(smem);  // [kPersistent ? 2 : 1][kBlockM][kHeadDim]
  E* const s_k = s_q_buffers + (kPersistent ? 2 : 1) * T::kBlockM * kHeadDim;  // [2][kBlockN][d]
  E* const s_v = s_k + 2 * kBlockN * kHeadDim;  // [2][kBlockN][kHeadDim]
  // Dropout's keep bits of this warp's rows for the key tile: [row][2 words]
  // (WarpKeepMasks).
  uint32_t* const s_keep = reinterpret_cast<uint32_t*>(s_v + 2 * kBlockN * kHeadDim) +
                           (threadIdx.x / 32) * T::kKeepWords;

  // The longest (causal: last) query tiles first, so that short ones fill
  // the tail of the grid.
  const int64_t heads_total = p.batch * p.heads;
  const int64_t q_tiles = (p.q_len + T::kBlockM - 1) / T::kBlockM;
  const int64_t items = heads_total * q_tiles;
  // Rows of q, of out, and of k and v, lie this far apart.
  const int64_t q_stride = RowStride(p.interleaved_queries, QuerySlots(p), kHeadDim);
  const int64_t out_stride = RowStride(p.interleaved_queries, p.heads, kHeadDim);
  const int64_t k_stride = RowStride(p.interleaved_keys, KeySlots(p), kHeadDim);
  // Starts loading item `item`'s Q tile and its first K and V tiles into
  // buffer `parity`. Keys no row of the block sees load as zeros: a decoding
  // cache holds garbage past its length, and a masked P of 0 times a NaN or
  // infinite value would still be NaN in the MMA.
  const auto load_item = [&](int64_t item, int parity) {
    const int64_t item_bh = item % heads_total;
    const int64_t item_q0 = (q_tiles - 1 - item / heads_total) * T::kBlockM;
    const int64_t item_key_end =
        RowKeyEnd(p, KeyEnd(p, item_bh / p.heads), MinI64(item_q0 + T::kBlockM, p.q_len) - 1);
    const int64_t item_loaded_keys = MinI64(p.k_len, item_key_end);
    LoadTileAsync<kHeadDim, T::kBlockM>(
        q + HeadOffset(p, p.interleaved_queries, QuerySlots(p), item_bh, p.q_len, kHeadDim),
        q_stride, item_q0,
        p.q_len - item_q0, s_q_buffers + (kPersistent ? parity : 0) * T::kBlockM * kHeadDim);
    LoadTileAsync<kHeadDim, kBlockN>(
        k + HeadOffset(p, p.interleaved_keys, KeySlots(p), item_bh, p.k_len, kHeadDim), k_stride, 0,
        item_loaded_keys, s_k + parity * kBlockN * kHeadDim);
    LoadTileAsync<kHeadDim, kBlockN>(
        v + HeadOffset(p, p.interleaved_keys, KeySlots(p), item_bh, p.k_len, kHeadDim), k_stride, 0,
        item_loaded_keys, s_v + parity * kBlockN * kHeadDim);
    CpAsyncCommit();
  };
  // One item (a query tile of a head); `parity`: the buffer that holds its
  // first tiles (a persistent block's items alternate).
  const auto run_item = [&](int64_t item, int parity) {
    E* const s_q = s_q_buffers + (kPersistent ? parity : 0) * T::kBlockM * kHeadDim;
    const int64_t bh = item % heads_total;
    const int64_t b = bh / p.heads;
    const int64_t q0 = (q_tiles - 1 - item / heads_total) * T::kBlockM;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int warp_row0 = warp * 16 * kMTiles;  // Within the block.
    const bool warp_has_rows = q0 + warp_row0 < p.q_len;

    const int64_t key_end = KeyEnd(p, b);
    const int64_t tile_key_end = RowKeyEnd(p, key_end, MinI64(q0 + T::kBlockM, p.q_len) - 1);
    const float* bias = KeyBias(p, b);
    // Keys below this are visible to every row of the block: their tiles need
    // no mask.
    const int64_t unmasked_end = bias != nullptr ? 0 : RowKeyEnd(p, key_end, q0);
    // A persistent block always runs its item's one key tile (all keys
    // masked where none is visible: zeros and lse -inf, as when skipped), so
    // that it waits for the item's loads and starts the next item's.
    const int key_tiles =
        kPersistent ? 1 : static_cast<int>((tile_key_end + kBlockN - 1) / kBlockN);

    const int64_t q_offset =
        HeadOffset(p, p.interleaved_queries, QuerySlots(p), bh, p.q_len, kHeadDim);
    const int64_t out_offset = HeadOffset(p, p.interleaved_queries, p.heads, bh, p.q_len, kHeadDim);
    const E* k_head = k + HeadOffset(p, p.interleaved_keys, KeySlots(p), bh, p.k_len, kHeadDim);
    const E* v_head = v + HeadOffset(p, p.interleaved_keys, KeySlots(p), bh, p.k_len, kHeadDim);
    const int64_t loaded_keys = MinI64(p.k_len, tile_key_end);
    if constexpr (kPersistent) {
      // The items after a block's first were loaded during the item before.
      if (item == blockIdx.x) load_item(item, parity);
    } else if (key_tiles > 0) {
      LoadTileAsync<kHeadDim, T::kBlockM>(q + q_offset, q_stride, q0, p.q_len - q0, s_q);
      LoadTileAsync<kHeadDim, kBlockN>(k_head, k_stride, 0, loaded_keys, s_k);
      LoadTileAsync<kHeadDim, kBlockN>(v_head, k_stride, 0, loaded_keys, s_v);
      CpAsyncCommit();
    }

    float o[kMTiles][T::kOutTiles][4];
    float row_max[kMTiles][2];  // Of the unscaled scores (scale > 0).
    float row_sum[kMTiles][2];  // This thread's share; the quad's sum at the end.
    uint32_t q_frag[kMTiles][T::kKSteps][4];
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int dt = 0; dt < T::kOutTiles; ++dt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) o[mt][dt][e] = 0.0f;
      }
      row_max[mt][0] = row_max[mt][1] = kNegInf;
      row_sum[mt][0] = row_sum[mt][1] = 0.0f;
    }
    const float scale_log2 = p.scale * kLog2e;

    for (int j = 0; j < key_tiles; ++j) {
      const int64_t c0 = static_cast<int64_t>(j) * kBlockN;
      const int buffer = (j + parity) & 1;
      if (j + 1 < key_tiles) {  // Fetch the next tiles while this one computes.
        const int64_t next = c0 + kBlockN;
        LoadTileAsync<kHeadDim, kBlockN>(k_head, k_stride, next, loaded_keys - next,
                                         s_k + (buffer ^ 1) * kBlockN * kHeadDim);
        LoadTileAsync<kHeadDim, kBlockN>(v_head, k_stride, next, loaded_keys - next,
                                         s_v + (buffer ^ 1) * kBlockN * kHeadDim);
        CpAsyncCommit();
        CpAsyncWait<1>();
      } else if (kPersistent && item + gridDim.x < items) {
        // The next item's tiles into the other buffers (free: the last reads
        // of them were before the previous item's closing barrier).
        load_item(item + gridDim.x, parity ^ 1);
        CpAsyncWait<1>();
      } else {
        CpAsyncWait<0>();
      }
      __syncthreads();
      const E* k_tile = s_k + buffer * kBlockN * kHeadDim;
      const E* v_tile = s_v + buffer * kBlockN * kHeadDim;
      // A warp whose rows all lie past q_len (a block's last warps on short
      // sentences: 48 queries leave the fourth of four with none) computes
      // nothing: it keeps its block's loads and barriers only.
      if (warp_has_rows) {
        if (j == 0) {
#pragma unroll
          for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
            for (int ks = 0; ks < T::kKSteps; ++ks) {
              const int row = warp_row0 + mt * 16 + lane % 16;
              LdMatrixX4(q_frag[mt][ks],
                         SmemAddress(s_q + SwizzledOffset<kHeadDim>(row, ks * 2 + lane / 16)));
            }
          }
        }

        // S = Q K^T; ldmatrix x4 gives b0, b1 of two 8-key tiles.
        float s[kMTiles][T::kScoreTiles][4];
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
          for (int nt = 0; nt < T::kScoreTiles; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.0f;
          }
        }
#pragma unroll
        for (int ks = 0; ks < T::kKSteps; ++ks) {
#pragma unroll
          for (int np = 0; np < T::kScoreTiles / 2; ++np) {
            uint32_t frag[4];
            const int key = np * 16 + lane % 8 + (lane / 16) * 8;
            LdMatrixX4(frag, SmemAddress(k_tile + SwizzledOffset<kHeadDim>(
                                                      key, ks * 2 + (lane / 8) % 2)));
#pragma unroll
            for (int mt = 0; mt < kMTiles; ++mt) {
              Mma<E>(s[mt][2 * np], q_frag[mt][ks], frag[0], frag[1]);
              Mma<E>(s[mt][2 * np + 1], q_frag[mt][ks], frag[2], frag[3]);
            }
          }
        }

        if (p.dropout > 0.0f && shared_dropout) {
          WarpKeepMasks<16 * kMTiles, kBlockN>(p, (bh * p.q_len + q0 + warp_row0) * p.k_len + c0,
                                               lane, s_keep);
        }

        // Online softmax on the rows g and g + 8 of each m-tile; the four
        // threads of a quad hold one row between them.
        const bool masked = c0 + kBlockN > unmasked_end;
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int64_t row = q0 + warp_row0 + mt * 16 + g + half * 8;
            const int64_t row_end = masked ? RowKeyEnd(p, key_end, row) : 0;
            float max = row_max[mt][half];
#pragma unroll
            for (int nt = 0; nt < T::kScoreTiles; ++nt) {
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                float& x = s[mt][nt][half * 2 + e];
                if (masked) {
                  const int64_t key = c0 + nt * 8 + 2 * t + e;
                  if (key >= row_end) {
                    x = kNegInf;
                  } else if (bias != nullptr) {
                    x += bias[key];  // 0 or -inf.
                  }
                }
                max = fmaxf(max, x);
              }
            }
            max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, 1));
            max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, 2));
            // exp(scale (x - max)) = 2^(x scale log2(e) - shift) in one FFMA.
            // A row with nothing visible so far keeps zeros: 2^(-inf - 0).
            const float shift = max == kNegInf ? 0.0f : max * scale_log2;
            const float correction = FastExp2(row_max[mt][half] * scale_log2 - shift);
            row_max[mt][half] = max;
            float sum = 0.0f;
#pragma unroll
            for (int nt = 0; nt < T::kScoreTiles; ++nt) {
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                float& x = s[mt][nt][half * 2 + e];
                x = FastExp2(fmaf(x, scale_log2, -shift));
                sum += x;
              }
            }
            row_sum[mt][half] = row_sum[mt][half] * correction + sum;
#pragma unroll
            for (int dt = 0; dt < T::kOutTiles; ++dt) {
              o[mt][dt][half * 2] *= correction;
              o[mt][dt][half * 2 + 1] *= correction;
            }
            if (p.dropout > 0.0f) {  // After the sum: l is undropped.
              uint32_t kept = 0;
              if (shared_dropout) {
                // Bit nt * 2 + e: key nt * 8 + 2t + e of the tile (words of 32).
                const uint32_t* row_words = s_keep + (mt * 16 + g + half * 8) * 2;
#pragma unroll
                for (int i = 0; i < T::kScoreTiles * 2; ++i) {
                  const int key = (i / 2) * 8 + 2 * t + i % 2;
                  kept |= ((row_words[key / 32] >> (key % 32)) & 1u) << i;
                }
              } else {
                const uint64_t first = (bh * p.q_len + row) * p.k_len + c0 + 2 * t;
                kept = DropoutKeptBits<T::kScoreTiles * 2, /*kShareBlocks=*/true>(
                    p, [&](int i) { return first + (i / 2) * 8 + i % 2; });
              }
              const float keep_scale = 1.0f / (1.0f - p.dropout);
#pragma unroll
              for (int nt = 0; nt < T::kScoreTiles; ++nt) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                  s[mt][nt][half * 2 + e] *= (kept >> (nt * 2 + e)) & 1 ? keep_scale : 0.0f;
                }
              }
            }
          }
        }

        // O += P V, P from the score registers, V^T fragments by ldmatrix.trans.
#pragma unroll
        for (int kk = 0; kk < kBlockN / 16; ++kk) {
          uint32_t a[kMTiles][4];
#pragma unroll
          for (int mt = 0; mt < kMTiles; ++mt) {
            a[mt][0] = Pack<E>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
            a[mt][1] = Pack<E>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
            a[mt][2] = Pack<E>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
            a[mt][3] = Pack<E>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
          }
#pragma unroll
          for (int dp = 0; dp < T::kOutTiles / 2; ++dp) {
            uint32_t frag[4];
            const int key = kk * 16 + lane % 8 + ((lane / 8) % 2) * 8;
            LdMatrixX4Trans(frag, SmemAddress(v_tile + SwizzledOffset<kHeadDim>(
                                                           key, dp * 2 + lane / 16)));
#pragma unroll
            for (int mt = 0; mt < kMTiles; ++mt) {
              Mma<E>(o[mt][2 * dp], a[mt], frag[0], frag[1]);
              Mma<E>(o[mt][2 * dp + 1], a[mt], frag[2], frag[3]);
            }
          }
        }
      }
      __syncthreads();  // All warps are done with this buffer before it refills.
    }

#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float sum = row_sum[mt][half];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const int64_t row = q0 + warp_row0 + mt * 16 + g + half * 8;
        if (row >= p.q_len) continue;
        const float inverse = sum > 0.0f ? 1.0f / sum : 0.0f;
        E* out_row = out + out_offset + row * out_stride;
#pragma unroll
        for (int dt = 0; dt < T::kOutTiles; ++dt) {
          *reinterpret_cast<uint32_t*>(out_row + dt * 8 + 2 * t) =
              Pack<E>(o[mt][dt][half * 2] * inverse, o[mt][dt][half * 2 + 1] * inverse);
        }
        if (t == 0) {
          lse[bh * p.q_len + row] = sum > 0.0f ? row_max[mt][half] * p.scale + logf(sum) : kNegInf;
        }
      }
    }
  };
  ForBlockItems<kPersistent>(items, run_item);
}

// kMinBlocks: blocks a multiprocessor must hold at once (a register cap;
// ShortProblemMode), 0 for none (not 1: a minimum of 1 changes ptxas's
// register allocation, 150 -> 176 at head size 64); kPersistent: that many blocks per
// multiprocessor walk the items (ForwardMmaKernel).
template <typename E, int kHeadDim, int kMTiles, int kMinBlocks = 0, bool kPersistent = false>
const char* LaunchForwardMma(const AttentionCudaProblem& p, const void* q, const void* k,
                             const void* v, void* out, float* lse, cudaStream_t stream) {
  using T = Tiles<kHeadDim, kMTiles>;
  int64_t blocks = p.batch * p.heads * ((p.q_len + T::kBlockM - 1) / T::kBlockM);
  if (blocks == 0) return nullptr;
  if constexpr (kPersistent) {
    blocks = std::min<int64_t>(blocks, static_cast<int64_t>(MultiprocessorCount()) * kMinBlocks);
  }
  if (blocks > 0x7fffffff) return "too many query tiles for one launch";
  constexpr auto kernel = ForwardMmaKernel<E, kHeadDim, kMTiles, kMinBlocks, kPersistent>;
  constexpr size_t kSmemBytes = T::SmemBytes(kPersistent);
  if (const char* error = AllowDynamicSmem<kernel>(kSmemBytes)) return error;
  kernel<<<static_cast<unsigned>(blocks), kThreads, kSmemBytes, stream>>>(
      p, static_cast<const E*>(q), static_cast<const E*>(k), static_cast<const E*>(v),
      static_cast<E*>(out), lse, SharedDropoutMasks());
  return LastLaunchError();
}

template <typename E>
const char* ForwardMmaTyped(const AttentionCudaProblem& p, const void* q, const void* k,
                            const void* v, void* out, float* lse, cudaStream_t stream) {
  // Up to 64 queries (short sentences, decoding steps), 128-row blocks would
  // idle half their warps.
  const bool short_queries = p.q_len <= 64;
  switch (p.d_k) {
    case 32:
      return short_queries ? LaunchForwardMma<E, 32, 1>(p, q, k, v, out, lse, stream)
                           : LaunchForwardMma<E, 32, 2>(p, q, k, v, out, lse, stream);
    case 64:
      if (!short_queries) return LaunchForwardMma<E, 64, 2>(p, q, k, v, out, lse, stream);
      if (p.k_len > kBlockN) return LaunchForwardMma<E, 64, 1>(p, q, k, v, out, lse, stream);
      switch (ShortProblemMode()) {
        case ShortProblems::kUncapped:
          return LaunchForwardMma<E, 64, 1>(p, q, k, v, out, lse, stream);
        case ShortProblems::kCapped:
          return LaunchForwardMma<E, 64, 1, 4>(p, q, k, v, out, lse, stream);
        case ShortProblems::kPersistent:
          return LaunchForwardMma<E, 64, 1, 4, true>(p, q, k, v, out, lse, stream);
      }
      return "unknown TFM_ATTENTION_SHORT_OCCUPANCY mode";
    case 128:
      return LaunchForwardMma<E, 128, 1>(p, q, k, v, out, lse, stream);
  }
  return "the tensor-core attention kernels take head sizes 32, 64 and 128";
}

}  // namespace

const char* ForwardMma(const AttentionCudaProblem& p, const void* q, const void* k, const void* v,
                       void* out, float* lse, cudaStream_t stream) {
  return p.f16 ? ForwardMmaTyped<f16>(p, q, k, v, out, lse, stream)
               : ForwardMmaTyped<bf16>(p, q, k, v, out, lse, stream);
}

}  // namespace attention_cuda
}  // namespace tfm

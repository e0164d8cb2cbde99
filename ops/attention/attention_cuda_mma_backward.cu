// bf16 and f16 attention backward on tensor cores (FlashAttention-2).
//
// A block of 4 warps owns 64 keys of one head (16 per warp) and walks the
// query tiles (64 rows) that see them. Each warp works on the transposed
// scores of its keys, so that P^T and dS^T, computed in registers as MMA
// accumulators, are directly the A operands of its own dV and dK products:
//   S^T  = K Q^T,    P^T = exp(scale S^T - lse)          (masked: 0)
//   dP^T = V dO^T,   dS^T = P^T o (dP^T o M - delta)     (M: dropout)
//   dV  += (P^T o M) dO,   dK += scale dS^T Q             (registers)
//   dQ  += scale dS K                       (fp32 atomics, or a slab per block)
// dQ sums over all key blocks, so it goes through shared memory (dS^T,
// 16-bit) to warps split by query rows, and is added with fp32 atomics into
// a zeroed f32 buffer that the caller converts to 16 bits afterwards (in
// deterministic mode stored in the block's own slab, which the caller sums
// in key-block order).
// Where a head's keys fit one block (p.dq_direct), the block's dQ is the
// whole dQ: stored in 16 bits at once, rows no query step reaches zeroed.
// delta_i = dO_i . O_i comes from a pre-kernel. Query steps are 64 rows (32
// at head size 128), Q and dO double-buffered with cp.async. Shared memory:
// K, V [64][d], 2 x (Q, dO) [64][d] and dS^T [64][64] 16-bit, with the
// shared dropout keep bits 57.5 KiB at d = 64.
#include <algorithm>

#include "ops/attention/attention_cuda_mma.cuh"

namespace tfm {
namespace attention_cuda {
namespace {

constexpr int kBlockN = 16 * kMmaWarps;  // Keys per block.

template <int kHeadDim>
struct BackwardTiles {
  // Queries per step: 32 at head size 128 keeps the scores (2 x 16 floats)
  // beside the dK and dV accumulators (2 x 64) without spilling.
  static constexpr int kBlockM = kHeadDim <= 64 ? 64 : 32;
  static constexpr int kQueryTiles = kBlockM / 8;
  // dQ: the 16-row m-tiles of a query step, the warps that share one (each
  // taking kDqTiles of the head's 8-wide column tiles).
  static constexpr int kDqMTiles = kBlockM / 16;
  static constexpr int kWarpsPerDqMTile = kMmaWarps / kDqMTiles;
  static constexpr int kDqTiles = kHeadDim / 8 / kWarpsPerDqMTile;
  static constexpr int kKSteps = kHeadDim / 16;
  static constexpr int kOutTiles = kHeadDim / 8;
  // Persistent blocks (below) keep two K and V tiles.
  static constexpr size_t SmemBytes(bool persistent) {
    return sizeof(bf16) *
               (((persistent ? 4 : 2) * kBlockN + 4 * kBlockM) * kHeadDim + kBlockN * kBlockM) +
           sizeof(float) * 2 * kBlockM + sizeof(uint32_t) * kMmaWarps * kBlockM;
  }
};

// The backward of one block, or with kPersistent of a persistent block: the
// grid is what the GPU holds at once (MultiprocessorCount() x kMinBlocks)
// and each block walks the items (heads) blockIdx.x, + gridDim.x, ...,
// loading the next item's K, V, Q and dO into its second buffers while it
// computes this one (TFM_ATTENTION_SHORT_OCCUPANCY=2; only for problems of
// one key block and one query step: q_len and k_len at most 64).
template <typename E, int kHeadDim, int kMinBlocks, bool kPersistent>
__global__ void __launch_bounds__(kMmaThreads, kMinBlocks)
    BackwardMmaKernel(AttentionCudaProblem p, const E* q, const E* k, const E* v, const float* lse,
                      const float* delta, const E* d_out, float* dq_accum, E* dk, E* dv,
                      bool shared_dropout) {
  using T = BackwardTiles<kHeadDim>;
  constexpr int kBlockM = T::kBlockM, kQueryTiles = T::kQueryTiles;
  extern __shared__ __align__(128) unsigned char smem[];
  // K and V: [kPersistent ? 2 : 1][kBlockN][kHeadDim] each.
  E* const s_k_buffers = reinterpret_cast<E*>(smem);
  E* const s_v_buffers = s_k_buffers + (kPersistent ? 2 : 1) * kBlockN * kHeadDim;
  // Q and dO: two buffers each, the next query step's (persistent: the next
  // item's) filling while this one computes.
  E* s_q_buffers = s_v_buffers + (kPersistent ? 2 : 1) * kBlockN * kHeadDim;
  E* s_do_buffers = s_q_buffers + 2 * kBlockM * kHeadDim;
  E* s_ds = s_do_buffers + 2 * kBlockM * kHeadDim;  // dS^T [kBlockN keys][kBlockM queries].
  // Per query: lse in log2 units, +inf where the row saw no key (so that
  // exp2(x - lse) = 0), and delta.
  float* s_lse = reinterpret_cast<float*>(s_ds + kBlockN * kBlockM);
  float* s_delta = s_lse + kBlockM;
  // Dropout's keep bits of each warp's 16 keys, a word per query of the
  // step (WarpKeepMasks).
  uint32_t* s_keep = reinterpret_cast<uint32_t*>(s_delta + kBlockM) + (threadIdx.x / 32) * kBlockM;

  const int64_t k_tiles = (p.k_len + kBlockN - 1) / kBlockN;
  const int64_t items = p.batch * p.heads * k_tiles;
  // Starts loading item `item`'s K and V into buffer `parity`, and its first
  // query step's Q and dO into Q/dO buffer `parity` (persistent blocks: one
  // key block and at most one query step an item). Keys at or past key_end
  // load as zeros, as in the forward: no row sees them, and a NaN or
  // infinite value there would make dP, and through 0 * NaN dS and dQ, NaN.
  const auto load_item = [&](int64_t item, int parity) {
    const int64_t item_bh = item / k_tiles;
    const int64_t item_c0 = (item % k_tiles) * kBlockN;
    const int64_t item_key_end = KeyEnd(p, item_bh / p.heads);
    const int64_t item_k_offset =
        HeadOffset(p, p.interleaved_keys, KeySlots(p), item_bh, p.k_len, kHeadDim);
    const int64_t item_q_offset =
        HeadOffset(p, p.interleaved_queries, QuerySlots(p), item_bh, p.q_len, kHeadDim);
    const int64_t item_do_offset =
        HeadOffset(p, p.interleaved_queries, p.heads, item_bh, p.q_len, kHeadDim);
    const int64_t k_stride = RowStride(p.interleaved_keys, KeySlots(p), kHeadDim);
    const int64_t q_stride = RowStride(p.interleaved_queries, QuerySlots(p), kHeadDim);
    const int64_t do_stride = RowStride(p.interleaved_queries, p.heads, kHeadDim);
    const int64_t item_loaded_keys = MinI64(p.k_len, item_key_end) - item_c0;
    LoadTileAsync<kHeadDim, kBlockN>(k + item_k_offset, k_stride, item_c0, item_loaded_keys,
                                     s_k_buffers + parity * kBlockN * kHeadDim);
    LoadTileAsync<kHeadDim, kBlockN>(v + item_k_offset, k_stride, item_c0, item_loaded_keys,
                                     s_v_buffers + parity * kBlockN * kHeadDim);
    const int64_t item_first_row = item_c0 < item_key_end ? FirstQueryRow(p, item_c0) : p.q_len;
    const int64_t item_first_q0 = item_first_row / kBlockM * kBlockM;
    if (item_first_q0 < p.q_len) {
      LoadTileAsync<kHeadDim, kBlockM>(q + item_q_offset, q_stride, item_first_q0,
                                       p.q_len - item_first_q0,
                                       s_q_buffers + parity * kBlockM * kHeadDim);
      LoadTileAsync<kHeadDim, kBlockM>(d_out + item_do_offset, do_stride, item_first_q0,
                                       p.q_len - item_first_q0,
                                       s_do_buffers + parity * kBlockM * kHeadDim);
    }
    CpAsyncCommit();
  };
  // One item (a key block of a head); `parity`: the K/V buffer, and the Q/dO
  // buffer of its first step, that hold its tiles (a persistent block's
  // items alternate).
  const auto run_item = [&](int64_t item, int parity) {
    E* const s_k = s_k_buffers + (kPersistent ? parity : 0) * kBlockN * kHeadDim;
    E* const s_v = s_v_buffers + (kPersistent ? parity : 0) * kBlockN * kHeadDim;
    const int64_t bh = item / k_tiles;
    const int64_t b = bh / p.heads;
    const int64_t key_block = item % k_tiles;
    const int64_t c0 = key_block * kBlockN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int warp_key0 = warp * 16;  // This warp's keys within the block.
    const int64_t key_end = KeyEnd(p, b);
    const bool warp_has_keys = c0 + warp_key0 < MinI64(p.k_len, key_end);
    const float* bias = KeyBias(p, b);
    const float scale_log2 = p.scale * kLog2e;
    // Rows of q and dq, of d_out, and of k, v and theirs, lie this far
    // apart.
    const int64_t q_stride = RowStride(p.interleaved_queries, QuerySlots(p), kHeadDim);
    const int64_t do_stride = RowStride(p.interleaved_queries, p.heads, kHeadDim);
    const int64_t k_stride = RowStride(p.interleaved_keys, KeySlots(p), kHeadDim);
    const int64_t q_offset =
        HeadOffset(p, p.interleaved_queries, QuerySlots(p), bh, p.q_len, kHeadDim);
    const int64_t k_offset = HeadOffset(p, p.interleaved_keys, KeySlots(p), bh, p.k_len, kHeadDim);
    const E* q_head = q + q_offset;
    const E* d_out_head =
        d_out + HeadOffset(p, p.interleaved_queries, p.heads, bh, p.q_len, kHeadDim);

    // Keys at or past key_end load as zeros, as in the forward: no row sees
    // them, and a NaN or infinite value there would make dP, and through
    // 0 * NaN dS and dQ, NaN.
    // Keys at or past key_end get zero gradients; so do keys no row sees.
    const int64_t first_row = c0 < key_end ? FirstQueryRow(p, c0) : p.q_len;
    const int64_t first_q0 = first_row / kBlockM * kBlockM;
    if constexpr (kPersistent) {
      // The items after a block's first were loaded during the item before.
      if (item == blockIdx.x) load_item(item, parity);
    } else {
      const int64_t loaded_keys = MinI64(p.k_len, key_end) - c0;
      LoadTileAsync<kHeadDim, kBlockN>(k + k_offset, k_stride, c0, loaded_keys, s_k);
      LoadTileAsync<kHeadDim, kBlockN>(v + k_offset, k_stride, c0, loaded_keys, s_v);
      if (first_q0 < p.q_len) {
        LoadTileAsync<kHeadDim, kBlockM>(q_head, q_stride, first_q0, p.q_len - first_q0,
                                         s_q_buffers);
        LoadTileAsync<kHeadDim, kBlockM>(d_out_head, do_stride, first_q0, p.q_len - first_q0,
                                         s_do_buffers);
      }
      CpAsyncCommit();
    }
    // Persistent: whether the next item's tiles are on their way.
    bool next_item_loading = false;
    E* const dq_direct = p.dq_direct != nullptr ? static_cast<E*>(p.dq_direct) + q_offset : nullptr;
    if (dq_direct != nullptr) {
      // Rows before the first query step see none of the keys (causal with
      // more queries than keys, or a sentence with no key): dQ 0.
      const int64_t unreached = MinI64(first_q0, p.q_len) * kHeadDim;
      for (int64_t i = threadIdx.x; i < unreached; i += kMmaThreads) {
        dq_direct[i / kHeadDim * q_stride + i % kHeadDim] = E(0.0f);
      }
    }

    float dk_acc[T::kOutTiles][4], dv_acc[T::kOutTiles][4];
#pragma unroll
    for (int dt = 0; dt < T::kOutTiles; ++dt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) dk_acc[dt][e] = dv_acc[dt][e] = 0.0f;
    }

    // Each step reads its Q and dO buffer, s_lse and s_delta only before the
    // barrier in its middle (ahead of dQ), and s_ds only after it: so once a
    // warp starts step i + 1, no warp reads step i's buffer (refilled now with
    // step i + 2's tiles) or s_lse; the barrier below guards s_ds.
    for (int64_t q0 = first_q0, step = 0; q0 < p.q_len; q0 += kBlockM, ++step) {
      const E* s_q = s_q_buffers + ((step + parity) & 1) * kBlockM * kHeadDim;
      const E* s_do = s_do_buffers + ((step + parity) & 1) * kBlockM * kHeadDim;
      const int64_t next = q0 + kBlockM;
      if (next < p.q_len) {
        // The buffer step + 1 reads (a persistent block has no second step
        // today, but the rule is the read's).
        const int64_t fill = ((step + 1 + parity) & 1) * kBlockM * kHeadDim;
        LoadTileAsync<kHeadDim, kBlockM>(q_head, q_stride, next, p.q_len - next,
                                         s_q_buffers + fill);
        LoadTileAsync<kHeadDim, kBlockM>(d_out_head, do_stride, next, p.q_len - next,
                                         s_do_buffers + fill);
        CpAsyncCommit();
      } else if (kPersistent && item + gridDim.x < items) {
        // The next item's tiles into the other buffers (free: the last reads
        // of them were before the previous item's closing barrier).
        load_item(item + gridDim.x, parity ^ 1);
        next_item_loading = true;
      }
      if (threadIdx.x < kBlockM) {
        const int64_t row = q0 + threadIdx.x;
        const float row_lse = row < p.q_len ? lse[bh * p.q_len + row] : kNegInf;
        s_lse[threadIdx.x] = row_lse == kNegInf ? -kNegInf : row_lse * kLog2e;
        s_delta[threadIdx.x] = row < p.q_len ? delta[bh * p.q_len + row] : 0.0f;
      }
      if (next < p.q_len || next_item_loading) {
        CpAsyncWait<1>();
      } else {
        CpAsyncWait<0>();
      }
      __syncthreads();  // This step's tiles are in; the last step's dQ is done with s_ds.

      // A warp whose 16 keys all lie at or past the head's key end (the
      // block's last warps on short sentences, or padding) has P = 0 and
      // dS = 0 there: it skips their products and writes its dS^T rows as
      // zeros (the same bits: its dK and dV stay the zeros they start as).
      // Not at head size 128 nor in persistent blocks: there the branch's
      // live ranges cost registers (ptxas spilled 76 and 42 bytes).
      constexpr bool kSkipsIdleWarps = kHeadDim <= 64 && !kPersistent;
      if (!kSkipsIdleWarps || warp_has_keys) {
        // S^T = K Q^T and dP^T = V dO^T for this warp's 16 keys.
        float s[kQueryTiles][4], dp[kQueryTiles][4];
#pragma unroll
        for (int nt = 0; nt < kQueryTiles; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) s[nt][e] = dp[nt][e] = 0.0f;
        }
#pragma unroll
        for (int ks = 0; ks < T::kKSteps; ++ks) {
          uint32_t k_frag[4], v_frag[4];
          const int a_offset = SwizzledOffset<kHeadDim>(warp_key0 + lane % 16, ks * 2 + lane / 16);
          LdMatrixX4(k_frag, SmemAddress(s_k + a_offset));
          LdMatrixX4(v_frag, SmemAddress(s_v + a_offset));
#pragma unroll
          for (int np = 0; np < kQueryTiles / 2; ++np) {
            const int b_offset = SwizzledOffset<kHeadDim>(np * 16 + lane % 8 + (lane / 16) * 8,
                                                          ks * 2 + (lane / 8) % 2);
            uint32_t frag[4];
            LdMatrixX4(frag, SmemAddress(s_q + b_offset));
            Mma<E>(s[2 * np], k_frag, frag[0], frag[1]);
            Mma<E>(s[2 * np + 1], k_frag, frag[2], frag[3]);
            LdMatrixX4(frag, SmemAddress(s_do + b_offset));
            Mma<E>(dp[2 * np], v_frag, frag[0], frag[1]);
            Mma<E>(dp[2 * np + 1], v_frag, frag[2], frag[3]);
          }
        }

        // Element (key, query) of the C fragments: keys g and g + 8, queries
        // 8 nt + 2t and + 1. s becomes P^T o M, dp becomes dS^T.
        const bool masked = c0 + kBlockN > RowKeyEnd(p, key_end, q0) || bias != nullptr;
        uint32_t kept = ~0u;
        float keep_scale = 1.0f;
        if (p.dropout > 0.0f && shared_dropout) {
          // Bit i: key g + (i % 4 / 2) * 8 of the warp's, query (i / 4) * 8 +
          // 2t + i % 2 of the step's.
          WarpKeepMasks<kBlockM, 16>(p, (bh * p.q_len + q0) * p.k_len + c0 + warp_key0, lane,
                                     s_keep);
          kept = 0;
#pragma unroll
          for (int i = 0; i < kQueryTiles * 4; ++i) {
            const uint32_t row = s_keep[(i / 4) * 8 + 2 * t + i % 2];
            kept |= ((row >> (g + (i % 4 / 2) * 8)) & 1u) << i;
          }
          keep_scale = 1.0f / (1.0f - p.dropout);
        } else if (p.dropout > 0.0f) {
          kept = DropoutKeptBits<kQueryTiles * 4, /*kShareBlocks=*/false>(p, [&](int i) {
            const int64_t key = c0 + warp_key0 + g + (i % 4 / 2) * 8;
            const int64_t query = q0 + (i / 4) * 8 + 2 * t + i % 2;
            return static_cast<uint64_t>((bh * p.q_len + query) * p.k_len + key);
          });
          keep_scale = 1.0f / (1.0f - p.dropout);
        }
#pragma unroll
        for (int nt = 0; nt < kQueryTiles; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key_local = warp_key0 + g + (e / 2) * 8;
            const int query_local = nt * 8 + 2 * t + e % 2;
            const int64_t key = c0 + key_local, query = q0 + query_local;
            float x = s[nt][e];
            if (masked) {
              if (key >= RowKeyEnd(p, key_end, query)) {
                x = kNegInf;
              } else if (bias != nullptr) {
                x += bias[key];  // 0 or -inf.
              }
            }
            const float prob = FastExp2(fmaf(x, scale_log2, -s_lse[query_local]));
            const float multiplier = (kept >> (nt * 4 + e)) & 1 ? keep_scale : 0.0f;
            s[nt][e] = prob * multiplier;
            dp[nt][e] = prob * (dp[nt][e] * multiplier - s_delta[query_local]);
          }
        }

        // dV += (P^T o M) dO and dK += dS^T Q (scaled at the end); the B
        // operands, [query][dim] in shared memory, load transposed.
#pragma unroll
        for (int kk = 0; kk < kBlockM / 16; ++kk) {
          uint32_t p_frag[4], ds_frag[4];
          p_frag[0] = Pack<E>(s[2 * kk][0], s[2 * kk][1]);
          p_frag[1] = Pack<E>(s[2 * kk][2], s[2 * kk][3]);
          p_frag[2] = Pack<E>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
          p_frag[3] = Pack<E>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
          ds_frag[0] = Pack<E>(dp[2 * kk][0], dp[2 * kk][1]);
          ds_frag[1] = Pack<E>(dp[2 * kk][2], dp[2 * kk][3]);
          ds_frag[2] = Pack<E>(dp[2 * kk + 1][0], dp[2 * kk + 1][1]);
          ds_frag[3] = Pack<E>(dp[2 * kk + 1][2], dp[2 * kk + 1][3]);
#pragma unroll
          for (int dpair = 0; dpair < T::kOutTiles / 2; ++dpair) {
            const int offset = SwizzledOffset<kHeadDim>(kk * 16 + lane % 8 + ((lane / 8) % 2) * 8,
                                                        dpair * 2 + lane / 16);
            uint32_t frag[4];
            LdMatrixX4Trans(frag, SmemAddress(s_do + offset));
            Mma<E>(dv_acc[2 * dpair], p_frag, frag[0], frag[1]);
            Mma<E>(dv_acc[2 * dpair + 1], p_frag, frag[2], frag[3]);
            LdMatrixX4Trans(frag, SmemAddress(s_q + offset));
            Mma<E>(dk_acc[2 * dpair], ds_frag, frag[0], frag[1]);
            Mma<E>(dk_acc[2 * dpair + 1], ds_frag, frag[2], frag[3]);
          }
        }

        // dS^T to shared memory, [key][query] swizzled like a 64-wide head.
#pragma unroll
        for (int nt = 0; nt < kQueryTiles; ++nt) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int key_local = warp_key0 + g + half * 8;
            *reinterpret_cast<uint32_t*>(s_ds + SwizzledOffset<kBlockM>(key_local, nt) + 2 * t) =
                Pack<E>(dp[nt][half * 2], dp[nt][half * 2 + 1]);
          }
        }
      } else {
#pragma unroll
        for (int nt = 0; nt < kQueryTiles; ++nt) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int key_local = warp_key0 + g + half * 8;
            *reinterpret_cast<uint32_t*>(s_ds + SwizzledOffset<kBlockM>(key_local, nt) + 2 * t) =
                0u;
          }
        }
      }
      __syncthreads();

      // dQ of this query step: warp w takes m-tile w % kDqMTiles and its
      // kDqTiles column tiles from (w / kDqMTiles) * kDqTiles. A = dS, read
      // transposed from dS^T; B = K [key][dim], transposed.
      const int dq_mtile = warp % T::kDqMTiles;
      const int dq_tile0 = (warp / T::kDqMTiles) * T::kDqTiles;
      float dq_acc[T::kDqTiles][4];
#pragma unroll
      for (int dt = 0; dt < T::kDqTiles; ++dt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) dq_acc[dt][e] = 0.0f;
      }
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        uint32_t ds_frag[4];
        LdMatrixX4Trans(ds_frag, SmemAddress(s_ds + SwizzledOffset<kBlockM>(
                                                        kk * 16 + lane % 8 + (lane / 16) * 8,
                                                        dq_mtile * 2 + (lane / 8) % 2)));
#pragma unroll
        for (int dpair = 0; dpair < T::kDqTiles / 2; ++dpair) {
          uint32_t frag[4];
          LdMatrixX4Trans(frag, SmemAddress(s_k + SwizzledOffset<kHeadDim>(
                                                      kk * 16 + lane % 8 + ((lane / 8) % 2) * 8,
                                                      dq_tile0 + dpair * 2 + lane / 16)));
          Mma<E>(dq_acc[2 * dpair], ds_frag, frag[0], frag[1]);
          Mma<E>(dq_acc[2 * dpair + 1], ds_frag, frag[2], frag[3]);
        }
      }
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int64_t row = q0 + dq_mtile * 16 + g + half * 8;
        if (row >= p.q_len) continue;
        if (dq_direct != nullptr) {
          E* dq_row = dq_direct + row * q_stride + dq_tile0 * 8;
#pragma unroll
          for (int dt = 0; dt < T::kDqTiles; ++dt) {
            *reinterpret_cast<uint32_t*>(dq_row + dt * 8 + 2 * t) =
                Pack<E>(p.scale * dq_acc[dt][half * 2], p.scale * dq_acc[dt][half * 2 + 1]);
          }
          continue;
        }
        float* dq_row =
            DqShare(p, dq_accum, key_block, bh, kHeadDim) + row * kHeadDim + dq_tile0 * 8;
#pragma unroll
        for (int dt = 0; dt < T::kDqTiles; ++dt) {
          AddDq(p, dq_row + dt * 8 + 2 * t, p.scale * dq_acc[dt][half * 2]);
          AddDq(p, dq_row + dt * 8 + 2 * t + 1, p.scale * dq_acc[dt][half * 2 + 1]);
        }
      }
    }
    if (!next_item_loading) {
      CpAsyncWait<0>();  // When no query tile ran, the K and V copies are still pending.
      if (kPersistent && item + gridDim.x < items) {
        // No step ran (no row sees these keys): the next item's loads start
        // here, after this item's have landed.
        load_item(item + gridDim.x, parity ^ 1);
      }
    }

#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t key = c0 + warp_key0 + g + half * 8;
      if (key >= p.k_len) continue;
      E* dk_row = dk + k_offset + key * k_stride;
      E* dv_row = dv + k_offset + key * k_stride;
#pragma unroll
      for (int dt = 0; dt < T::kOutTiles; ++dt) {
        *reinterpret_cast<uint32_t*>(dk_row + dt * 8 + 2 * t) =
            Pack<E>(p.scale * dk_acc[dt][half * 2], p.scale * dk_acc[dt][half * 2 + 1]);
        *reinterpret_cast<uint32_t*>(dv_row + dt * 8 + 2 * t) =
            Pack<E>(dv_acc[dt][half * 2], dv_acc[dt][half * 2 + 1]);
      }
    }
    // Persistent: every warp is done with this item's buffers (dQ reads K
    // after the step's middle barrier) before the next item refills them.
    if constexpr (kPersistent) __syncthreads();
  };
  ForBlockItems<kPersistent>(items, run_item);
}

// kMinBlocks: blocks a multiprocessor must hold at once (a register cap;
// ShortProblemMode), 0 for none; kPersistent: that many blocks per
// multiprocessor walk the items (BackwardMmaKernel).
template <typename E, int kHeadDim, int kMinBlocks = 0, bool kPersistent = false>
const char* LaunchBackwardMma(const AttentionCudaProblem& p, const void* q, const void* k,
                              const void* v, const float* lse, const float* delta,
                              const void* d_out, float* dq_accum, void* dk, void* dv,
                              cudaStream_t stream) {
  using T = BackwardTiles<kHeadDim>;
  int64_t blocks = p.batch * p.heads * ((p.k_len + kBlockN - 1) / kBlockN);
  if (blocks == 0) return nullptr;
  if constexpr (kPersistent) {
    blocks = std::min<int64_t>(blocks, static_cast<int64_t>(MultiprocessorCount()) * kMinBlocks);
  }
  if (blocks > 0x7fffffff) return "too many key tiles for one launch";
  constexpr auto kernel = BackwardMmaKernel<E, kHeadDim, kMinBlocks, kPersistent>;
  constexpr size_t kSmemBytes = T::SmemBytes(kPersistent);
  if (const char* error = AllowDynamicSmem<kernel>(kSmemBytes)) return error;
  kernel<<<static_cast<unsigned>(blocks), kMmaThreads, kSmemBytes, stream>>>(
      p, static_cast<const E*>(q), static_cast<const E*>(k), static_cast<const E*>(v), lse, delta,
      static_cast<const E*>(d_out), dq_accum, static_cast<E*>(dk), static_cast<E*>(dv),
      SharedDropoutMasks());
  return LastLaunchError();
}

template <typename E>
const char* BackwardMmaTyped(const AttentionCudaProblem& p, const void* q, const void* k,
                             const void* v, const float* lse, const float* delta, const void* d_out,
                             float* dq_accum, void* dk, void* dv, cudaStream_t stream) {
  switch (p.d_k) {
    case 32:
      return LaunchBackwardMma<E, 32>(p, q, k, v, lse, delta, d_out, dq_accum, dk, dv, stream);
    case 64:
      if (p.q_len <= BackwardTiles<64>::kBlockM && p.k_len <= kBlockN) {
        switch (ShortProblemMode()) {
          case ShortProblems::kUncapped:
            break;
          case ShortProblems::kCapped:
            return LaunchBackwardMma<E, 64, 3>(p, q, k, v, lse, delta, d_out, dq_accum, dk, dv,
                                               stream);
          case ShortProblems::kPersistent:
            return LaunchBackwardMma<E, 64, 2, true>(p, q, k, v, lse, delta, d_out, dq_accum, dk,
                                                     dv, stream);
        }
      }
      return LaunchBackwardMma<E, 64>(p, q, k, v, lse, delta, d_out, dq_accum, dk, dv, stream);
    case 128:
      return LaunchBackwardMma<E, 128>(p, q, k, v, lse, delta, d_out, dq_accum, dk, dv, stream);
  }
  return "the tensor-core attention kernels take head sizes 32, 64 and 128";
}

}  // namespace

int64_t BackwardMmaKeyTile() { return kBlockN; }

const char* BackwardMma(const AttentionCudaProblem& p, const void* q, const void* k, const void* v,
                        const float* lse, const float* delta, const void* d_out, float* dq_accum,
                        void* dk, void* dv, cudaStream_t stream) {
  return p.f16 ? BackwardMmaTyped<f16>(p, q, k, v, lse, delta, d_out, dq_accum, dk, dv, stream)
               : BackwardMmaTyped<bf16>(p, q, k, v, lse, delta, d_out, dq_accum, dk, dv, stream);
}

}  // namespace attention_cuda
}  // namespace tfm

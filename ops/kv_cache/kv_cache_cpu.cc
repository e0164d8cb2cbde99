// CPU kernels of the key/value cache ops: contiguous copies of d-wide runs
// (of 4-byte or 2-byte elements), split across threads by (row, head); f32
// steps into an f16 cache are rounded on the way (F16C, per instruction
// set: ops/cpu_math/isa.h).
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/simd_math.h"

TFM_ISA_BEGIN
namespace {

// (row, head) pairs per task: enough bytes moved (read and written) to
// outweigh the scheduling (64 KiB: a beam step's f32 write of 128 rows x 4
// heads x 64 then splits over two threads, 29 -> 20 ms over a Multi30k
// decode; so does its write into an f16 cache, which reads twice the bytes
// it writes).
int64_t Grain(int64_t bytes_per_head) {
  return std::max<int64_t>(1, 65536 / std::max<int64_t>(1, bytes_per_head));
}

// cache[r, h, position + i] = x[r, first_head + h, i]: kv_cache_write with
// the position checked (by the op's validation, or by KvCacheWriteAtCpu).
absl::Status WriteAt(KernelContext& context, int64_t position) {
  Tensor cache = context.in_place_input(0);
  const Tensor& x = context.input(1);
  TFM_ASSIGN_OR_RETURN(const int64_t first_head, context.attrs().GetOr<int64_t>("first_head", 0));
  const int64_t capacity = cache.dim(2), n = x.dim(2), d = x.dim(3);
  const int64_t heads = cache.dim(1), x_heads = x.dim(1);
  const int64_t element = static_cast<int64_t>(DTypeSize(cache.dtype()));
  // Validation lets f32 x into an f16 cache only: rounded, else moved.
  const bool round = x.dtype() != cache.dtype();
  char* dst = static_cast<char*>(cache.raw_data());
  const char* src = static_cast<const char*>(x.raw_data());
  const int64_t x_element = static_cast<int64_t>(DTypeSize(x.dtype()));
  // x's rows: the cache's first (a beam search that reorders its caches by
  // table keeps rows past the live ones: ops/attention/attention.h).
  context.thread_pool()->ParallelFor(
      x.dim(0) * heads, Grain(n * d * (element + x_element)), [&](int64_t begin, int64_t end) {
        for (int64_t slice = begin; slice < end; ++slice) {
          const int64_t source = slice / heads * x_heads + first_head + slice % heads;
          char* to = dst + (slice * capacity + position) * d * element;
          const char* from = src + source * n * d * x_element;
          if (round) {
            simd::RoundToHalf(reinterpret_cast<const float*>(from),
                              reinterpret_cast<uint16_t*>(to), n * d);
          } else {
            std::memcpy(to, from, n * d * element);
          }
        }
      });
  context.SetOutput(0, cache);
  return absl::OkStatus();
}

}  // namespace

// The kernels: outside the anonymous namespace, for the AVX2 build's
// registration to name the AVX-512 build's copies.
absl::Status KvCacheWriteCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const int64_t position, context.attrs().Get<int64_t>("position"));
  return WriteAt(context, position);
}

// The position validation could not see: checked here, before any write.
absl::Status KvCacheWriteAtCpu(KernelContext& context) {
  const int64_t position = context.input(2).data<int32_t>()[0];
  const int64_t capacity = context.input(0).dim(2), n = context.input(1).dim(2);
  if (position < 0 || position + n > capacity) {
    return context.Error(absl::StrCat("position ", position, " with ", n,
                                      " positions to write does not fit a capacity of ",
                                      capacity));
  }
  return WriteAt(context, position);
}

absl::Status KvCacheGatherCpu(KernelContext& context) {
  const Tensor& cache = context.input(0);
  const Tensor& rows = context.input(1);
  TFM_ASSIGN_OR_RETURN(const int64_t length, context.attrs().Get<int64_t>("length"));
  TFM_ASSIGN_OR_RETURN(const int64_t capacity, context.attrs().Get<int64_t>("capacity"));
  const int64_t heads = cache.dim(1), source_capacity = cache.dim(2);
  const int64_t count = rows.dim(0);
  // Rows of d elements, in bytes.
  const int64_t d = cache.dim(3) * static_cast<int64_t>(DTypeSize(cache.dtype()));
  const int32_t* ids = rows.data<int32_t>();
  for (int64_t i = 0; i < rows.num_elements(); ++i) {
    if (ids[i] < 0 || ids[i] >= cache.dim(0)) {
      return context.Error(
          absl::StrCat("row ", ids[i], " is outside the cache's ", cache.dim(0), " rows"));
    }
  }
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, cache.dtype()));
  const char* src = static_cast<const char*>(cache.raw_data());
  char* dst = static_cast<char*>(out->raw_data());
  if (rows.rank() == 2) {
    // A source row per position: d-wide runs.
    context.thread_pool()->ParallelFor(
        count * heads, Grain(length * d), [&](int64_t begin, int64_t end) {
          for (int64_t task = begin; task < end; ++task) {
            const int64_t i = task / heads, h = task % heads;
            for (int64_t t = 0; t < length; ++t) {
              const int64_t source_head = ids[i * length + t] * heads + h;
              std::memcpy(dst + (task * capacity + t) * d,
                          src + (source_head * source_capacity + t) * d, d);
            }
          }
        });
    return absl::OkStatus();
  }
  context.thread_pool()->ParallelFor(
      count * heads, Grain(length * d), [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          const int64_t source_head = ids[task / heads] * heads + task % heads;
          std::memcpy(dst + task * capacity * d, src + source_head * source_capacity * d,
                      length * d);
        }
      });
  return absl::OkStatus();
}

// Executes PlanKvReorder's plan: the staged rows copied aside, then every
// move (none of whose sources is overwritten, or it reads the copy).
absl::Status KvCacheReorderCpu(KernelContext& context) {
  Tensor cache = context.in_place_input(0);
  const int32_t* plan = context.input(1).data<int32_t>();
  TFM_ASSIGN_OR_RETURN(const int64_t length, context.attrs().Get<int64_t>("length"));
  TFM_ASSIGN_OR_RETURN(const int64_t staged, context.attrs().Get<int64_t>("staged"));
  TFM_ASSIGN_OR_RETURN(const int64_t from_cache, context.attrs().Get<int64_t>("from_cache"));
  TFM_ASSIGN_OR_RETURN(const int64_t from_scratch, context.attrs().Get<int64_t>("from_scratch"));
  const int64_t rows = cache.dim(0), heads = cache.dim(1), capacity = cache.dim(2);
  // Rows of d elements, in bytes.
  const int64_t d = cache.dim(3) * static_cast<int64_t>(DTypeSize(cache.dtype()));
  const int64_t total = staged + 2 * from_cache + 2 * from_scratch;
  for (int64_t i = 0; i < total; ++i) {
    // Rows in the first four parts, scratch slots in the last.
    const int64_t limit = i < total - from_scratch ? rows : staged;
    if (plan[i] < 0 || plan[i] >= limit) {
      return context.Error(absl::StrCat("plan entry ", i, " (", plan[i], ") is out of range"));
    }
  }
  const int32_t* staged_rows = plan;
  const int32_t* cache_dst = staged_rows + staged;
  const int32_t* cache_src = cache_dst + from_cache;
  const int32_t* scratch_dst = cache_src + from_cache;
  const int32_t* scratch_slot = scratch_dst + from_scratch;
  char* data = static_cast<char*>(cache.raw_data());
  const int64_t segment = length * d;  // Bytes per (row, head) moved.
  std::vector<char> scratch(static_cast<size_t>(staged * heads * segment));
  auto head_of = [&](int64_t row, int64_t head) {
    return data + (row * heads + head) * capacity * d;
  };
  context.thread_pool()->ParallelFor(
      staged * heads, Grain(segment), [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          std::memcpy(scratch.data() + task * segment,
                      head_of(staged_rows[task / heads], task % heads), segment);
        }
      });
  context.thread_pool()->ParallelFor(
      (from_cache + from_scratch) * heads, Grain(segment), [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          const int64_t move = task / heads, head = task % heads;
          const char* source =
              move < from_cache
                  ? head_of(cache_src[move], head)
                  : scratch.data() + (scratch_slot[move - from_cache] * heads + head) * segment;
          char* target =
              head_of(move < from_cache ? cache_dst[move] : scratch_dst[move - from_cache], head);
          std::memcpy(target, source, segment);
        }
      });
  context.SetOutput(0, cache);
  return absl::OkStatus();
}

TFM_ISA_END

// f32 caches, and f16 ones (CPU decoding's 16-bit caches: the attention op
// reads them with f32 queries).
TFM_REGISTER_ISA_KERNEL("kv_cache_write", DType::kF32, KvCacheWriteCpu);
TFM_REGISTER_ISA_KERNEL("kv_cache_write", DType::kF16, KvCacheWriteCpu);
TFM_REGISTER_ISA_KERNEL("kv_cache_write_at", DType::kF32, KvCacheWriteAtCpu);
TFM_REGISTER_ISA_KERNEL("kv_cache_write_at", DType::kF16, KvCacheWriteAtCpu);
TFM_REGISTER_ISA_KERNEL("kv_cache_reorder", DType::kF32, KvCacheReorderCpu);
TFM_REGISTER_ISA_KERNEL("kv_cache_reorder", DType::kF16, KvCacheReorderCpu);
TFM_REGISTER_ISA_KERNEL("kv_cache_gather", DType::kF32, KvCacheGatherCpu);
TFM_REGISTER_ISA_KERNEL("kv_cache_gather", DType::kF16, KvCacheGatherCpu);

// Registers the key/value cache CUDA kernels (linked only in builds with
// CUDA): f32, and the 16-bit f16 and bf16 caches of mixed-precision
// decoding.
#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/kv_cache/kv_cache_cuda.h"

namespace tfm {
namespace {

absl::Status KvCacheWriteCuda(KernelContext& context) {
  Tensor cache = context.in_place_input(0);
  const Tensor& x = context.input(1);
  TFM_ASSIGN_OR_RETURN(const int64_t position, context.attrs().Get<int64_t>("position"));
  TFM_ASSIGN_OR_RETURN(const int64_t first_head, context.attrs().GetOr<int64_t>("first_head", 0));
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context, LaunchKvCacheWrite(cache.raw_data(), x.raw_data(), x.dim(0), cache.dim(1),
                                  x.dim(1), first_head, cache.dim(2), x.dim(2), position,
                                  x.dim(3) * DTypeSize(x.dtype()), context.stream())));
  context.SetOutput(0, cache);
  return absl::OkStatus();
}

// The position stays on the device (no host sync: the launch is the same
// at every step of a captured graph); the kernel skips a bad one.
absl::Status KvCacheWriteAtCuda(KernelContext& context) {
  Tensor cache = context.in_place_input(0);
  const Tensor& x = context.input(1);
  TFM_ASSIGN_OR_RETURN(const int64_t first_head, context.attrs().GetOr<int64_t>("first_head", 0));
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context, LaunchKvCacheWriteAt(cache.raw_data(), x.raw_data(),
                                    context.input(2).data<int32_t>(), x.dim(0), cache.dim(1),
                                    x.dim(1), first_head, cache.dim(2), x.dim(2),
                                    x.dim(3) * DTypeSize(x.dtype()), context.stream())));
  context.SetOutput(0, cache);
  return absl::OkStatus();
}

// The plan comes from PlanKvReorder, which checked its rows on the host: no
// check here, and no wait for the GPU.
absl::Status KvCacheReorderCuda(KernelContext& context) {
  Tensor cache = context.in_place_input(0);
  TFM_ASSIGN_OR_RETURN(const int64_t length, context.attrs().Get<int64_t>("length"));
  TFM_ASSIGN_OR_RETURN(const int64_t staged, context.attrs().Get<int64_t>("staged"));
  TFM_ASSIGN_OR_RETURN(const int64_t from_cache, context.attrs().Get<int64_t>("from_cache"));
  TFM_ASSIGN_OR_RETURN(const int64_t from_scratch, context.attrs().Get<int64_t>("from_scratch"));
  const int64_t heads = cache.dim(1), d = cache.dim(3);
  TFM_ASSIGN_OR_RETURN(Tensor scratch, Tensor::Empty({staged, heads, length, d}, cache.dtype(),
                                                     context.device(), context.stream()));
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context,
      LaunchKvCacheReorder(cache.raw_data(), context.input(1).data<int32_t>(), staged, from_cache,
                           from_scratch, scratch.raw_data(), heads, cache.dim(2), length,
                           d * DTypeSize(cache.dtype()), context.stream())));
  context.SetOutput(0, cache);
  return absl::OkStatus();
}

absl::Status KvCacheGatherCuda(KernelContext& context) {
  const Tensor& cache = context.input(0);
  const Tensor& rows = context.input(1);
  TFM_ASSIGN_OR_RETURN(const int64_t length, context.attrs().Get<int64_t>("length"));
  TFM_ASSIGN_OR_RETURN(const int64_t capacity, context.attrs().Get<int64_t>("capacity"));
  const int64_t heads = cache.dim(1), d = cache.dim(3), count = rows.dim(0);
  // A row per position ([count, length]) or per row ([count]).
  const bool per_position = rows.rank() == 2;
  // The CPU kernel's check and message; waits for the stream (a cache grows
  // or a beam widens: not every step).
  TFM_ASSIGN_OR_RETURN(Tensor scratch,
                       Tensor::Empty({1}, DType::kI64, context.device(), context.stream()));
  int64_t position = -1, row = 0;
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context, FindBadCacheRow(rows.data<int32_t>(), rows.num_elements(), cache.dim(0),
                               scratch.raw_data(), context.stream(), &position, &row)));
  if (position >= 0) {
    return context.Error(
        absl::StrCat("row ", row, " is outside the cache's ", cache.dim(0), " rows"));
  }
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, cache.dtype()));
  if (per_position) {
    return CudaLaunchStatus(
        context, LaunchKvCacheGatherByPosition(cache.raw_data(), rows.data<int32_t>(),
                                               out->raw_data(), count, heads, cache.dim(2),
                                               capacity, length, d * DTypeSize(cache.dtype()),
                                               context.stream()));
  }
  return CudaLaunchStatus(
      context, LaunchKvCacheGather(cache.raw_data(), rows.data<int32_t>(), out->raw_data(), count,
                                   heads, cache.dim(2), capacity, length,
                                   d * DTypeSize(cache.dtype()), context.stream()));
}

TFM_REGISTER_KERNELS("kv_cache_write", DeviceType::kCUDA, KvCacheWriteCuda, DType::kF32,
                     DType::kF16, DType::kBF16);
TFM_REGISTER_KERNELS("kv_cache_write_at", DeviceType::kCUDA, KvCacheWriteAtCuda, DType::kF32,
                     DType::kF16, DType::kBF16);
TFM_REGISTER_KERNELS("kv_cache_gather", DeviceType::kCUDA, KvCacheGatherCuda, DType::kF32,
                     DType::kF16, DType::kBF16);
TFM_REGISTER_KERNELS("kv_cache_reorder", DeviceType::kCUDA, KvCacheReorderCuda, DType::kF32,
                     DType::kF16, DType::kBF16);

}  // namespace
}  // namespace tfm

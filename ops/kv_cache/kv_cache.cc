#include "ops/kv_cache/kv_cache.h"

#include "absl/strings/str_cat.h"
#include "core/op_profile.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"

namespace tfm {
namespace {

absl::Status ValidateCache(const KernelContext& context, const Tensor& cache) {
  if (cache.rank() != 4) return context.Error("cache must be [rows, heads, capacity, d]");
  // The kernels move bytes: 4-byte elements, or 2-byte ones (f16 caches;
  // bf16 ones too on CUDA). The kernel table names the dtypes each device
  // has.
  const size_t element = DTypeSize(cache.dtype());
  if (element != 4 && element != 2) {
    return context.Error("cache must have 4-byte or 2-byte elements");
  }
  return absl::OkStatus();
}

// What kv_cache_write and kv_cache_write_at check alike: the cache, and x
// against it and first_head.
absl::Status ValidateWriteOf(const KernelContext& context) {
  const Tensor& cache = context.input(0);
  const Tensor& x = context.input(1);
  TFM_RETURN_IF_ERROR(ValidateCache(context, cache));
  TFM_ASSIGN_OR_RETURN(const int64_t first_head, context.attrs().GetOr<int64_t>("first_head", 0));
  // An f16 cache on the CPU takes f32 x too, rounded as it is written (an
  // f32 decoding step's keys and values into 16-bit caches).
  const bool rounded = context.device().is_cpu() && cache.dtype() == DType::kF16 &&
                       x.dtype() == DType::kF32;
  if (x.rank() != 4 || (x.dtype() != cache.dtype() && !rounded) || x.dim(0) > cache.dim(0) ||
      x.dim(3) != cache.dim(3) || first_head < 0 || first_head + cache.dim(1) > x.dim(1)) {
    return context.Error(absl::StrCat(
        "x must be [rows, heads, n, d] of at most the cache's rows (the first are written), its "
        "d and dtype (or f32 for an f16 cache on the CPU), with heads first_head (",
        first_head, ") .. first_head + the cache's heads - 1"));
  }
  return absl::OkStatus();
}

absl::Status ValidateWrite(const KernelContext& context) {
  TFM_RETURN_IF_ERROR(ValidateWriteOf(context));
  const Tensor& cache = context.input(0);
  const Tensor& x = context.input(1);
  TFM_ASSIGN_OR_RETURN(int64_t position, context.attrs().Get<int64_t>("position"));
  if (position < 0 || position + x.dim(2) > cache.dim(2)) {
    return context.Error(absl::StrCat("positions ", position, " .. ", position + x.dim(2) - 1,
                                      " do not fit a capacity of ", cache.dim(2)));
  }
  return absl::OkStatus();
}

// The position is on the device (a captured CUDA graph replays the same
// launch at every step), out of the host's sight: only what does not depend
// on it is checked here, and the kernels guard the range themselves.
absl::Status ValidateWriteAt(const KernelContext& context) {
  TFM_RETURN_IF_ERROR(ValidateWriteOf(context));
  const Tensor& cache = context.input(0);
  const Tensor& x = context.input(1);
  TFM_RETURN_IF_ERROR(context.RequireDevicePosition(context.input(2), "position",
                                                    cache.device(), "the cache's device"));
  if (x.dim(2) > cache.dim(2)) {
    return context.Error(absl::StrCat(x.dim(2), " positions do not fit a capacity of ",
                                      cache.dim(2)));
  }
  return absl::OkStatus();
}

absl::Status ValidateGather(const KernelContext& context) {
  const Tensor& cache = context.input(0);
  const Tensor& rows = context.input(1);
  TFM_RETURN_IF_ERROR(ValidateCache(context, cache));
  TFM_ASSIGN_OR_RETURN(int64_t length, context.attrs().Get<int64_t>("length"));
  TFM_ASSIGN_OR_RETURN(int64_t capacity, context.attrs().Get<int64_t>("capacity"));
  const bool per_position = rows.rank() == 2 && rows.dim(1) == length;
  if ((rows.rank() != 1 && !per_position) || rows.dtype() != DType::kI32) {
    return context.Error("rows must be [n] or [n, length] i32");
  }
  if (length < 0 || length > cache.dim(2) || length > capacity) {
    return context.Error(absl::StrCat("length ", length, " exceeds the capacity ", cache.dim(2),
                                      " or the new capacity ", capacity));
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "kv_cache_write",
    .inputs = {"cache", "x"},
    .outputs = {"cache"},
    .attrs = {"position", "first_head"},
    .doc = "cache[:, :, position:position + n] = x[:, first_head:first_head + cache heads], in "
           "place (first_head optional, 0)",
    .validate = ValidateWrite,
    .in_place = {{0, 0}},
});

TFM_REGISTER_OP(OpDef{
    .name = "kv_cache_write_at",
    .inputs = {"cache", "x", "position"},
    .outputs = {"cache"},
    .attrs = {"first_head"},
    .doc = "kv_cache_write at the position held by the [1] i32 tensor `position` (on the "
           "cache's device): cache[:, :, position:position + n] = x[:, first_head:first_head + "
           "cache heads], in place (first_head optional, 0); CUDA writes nothing for a position "
           "outside [0, capacity - n]",
    .validate = ValidateWriteAt,
    .in_place = {{0, 0}},
});

absl::Status ValidateReorder(const KernelContext& context) {
  const Tensor& cache = context.input(0);
  const Tensor& plan = context.input(1);
  TFM_RETURN_IF_ERROR(ValidateCache(context, cache));
  TFM_ASSIGN_OR_RETURN(const int64_t length, context.attrs().Get<int64_t>("length"));
  TFM_ASSIGN_OR_RETURN(const int64_t staged, context.attrs().Get<int64_t>("staged"));
  TFM_ASSIGN_OR_RETURN(const int64_t from_cache, context.attrs().Get<int64_t>("from_cache"));
  TFM_ASSIGN_OR_RETURN(const int64_t from_scratch, context.attrs().Get<int64_t>("from_scratch"));
  if (length < 0 || length > cache.dim(2)) {
    return context.Error(absl::StrCat("length ", length, " exceeds the capacity ", cache.dim(2)));
  }
  if (staged < 0 || from_cache < 0 || from_scratch < 0 || plan.rank() != 1 ||
      plan.dtype() != DType::kI32 || plan.dim(0) != staged + 2 * from_cache + 2 * from_scratch) {
    return context.Error(
        "plan must be i32 [staged + 2 from_cache + 2 from_scratch] (PlanKvReorder)");
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "kv_cache_reorder",
    .inputs = {"cache", "plan"},
    .outputs = {"cache"},
    .attrs = {"length", "staged", "from_cache", "from_scratch"},
    .doc = "moves cache rows in place for positions < length as PlanKvReorder planned them "
           "(staged rows first copied aside)",
    .validate = ValidateReorder,
    .in_place = {{0, 0}},
});

TFM_REGISTER_OP(OpDef{
    .name = "kv_cache_gather",
    .inputs = {"cache", "rows"},
    .outputs = {"out"},
    .attrs = {"length", "capacity"},
    .doc = "out[i, :, :length] = cache[rows[i], :, :length], out [n, heads, capacity, d] "
           "(later positions unset); rows [n, length]: out[i, :, t] = cache[rows[i, t], "
           ":, t]",
    .validate = ValidateGather,
    // [n, heads, capacity, d].
    .output_shapes = [](const KernelContext& context) -> absl::StatusOr<std::vector<Shape>> {
      const Tensor& cache = context.input(0);
      TFM_ASSIGN_OR_RETURN(int64_t capacity, context.attrs().Get<int64_t>("capacity"));
      return std::vector<Shape>{{context.input(1).dim(0), cache.dim(1), capacity, cache.dim(3)}};
    },
});

}  // namespace

absl::Status KvCacheWrite(const Tensor& cache, const Tensor& x, int64_t position,
                          int64_t first_head) {
  Attrs attrs;
  attrs.Set("position", position);
  if (first_head != 0) attrs.Set("first_head", first_head);
  return RunOp("kv_cache_write", {cache, x}, attrs).status();
}

absl::Status KvCacheWriteAt(const Tensor& cache, const Tensor& x, const Tensor& position,
                            int64_t first_head) {
  Attrs attrs;
  if (first_head != 0) attrs.Set("first_head", first_head);
  return RunOp("kv_cache_write_at", {cache, x, position}, attrs).status();
}

absl::StatusOr<Tensor> KvCacheGather(const Tensor& cache, const Tensor& rows, int64_t length,
                                     int64_t capacity) {
  Attrs attrs;
  attrs.Set("length", length).Set("capacity", capacity);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("kv_cache_gather", {cache, rows}, attrs));
  return out[0];
}

std::vector<int32_t> KvReorderPlan::Flat() const {
  std::vector<int32_t> flat = staged;
  for (const std::vector<int32_t>* part :
       {&from_cache_dst, &from_cache_src, &from_scratch_dst, &from_scratch_slot}) {
    flat.insert(flat.end(), part->begin(), part->end());
  }
  return flat;
}

absl::StatusOr<KvReorderPlan> PlanKvReorder(absl::Span<const int32_t> rows, int64_t cache_rows) {
  const int64_t count = static_cast<int64_t>(rows.size());
  if (count > cache_rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("kv_cache_reorder: ", count, " rows from a cache of ", cache_rows));
  }
  for (const int32_t row : rows) {
    if (row < 0 || row >= cache_rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kv_cache_reorder: row ", row, " is outside the cache's ", cache_rows, " rows"));
    }
  }
  // Row s is overwritten when it is one of the new rows and does not keep
  // its own contents.
  auto overwritten = [&](int32_t s) { return s < count && rows[s] != s; };
  KvReorderPlan plan;
  std::vector<int32_t> slot_of(static_cast<size_t>(count), -1);
  for (int32_t i = 0; i < count; ++i) {
    const int32_t source = rows[i];
    if (source == i) continue;
    if (!overwritten(source)) {
      plan.from_cache_dst.push_back(i);
      plan.from_cache_src.push_back(source);
      continue;
    }
    if (slot_of[source] < 0) {
      slot_of[source] = static_cast<int32_t>(plan.staged.size());
      plan.staged.push_back(source);
    }
    plan.from_scratch_dst.push_back(i);
    plan.from_scratch_slot.push_back(slot_of[source]);
  }
  return plan;
}

absl::StatusOr<UploadedKvReorder> UploadKvReorder(absl::Span<const int32_t> rows,
                                                  int64_t cache_rows, const Device& device) {
  UploadedKvReorder reorder;
  std::vector<int32_t> flat;
  {
    const ScopedOpTimer timer("(kv_cache_reorder plan, host)");
    TFM_ASSIGN_OR_RETURN(const KvReorderPlan plan, PlanKvReorder(rows, cache_rows));
    reorder.rows = static_cast<int64_t>(rows.size());
    reorder.cache_rows = cache_rows;
    reorder.staged = static_cast<int64_t>(plan.staged.size());
    reorder.from_cache = static_cast<int64_t>(plan.from_cache_dst.size());
    reorder.from_scratch = static_cast<int64_t>(plan.from_scratch_dst.size());
    flat = plan.Flat();
  }
  if (!flat.empty()) {
    TFM_ASSIGN_OR_RETURN(reorder.plan,
                         Int32OnDevice(flat, {static_cast<int64_t>(flat.size())}, device));
  }
  return reorder;
}

absl::StatusOr<Tensor> KvCacheReorder(const Tensor& cache, const UploadedKvReorder& reorder,
                                      int64_t length) {
  if (cache.rank() != 4) {
    return absl::InvalidArgumentError("kv_cache_reorder: cache must be [rows, heads, capacity, d]");
  }
  if (cache.dim(0) != reorder.cache_rows) {
    return absl::InvalidArgumentError(absl::StrCat("kv_cache_reorder: a plan for ",
                                                   reorder.cache_rows, " rows on a cache of ",
                                                   cache.dim(0)));
  }
  if (reorder.plan.defined()) {
    Attrs attrs;
    attrs.Set("length", length)
        .Set("staged", reorder.staged)
        .Set("from_cache", reorder.from_cache)
        .Set("from_scratch", reorder.from_scratch);
    TFM_RETURN_IF_ERROR(RunOp("kv_cache_reorder", {cache, reorder.plan}, attrs).status());
  }
  if (reorder.rows == cache.dim(0)) return cache;
  return cache.Slice(0, reorder.rows);
}

absl::StatusOr<Tensor> KvCacheReorder(const Tensor& cache, absl::Span<const int32_t> rows,
                                      int64_t length) {
  if (cache.rank() != 4) {
    return absl::InvalidArgumentError("kv_cache_reorder: cache must be [rows, heads, capacity, d]");
  }
  TFM_ASSIGN_OR_RETURN(const UploadedKvReorder reorder,
                       UploadKvReorder(rows, cache.dim(0), cache.device()));
  return KvCacheReorder(cache, reorder, length);
}

}  // namespace tfm

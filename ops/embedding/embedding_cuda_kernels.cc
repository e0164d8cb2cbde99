// Registers the embedding CUDA kernels (linked only in builds with CUDA):
// f32, f16 and bf16 tables and gradients, i32 or i64 ids.
#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/embedding/embedding_cuda.h"

namespace tfm {
namespace {

// The CPU kernels' check and message: every id in [0, vocab). Waits for the
// stream (an 8-byte copy back), unless the caller checked the ids
// (ids_checked).
template <typename Id>
absl::Status CheckIds(const KernelContext& context, const Tensor& ids, int64_t vocab) {
  TFM_ASSIGN_OR_RETURN(const bool checked, context.attrs().GetOr<bool>("ids_checked", false));
  if (checked) return absl::OkStatus();
  TFM_ASSIGN_OR_RETURN(Tensor scratch,
                       Tensor::Empty({1}, DType::kI64, context.device(), context.stream()));
  int64_t position = -1, id = 0;
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context, FindBadEmbeddingId<Id>(ids.data<Id>(), ids.num_elements(), vocab, scratch.raw_data(),
                                      context.stream(), &position, &id)));
  if (position < 0) return absl::OkStatus();
  return context.Error(
      absl::StrCat("token id ", id, " at position ", position, " is outside [0, ", vocab, ")"));
}

template <typename T, typename Id>
absl::Status EmbeddingWithIds(KernelContext& context) {
  const Tensor& table = context.input(0);
  const Tensor& ids = context.input(1);
  const int64_t vocab = table.dim(0), d = table.dim(1);
  TFM_RETURN_IF_ERROR(CheckIds<Id>(context, ids, vocab));
  TFM_ASSIGN_OR_RETURN(double scale, context.attrs().GetOr<double>("scale", 1.0));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, table.dtype()));
  return CudaLaunchStatus(
      context,
      LaunchEmbedding<T, Id>(table.data<T>(), ids.data<Id>(), out->data<T>(), ids.num_elements(), d,
                             static_cast<float>(scale), context.stream()));
}

template <typename T>
absl::Status EmbeddingCuda(KernelContext& context) {
  return context.input(1).dtype() == DType::kI64 ? EmbeddingWithIds<T, int64_t>(context)
                                                 : EmbeddingWithIds<T, int32_t>(context);
}

template <typename T, typename Id>
absl::Status EmbeddingBackwardWithIds(KernelContext& context) {
  const Tensor& ids = context.input(0);
  const Tensor& d_out = context.input(1);
  TFM_ASSIGN_OR_RETURN(int64_t vocab, context.attrs().Get<int64_t>("vocab"));
  TFM_ASSIGN_OR_RETURN(double scale, context.attrs().GetOr<double>("scale", 1.0));
  TFM_RETURN_IF_ERROR(CheckIds<Id>(context, ids, vocab));
  const int64_t d = d_out.dim(-1);
  TFM_ASSIGN_OR_RETURN(Tensor * d_table, context.AllocateOutput(0, d_out.dtype()));
  TFM_ASSIGN_OR_RETURN(const bool deterministic,
                       context.attrs().GetOr<bool>("deterministic", false));
  if (deterministic) {
    const int64_t positions = ids.num_elements();
    const size_t bytes = EmbeddingBackwardSortedScratchBytes<Id>(positions, vocab, d);
    TFM_ASSIGN_OR_RETURN(Tensor sort_scratch,
                         Tensor::Empty({static_cast<int64_t>(bytes)}, DType::kI8,
                                       context.device(), context.stream()));
    return CudaLaunchStatus(
        context, LaunchEmbeddingBackwardSorted<T, Id>(
                     ids.data<Id>(), d_out.data<T>(), d_table->data<T>(), positions, vocab, d,
                     static_cast<float>(scale), sort_scratch.raw_data(), bytes, context.stream()));
  }
  // An f32 gradient accumulates in place; a 16-bit one in f32 scratch,
  // rounded once.
  Tensor scratch;
  float* accumulator = nullptr;
  if (d_out.dtype() == DType::kF32) {
    accumulator = d_table->data<float>();
  } else {
    TFM_ASSIGN_OR_RETURN(
        scratch, Tensor::Empty({vocab, d}, DType::kF32, context.device(), context.stream()));
    accumulator = scratch.data<float>();
  }
  return CudaLaunchStatus(
      context, LaunchEmbeddingBackward<T, Id>(ids.data<Id>(), d_out.data<T>(), accumulator,
                                              d_table->data<T>(), ids.num_elements(), vocab, d,
                                              static_cast<float>(scale), context.stream()));
}

template <typename T>
absl::Status EmbeddingBackwardCuda(KernelContext& context) {
  return context.input(0).dtype() == DType::kI64 ? EmbeddingBackwardWithIds<T, int64_t>(context)
                                                 : EmbeddingBackwardWithIds<T, int32_t>(context);
}

TFM_REGISTER_TYPED_KERNELS("embedding", DeviceType::kCUDA, EmbeddingCuda, float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("embedding_backward", DeviceType::kCUDA, EmbeddingBackwardCuda, float,
                           Half, BFloat16);

}  // namespace
}  // namespace tfm

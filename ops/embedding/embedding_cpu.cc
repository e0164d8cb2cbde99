// CPU f32 kernels of embedding and embedding_backward.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// Row loops on restrict-qualified pointers: the output never overlaps the
// table or the gradient, and saying so lets -O2 vectorise them (GCC's cheap
// vectoriser will not add the runtime overlap check itself).
void ScaleRow(const float* __restrict src, int64_t d, float factor, float* __restrict dst) {
  for (int64_t j = 0; j < d; ++j) dst[j] = factor * src[j];
}

void AddRow(const float* __restrict src, int64_t d, float* __restrict dst) {
  for (int64_t j = 0; j < d; ++j) dst[j] += src[j];
}

// ids as int64 after checking each is in [0, vocab).
absl::StatusOr<std::vector<int64_t>> ReadIds(const KernelContext& context, const Tensor& ids,
                                             int64_t vocab) {
  std::vector<int64_t> values(ids.num_elements());
  for (int64_t i = 0; i < ids.num_elements(); ++i) {
    values[i] = ids.dtype() == DType::kI64 ? ids.data<int64_t>()[i] : ids.data<int32_t>()[i];
    if (values[i] < 0 || values[i] >= vocab) {
      return context.Error(absl::StrCat("token id ", values[i], " at position ", i,
                                        " is outside [0, ", vocab, ")"));
    }
  }
  return values;
}

absl::Status EmbeddingCpu(KernelContext& context) {
  const Tensor& table = context.input(0);
  const int64_t vocab = table.dim(0), d = table.dim(1);
  TFM_ASSIGN_OR_RETURN(std::vector<int64_t> ids, ReadIds(context, context.input(1), vocab));
  TFM_ASSIGN_OR_RETURN(double scale, context.attrs().GetOr<double>("scale", 1.0));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DType::kF32));
  const float* rows = table.data<float>();
  float* dst = out->data<float>();
  const float factor = static_cast<float>(scale);
  context.thread_pool()->ParallelFor(ids.size(), 64, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const float* src = rows + ids[p] * d;
      if (factor == 1.0f) {
        std::memcpy(dst + p * d, src, d * sizeof(float));
      } else {
        ScaleRow(src, d, factor, dst + p * d);
      }
    }
  });
  return absl::OkStatus();
}

absl::Status EmbeddingBackwardCpu(KernelContext& context) {
  const Tensor& d_out = context.input(1);
  TFM_ASSIGN_OR_RETURN(int64_t vocab, context.attrs().Get<int64_t>("vocab"));
  TFM_ASSIGN_OR_RETURN(double scale, context.attrs().GetOr<double>("scale", 1.0));
  TFM_ASSIGN_OR_RETURN(std::vector<int64_t> ids, ReadIds(context, context.input(0), vocab));
  const int64_t d = d_out.dim(-1);
  TFM_ASSIGN_OR_RETURN(Tensor * d_table, context.AllocateOutput(0, DType::kF32));
  // Counting sort of positions by id (stable), so each table row can sum its
  // positions in their original order on one thread.
  std::vector<int64_t> starts(vocab + 1, 0);
  for (int64_t id : ids) ++starts[id + 1];
  for (int64_t row = 0; row < vocab; ++row) starts[row + 1] += starts[row];
  std::vector<int64_t> positions(ids.size());
  std::vector<int64_t> fill(starts.begin(), starts.end() - 1);
  for (int64_t p = 0; p < static_cast<int64_t>(ids.size()); ++p) positions[fill[ids[p]]++] = p;

  const float* grad = d_out.data<float>();
  float* dst = d_table->data<float>();
  const float factor = static_cast<float>(scale);
  context.thread_pool()->ParallelFor(vocab, 256, [&](int64_t begin, int64_t end) {
    std::memset(dst + begin * d, 0, (end - begin) * d * sizeof(float));
    for (int64_t row = begin; row < end; ++row) {
      float* target = dst + row * d;
      for (int64_t i = starts[row]; i < starts[row + 1]; ++i) {
        AddRow(grad + positions[i] * d, d, target);
      }
      if (starts[row + 1] > starts[row] && factor != 1.0f) {
        for (int64_t j = 0; j < d; ++j) target[j] *= factor;
      }
    }
  });
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("embedding", DeviceType::kCPU, DType::kF32, EmbeddingCpu);
TFM_REGISTER_KERNEL("embedding_backward", DeviceType::kCPU, DType::kF32, EmbeddingBackwardCpu);

}  // namespace
}  // namespace tfm

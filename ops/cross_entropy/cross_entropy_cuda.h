// Launchers of label_smoothed_cross_entropy's CUDA kernels (plain C++:
// included by host code). T is the logits' host element type (float, Half or
// BFloat16; declarations suffice), Target int32_t or int64_t. Each returns
// nullptr or the CUDA error text. A target that is neither padding_index nor
// in [0, vocab) is reported in *check (the first such row, else -1): the
// launchers wait for the stream to learn it, as the CPU kernels fail on it.
// A null `check` (targets the caller checked) skips that wait.
#ifndef TFM_OPS_CROSS_ENTROPY_CROSS_ENTROPY_CUDA_H_
#define TFM_OPS_CROSS_ENTROPY_CROSS_ENTROPY_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

struct Half;
struct BFloat16;

struct CrossEntropyCudaShape {
  int64_t rows;
  int64_t vocab;
  float epsilon;
  int64_t padding_index;
};

struct TargetCheck {
  int64_t bad_row = -1;
  int64_t bad_target = 0;
};

// 8-byte words of workspace that LaunchCrossEntropy needs.
int64_t CrossEntropyWorkspaceWords(int64_t rows);

// Per row (one fused pass over the logits: online max and sum of
// exponentials, and the plain sum for the smoothing term) the lse and the
// loss and nll in double; then the sums over rows in a fixed order. Outputs
// are device pointers: loss, nll f32 [], count i64 [], lse f32 [rows].
template <typename T, typename Target>
const char* LaunchCrossEntropy(const T* logits, const Target* targets,
                               const CrossEntropyCudaShape& shape, float* loss, float* nll,
                               int64_t* count, float* lse, uint64_t* workspace, TargetCheck* check,
                               StreamHandle stream);

// d_logits = d_loss * (exp(logits - lse) - smoothed one-hot), zero rows for
// padding; d_loss is a device f32 scalar, `flag` 8 bytes of device memory.
template <typename T, typename Target>
const char* LaunchCrossEntropyBackward(const T* logits, const Target* targets, const float* lse,
                                       const float* d_loss, const CrossEntropyCudaShape& shape,
                                       T* d_logits, uint64_t* flag, TargetCheck* check,
                                       StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_CROSS_ENTROPY_CROSS_ENTROPY_CUDA_H_

// label_smoothed_cross_entropy: log-softmax over the vocabulary fused with
// the label-smoothed negative log-likelihood, summed over tokens, and its
// backward straight to d_logits.
//
// The loss is PyTorch's CrossEntropyLoss(label_smoothing=eps, reduction=sum,
// ignore_index=padding_index): per token with target t,
//   loss = (1 - eps) * nll + eps / V * smooth,
//   nll = -log p_t,  smooth = sum over the vocabulary of -log p_j,
// i.e. the target distribution puts 1 - eps + eps / V on t and eps / V on
// every other class. (fairseq's current label_smoothed_nll_loss spreads
// eps / (V - 1) over the classes other than t instead; the two differ by
// O(eps / V).) Tokens whose target is padding_index count for nothing.
#ifndef TFM_OPS_CROSS_ENTROPY_CROSS_ENTROPY_H_
#define TFM_OPS_CROSS_ENTROPY_CROSS_ENTROPY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

struct CrossEntropyOptions {
  float epsilon = 0.1f;        // In [0, 1].
  int64_t padding_index = -1;  // Targets equal to it are ignored; -1: none.
  // The caller has checked every target on the host (a model building them
  // from a batch's host ids): the CUDA kernels skip reading back their own
  // check, a wait for the GPU per call. An unchecked bad target is still
  // never read past its row.
  bool targets_checked = false;
};

struct CrossEntropyOutput {
  Tensor loss;   // f32 [], summed over non-padding tokens.
  Tensor nll;    // f32 [], summed -log p_target (for perplexity).
  Tensor count;  // i64 [], number of non-padding tokens.
  Tensor lse;    // f32 [N], log-sum-exp per row: saved for backward.
};

// logits f32 [N, V] (or bf16 or f16 on CUDA, reduced in f32), targets i32 or i64
// [N], each in [0, V) or padding. On CUDA the target check waits for the
// stream.
absl::StatusOr<CrossEntropyOutput> LabelSmoothedCrossEntropy(
    const Tensor& logits, const Tensor& targets, const CrossEntropyOptions& options = {});

// d_logits [N, V] (logits' dtype) = d_loss * (softmax(logits) - smoothed
// target), zero rows for padding. d_loss: f32 [] (the gradient of the summed
// loss, e.g. 1 or 1 / count). The nll output is a statistic and gets no
// gradient.
absl::StatusOr<Tensor> LabelSmoothedCrossEntropyBackward(const Tensor& logits,
                                                         const Tensor& targets, const Tensor& lse,
                                                         const Tensor& d_loss,
                                                         const CrossEntropyOptions& options = {});

}  // namespace tfm

#endif  // TFM_OPS_CROSS_ENTROPY_CROSS_ENTROPY_H_

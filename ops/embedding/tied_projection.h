// tied_projection: the output layer that shares the embedding table,
// logits = h E^T, and its backward (dh = d_logits E, dE = d_logits^T h).
// The embedding's own gradient and this one add up to the table's gradient.
#ifndef TFM_OPS_EMBEDDING_TIED_PROJECTION_H_
#define TFM_OPS_EMBEDDING_TIED_PROJECTION_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

// h [..., d], table [vocab, d] -> logits [..., vocab]: f32 on every device,
// bf16 and f16 on CUDA.
absl::StatusOr<Tensor> TiedProjection(const Tensor& h, const Tensor& table);

struct TiedProjectionGrads {
  Tensor dh;      // Like h.
  Tensor dtable;  // [vocab, d]
};

absl::StatusOr<TiedProjectionGrads> TiedProjectionBackward(const Tensor& h, const Tensor& table,
                                                           const Tensor& d_logits);

}  // namespace tfm

#endif  // TFM_OPS_EMBEDDING_TIED_PROJECTION_H_

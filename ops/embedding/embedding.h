// embedding: rows of a table picked by token ids, times a scale (the
// Transformer multiplies its embeddings by sqrt(d_model)), and the backward
// that scatter-adds into the table's gradient.
#ifndef TFM_OPS_EMBEDDING_EMBEDDING_H_
#define TFM_OPS_EMBEDDING_EMBEDDING_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

// out[..., :] = scale * table[ids[...], :]. table [vocab, d] f32 (or f16 or
// bf16 on CUDA), ids any shape, i32 or i64, each in [0, vocab), on the
// table's device (on CUDA, checking them waits for the stream); out is
// ids.shape + [d].
// `ids_checked`: the caller checked every id on the host (a model building
// them from a batch's host ids), so the CUDA kernels skip their own check
// and the wait for the GPU that it costs.
absl::StatusOr<Tensor> Embedding(const Tensor& table, const Tensor& ids, float scale = 1.0f,
                                 bool ids_checked = false);

// d_table [vocab, d] = scale * sum over positions p with ids[p] = row of
// d_out[p, :], of d_out's dtype. On the CPU deterministic: each row sums its
// positions in order, and the rows are split among threads (no atomics, no
// races). On CUDA f32 atomic adds (so the last bits may vary from run to
// run), rounded once for f16 and bf16.
absl::StatusOr<Tensor> EmbeddingBackward(const Tensor& ids, const Tensor& d_out, int64_t vocab,
                                         float scale = 1.0f, bool ids_checked = false);

}  // namespace tfm

#endif  // TFM_OPS_EMBEDDING_EMBEDDING_H_

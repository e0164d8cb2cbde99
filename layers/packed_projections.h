// Several projections (Denses) of one input computed as one product: their
// weights [out_i, in] stacked into one [sum of out_i, in] once per pass, their
// outputs side by side in one [..., sum of out_i] tensor, and in backward one
// product whose dW and db are split back into each Dense's gradients (views
// of rows of one tensor) and whose dx is the sum of theirs. Attention's q, k
// and v projections of one input: one GEMM of N = 3 h d (and in backward of
// K = 3 h d) instead of three of h d, which on a GPU run far further from
// the roof at d_model 1024 (an H200's big bf16 update: the N = 1024 GEMMs at
// about 51% of its bf16 peak, N = 4096 at 65-73%). The Denses keep their
// parameters and names: checkpoints do not change.
//
// The results equal the separate products' in exact arithmetic; the sums of
// dx (over K = 3 h d in one GEMM, not three GEMMs added) round in another
// order.
#ifndef TFM_LAYERS_PACKED_PROJECTIONS_H_
#define TFM_LAYERS_PACKED_PROJECTIONS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"
#include "layers/dense.h"

namespace tfm {

// Whether layers pack their projections (attention's q, k and v): on unless
// TFM_PACKED_PROJECTIONS=0 (three products, to time the two on one machine)
// or SetPackedProjections(false) (tests), process-wide.
bool PackedProjectionsOn();
void SetPackedProjections(bool on);

// Packing set for a scope (tests), the setting before it back at its end.
class ScopedPackedProjections {
 public:
  explicit ScopedPackedProjections(bool on) : previous_(PackedProjectionsOn()) {
    SetPackedProjections(on);
  }
  ~ScopedPackedProjections() { SetPackedProjections(previous_); }
  ScopedPackedProjections(const ScopedPackedProjections&) = delete;
  ScopedPackedProjections& operator=(const ScopedPackedProjections&) = delete;

 private:
  bool previous_;
};

class PackedProjections {
 public:
  // x [..., in] -> [..., sum of out_i], the projections' outputs in the
  // order of `projections` (which must outlive Backward; all of input size
  // x.dim(-1)). Keeps x and the stacked weight for Backward.
  absl::StatusOr<Tensor> Forward(absl::Span<Dense* const> projections, const Tensor& x);

  // Adds each projection's dW and db into its gradients; returns dx, made
  // anew, or added into *dx_sum (as Dense::Backward).
  absl::StatusOr<Tensor> Backward(const Tensor& dout, const Tensor* dx_sum = nullptr);

 private:
  std::vector<Dense*> projections_;
  Tensor x_;
  Tensor weight_;  // Stacked, in the pass's dtype.
};

}  // namespace tfm

#endif  // TFM_LAYERS_PACKED_PROJECTIONS_H_

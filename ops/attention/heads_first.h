// Interleaved attention tensors ([batch, len, heads, d], attention.h) for
// kernels that read heads-first ones ([batch, heads, len, d]): the CPU
// loops, and on CUDA cuDNN's and the CUDA-core kernels. Each input is
// itself where it is heads-first, a view where the two layouts share their
// bytes (one position or one head), else a heads-first copy; each output is
// written in place the same way, or into a heads-first temporary that
// Finish permutes into it. The device's permute (split_heads' kernels) does
// the copies, all of a call at once.
#ifndef TFM_OPS_ATTENTION_HEADS_FIRST_H_
#define TFM_OPS_ATTENTION_HEADS_FIRST_H_

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/device.h"
#include "core/tensor.h"
#include "ops/split_heads/split_heads_kernel_args.h"

namespace tfm {

// Where part `part` of an interleaved tensor's head slots starts (its
// first position's head part * heads: attention's packed projections, each
// operand `heads` slots after the one before).
const void* PackedPart(const Tensor& x, int64_t heads, int64_t part);

using PermuteHeadsFn =
    std::function<absl::Status(absl::Span<const PermuteHeadsTensor>, bool split)>;

class HeadsFirstTensors {
 public:
  // New tensors on `device`, usable on `stream`.
  HeadsFirstTensors(Device device, StreamHandle stream, PermuteHeadsFn permute)
      : device_(device), stream_(stream), permute_(std::move(permute)) {}

  // A tensor of attention's (attention.h): interleaved or heads-first; with
  // `heads` > 0, an interleaved tensor's heads [part * heads, (part + 1) *
  // heads) of its positions' head slots (packed projections), else all of
  // its heads.
  template <typename TensorPointer>
  struct Operand {
    TensorPointer tensor;
    bool interleaved;
    int64_t heads = 0;
    int64_t part = 0;
  };
  using Input = Operand<const Tensor*>;
  using Output = Operand<Tensor*>;

  // Each input as heads-first kernels read it.
  absl::StatusOr<std::vector<Tensor>> Inputs(std::initializer_list<Input> inputs);

  // Where heads-first kernels write each output; Finish completes the
  // outputs that got a temporary.
  absl::StatusOr<std::vector<Tensor>> Outputs(std::initializer_list<Output> outputs);
  absl::Status Finish();

 private:
  // `x` itself where it is heads-first, a heads-first view where the
  // layouts share their bytes, else a fresh heads-first tensor (*fresh);
  // *permute says what moves between x and a fresh one.
  absl::StatusOr<Tensor> HeadsFirstForm(const Tensor& x, bool interleaved, int64_t heads,
                                        int64_t part, bool* fresh,
                                        PermuteHeadsTensor* permute) const;

  Device device_;
  StreamHandle stream_;
  PermuteHeadsFn permute_;
  std::vector<PermuteHeadsTensor> pending_;  // Temporaries into their outputs.
  std::vector<Tensor> temporaries_;    // Alive until Finish has run.
};

}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_HEADS_FIRST_H_

#include "ops/attention/heads_first.h"

#include "core/status_macros.h"

namespace tfm {
namespace {

// Whether interleaved `x` (all of its heads) has the bytes of its
// heads-first form.
bool SameAsHeadsFirst(const Tensor& x) { return x.dim(1) == 1 || x.dim(2) == 1; }

}  // namespace

const void* PackedPart(const Tensor& x, int64_t heads, int64_t part) {
  return static_cast<const char*>(x.raw_data()) +
         part * heads * x.dim(3) * static_cast<int64_t>(DTypeSize(x.dtype()));
}

absl::StatusOr<Tensor> HeadsFirstTensors::HeadsFirstForm(const Tensor& x, bool interleaved,
                                                         int64_t heads, int64_t part, bool* fresh,
                                                         PermuteHeadsTensor* permute) const {
  *fresh = false;
  if (!interleaved) return x;
  const int64_t slots = x.dim(2);
  if (heads <= 0) heads = slots;
  const Shape heads_first = {x.dim(0), heads, x.dim(1), x.dim(3)};
  if (heads == slots && SameAsHeadsFirst(x)) return x.Reshape(heads_first);
  const int64_t row_bytes = x.dim(3) * static_cast<int64_t>(DTypeSize(x.dtype()));
  *fresh = true;
  TFM_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Empty(heads_first, x.dtype(), device_, stream_));
  // The part's first row; the caller orders from and to.
  *permute = {PackedPart(x, heads, part),
              tensor.raw_data(),
              x.dim(0),
              x.dim(1),
              heads,
              row_bytes,
              slots};
  return tensor;
}

absl::StatusOr<std::vector<Tensor>> HeadsFirstTensors::Inputs(std::initializer_list<Input> inputs) {
  std::vector<Tensor> tensors;
  std::vector<PermuteHeadsTensor> copies;
  for (const Input& input : inputs) {
    bool fresh = false;
    PermuteHeadsTensor permute{};
    TFM_ASSIGN_OR_RETURN(Tensor tensor, HeadsFirstForm(*input.tensor, input.interleaved,
                                                       input.heads, input.part, &fresh, &permute));
    if (fresh) copies.push_back(permute);  // From the interleaved tensor.
    tensors.push_back(std::move(tensor));
  }
  if (!copies.empty()) TFM_RETURN_IF_ERROR(permute_(copies, /*split=*/true));
  return tensors;
}

absl::StatusOr<std::vector<Tensor>> HeadsFirstTensors::Outputs(
    std::initializer_list<Output> outputs) {
  std::vector<Tensor> targets;
  for (const Output& output : outputs) {
    bool fresh = false;
    PermuteHeadsTensor permute{};
    TFM_ASSIGN_OR_RETURN(Tensor target, HeadsFirstForm(*output.tensor, output.interleaved,
                                                       output.heads, output.part, &fresh,
                                                       &permute));
    if (fresh) {
      // From the temporary into the output's part (a mutable tensor's
      // bytes, reached through the const form HeadsFirstForm gives).
      permute.to = const_cast<void*>(permute.from);
      permute.from = target.raw_data();
      pending_.push_back(permute);
      temporaries_.push_back(target);
    }
    targets.push_back(std::move(target));
  }
  return targets;
}

absl::Status HeadsFirstTensors::Finish() {
  if (pending_.empty()) return absl::OkStatus();
  TFM_RETURN_IF_ERROR(permute_(pending_, /*split=*/false));
  pending_.clear();
  temporaries_.clear();
  return absl::OkStatus();
}

}  // namespace tfm

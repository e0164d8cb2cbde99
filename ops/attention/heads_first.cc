#include "ops/attention/heads_first.h"

#include "core/status_macros.h"

namespace tfm {
namespace {

// Whether interleaved `x` has the bytes of its heads-first form.
bool SameAsHeadsFirst(const Tensor& x) { return x.dim(1) == 1 || x.dim(2) == 1; }

Shape HeadsFirstShape(const Tensor& x) { return {x.dim(0), x.dim(2), x.dim(1), x.dim(3)}; }

PermuteHeadsTensor PermuteOf(const Tensor& interleaved, const void* from, void* to) {
  return {from, to, interleaved.dim(0), interleaved.dim(1), interleaved.dim(2),
          interleaved.dim(3) * static_cast<int64_t>(DTypeSize(interleaved.dtype()))};
}

}  // namespace

absl::StatusOr<Tensor> HeadsFirstTensors::HeadsFirstForm(const Tensor& x, bool interleaved,
                                                         bool* fresh) const {
  *fresh = false;
  if (!interleaved) return x;
  if (SameAsHeadsFirst(x)) return x.Reshape(HeadsFirstShape(x));
  *fresh = true;
  return Tensor::Empty(HeadsFirstShape(x), x.dtype(), device_, stream_);
}

absl::StatusOr<std::vector<Tensor>> HeadsFirstTensors::Inputs(
    std::initializer_list<std::pair<const Tensor*, bool>> inputs) {
  std::vector<Tensor> tensors;
  std::vector<PermuteHeadsTensor> copies;
  for (const auto& [x, interleaved] : inputs) {
    bool fresh = false;
    TFM_ASSIGN_OR_RETURN(Tensor tensor, HeadsFirstForm(*x, interleaved, &fresh));
    if (fresh) copies.push_back(PermuteOf(*x, x->raw_data(), tensor.raw_data()));
    tensors.push_back(std::move(tensor));
  }
  if (!copies.empty()) TFM_RETURN_IF_ERROR(permute_(copies, /*split=*/true));
  return tensors;
}

absl::StatusOr<std::vector<Tensor>> HeadsFirstTensors::Outputs(
    std::initializer_list<std::pair<Tensor*, bool>> outputs) {
  std::vector<Tensor> targets;
  for (const auto& [output, interleaved] : outputs) {
    bool fresh = false;
    TFM_ASSIGN_OR_RETURN(Tensor target, HeadsFirstForm(*output, interleaved, &fresh));
    if (fresh) {
      pending_.push_back(PermuteOf(*output, target.raw_data(), output->raw_data()));
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

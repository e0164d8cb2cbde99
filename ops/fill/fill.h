// fill: a tensor of one value. The simplest op, and the template for others.
#ifndef TFM_OPS_FILL_FILL_H_
#define TFM_OPS_FILL_FILL_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

// A new tensor of `shape` on `device` with every element `value` (converted to
// `dtype`; integer dtypes need an integral value in range).
absl::StatusOr<Tensor> Fill(const Shape& shape, double value, DType dtype,
                            const Device& device = Device::Cpu());

}  // namespace tfm

#endif  // TFM_OPS_FILL_FILL_H_

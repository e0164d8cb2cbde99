// Tensor shapes: a short list of non-negative extents.
#ifndef TFM_CORE_SHAPE_H_
#define TFM_CORE_SHAPE_H_

#include <cstdint>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"

namespace tfm {

using Shape = absl::InlinedVector<int64_t, 6>;

int64_t NumElements(const Shape& shape);  // 1 for a scalar (rank 0).
std::string ShapeToString(const Shape& shape);  // "[2, 3]"

// InvalidArgument if any extent is negative.
absl::Status ValidateShape(const Shape& shape);

}  // namespace tfm

#endif  // TFM_CORE_SHAPE_H_

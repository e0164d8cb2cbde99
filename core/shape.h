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
// The product of all extents but the last: the rows of a tensor seen as a
// [rows, last] matrix, right also when the last extent is 0 (where
// NumElements / last is not). 1 for ranks 0 and 1.
int64_t NumRows(const Shape& shape);
std::string ShapeToString(const Shape& shape);  // "[2, 3]"

// InvalidArgument if any extent is negative.
absl::Status ValidateShape(const Shape& shape);

}  // namespace tfm

#endif  // TFM_CORE_SHAPE_H_

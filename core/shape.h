// Tensor shapes: a short list of non-negative extents.
#ifndef TFM_CORE_SHAPE_H_
#define TFM_CORE_SHAPE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"

namespace tfm {

using Shape = absl::InlinedVector<int64_t, 6>;

// 1 for a scalar (rank 0). The shape must be valid (ValidateShape): a product
// that does not fit int64_t is a programming error here, not a wrapped count.
int64_t NumElements(const Shape& shape);
// The product of all extents but the last: the rows of a tensor seen as a
// [rows, last] matrix, right also when the last extent is 0 (where
// NumElements / last is not). 1 for ranks 0 and 1.
int64_t NumRows(const Shape& shape);
std::string ShapeToString(const Shape& shape);  // "[2, 3]"

// InvalidArgument if any extent is negative, or if the product of the
// non-zero extents times `element_bytes` does not fit int64_t (and so
// ptrdiff_t and every count or byte size derived from the shape). Without the
// second check a huge shape wraps around to a small allocation that kernels
// then write past.
absl::Status ValidateShape(const Shape& shape, size_t element_bytes = 1);

}  // namespace tfm

#endif  // TFM_CORE_SHAPE_H_

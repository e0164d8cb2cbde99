#include "core/shape.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/check.h"

namespace tfm {

namespace {

// The product of extents [first, last), which a valid shape keeps in int64_t.
// A zero extent anywhere makes it 0 even where the extents before it overflow.
int64_t ProductOfExtents(Shape::const_iterator first, Shape::const_iterator last) {
  if (std::find(first, last, 0) != last) return 0;
  int64_t product = 1;
  for (; first != last; ++first) {
    TFM_CHECK(!__builtin_mul_overflow(product, *first, &product),
              "extent product of a shape that ValidateShape rejects (int64 overflow)");
  }
  return product;
}

}  // namespace

int64_t NumElements(const Shape& shape) { return ProductOfExtents(shape.begin(), shape.end()); }

int64_t NumRows(const Shape& shape) {
  if (shape.empty()) return 1;
  return ProductOfExtents(shape.begin(), shape.end() - 1);
}

std::string ShapeToString(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status ValidateShape(const Shape& shape, size_t element_bytes) {
  for (int64_t extent : shape) {
    if (extent < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("negative extent in shape ", ShapeToString(shape)));
    }
  }
  // Zero extents are skipped: an empty [2^40, 2^40, 0] holds no bytes, but
  // NumRows would still multiply its leading extents. Bounding the product
  // of the non-zero extents bounds every product NumElements and NumRows
  // take.
  int64_t bytes = static_cast<int64_t>(element_bytes);
  for (int64_t extent : shape) {
    if (extent != 0 && __builtin_mul_overflow(bytes, extent, &bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", ShapeToString(shape), " is too large: its extents times ", element_bytes,
          " bytes per element exceed ", std::numeric_limits<int64_t>::max(), " bytes"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tfm

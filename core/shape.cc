#include "core/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tfm {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

int64_t NumRows(const Shape& shape) {
  int64_t n = 1;
  for (size_t axis = 0; axis + 1 < shape.size(); ++axis) n *= shape[axis];
  return n;
}

std::string ShapeToString(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status ValidateShape(const Shape& shape) {
  for (int64_t extent : shape) {
    if (extent < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("negative extent in shape ", ShapeToString(shape)));
    }
  }
  return absl::OkStatus();
}

}  // namespace tfm

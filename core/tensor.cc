#include "core/tensor.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/current_stream.h"
#include "core/status_macros.h"

namespace tfm {

absl::StatusOr<Tensor> Tensor::Empty(const Shape& shape, DType dtype,
                                     const Device& device, StreamHandle stream) {
  TFM_RETURN_IF_ERROR(ValidateShape(shape, DTypeSize(dtype)));
  TFM_ASSIGN_OR_RETURN(Allocator * allocator, AllocatorFor(device));
  const size_t bytes = NumElements(shape) * DTypeSize(dtype);
  // Unnamed: the thread's current stream (a graph capture's, say).
  if (stream == nullptr) stream = CurrentStream();
  TFM_ASSIGN_OR_RETURN(void* data, allocator->Allocate(bytes, stream));
  return Tensor(std::make_shared<Buffer>(allocator, data, bytes), 0, shape, dtype);
}

absl::StatusOr<Tensor> Tensor::Zeros(const Shape& shape, DType dtype) {
  TFM_ASSIGN_OR_RETURN(Tensor tensor, Empty(shape, dtype));
  std::memset(tensor.raw_data(), 0, tensor.nbytes());
  return tensor;
}

int64_t Tensor::dim(int axis) const {
  const int resolved = axis < 0 ? axis + rank() : axis;
  TFM_CHECK(resolved >= 0 && resolved < rank(), "axis out of range");
  return shape_[resolved];
}

absl::StatusOr<Tensor> Tensor::Slice(int64_t begin, int64_t end) const {
  if (rank() == 0) {
    return absl::InvalidArgumentError("Slice: cannot slice a scalar tensor");
  }
  if (begin < 0 || end < begin || end > shape_[0]) {
    return absl::OutOfRangeError(absl::StrCat("Slice: rows [", begin, ", ", end,
                                              ") out of range for shape ",
                                              ShapeToString(shape_)));
  }
  Shape sliced = shape_;
  sliced[0] = end - begin;
  const size_t row_bytes = NumElements(shape_) == 0
                               ? 0
                               : nbytes() / static_cast<size_t>(shape_[0]);
  return Tensor(buffer_, offset_bytes_ + begin * row_bytes, sliced, dtype_);
}

absl::StatusOr<Tensor> Tensor::Reshape(const Shape& shape) const {
  TFM_RETURN_IF_ERROR(ValidateShape(shape, DTypeSize(dtype_)));
  if (NumElements(shape) != num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Reshape: cannot view ", ShapeToString(shape_), " as ", ShapeToString(shape)));
  }
  return Tensor(buffer_, offset_bytes_, shape, dtype_);
}

std::string Tensor::DebugString() const {
  if (!defined()) return "undefined tensor";
  return absl::StrCat(DTypeName(dtype_), ShapeToString(shape_), " on ",
                      device().ToString());
}

}  // namespace tfm

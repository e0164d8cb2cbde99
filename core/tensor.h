// Tensor: a typed, shaped view of a reference-counted device buffer.
//
// Copies of a Tensor share the buffer (like torch.Tensor); views made by
// Slice and Reshape share it too, so writing through one is visible through
// the others. Data is always dense and row-major.
//
// Constness is the handle's: a const Tensor gives only const element
// pointers. Copying it into a non-const Tensor does give write access to the
// same buffer; that is the visible, deliberate step an in-place op takes
// (KernelContext::in_place_input), never something a kernel does by accident.
#ifndef TFM_CORE_TENSOR_H_
#define TFM_CORE_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/allocator.h"
#include "core/check.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/shape.h"

namespace tfm {

// Owns one allocation and returns it to its allocator when the last tensor
// using it goes away.
class Buffer {
 public:
  Buffer(Allocator* allocator, void* data, size_t bytes)
      : allocator_(allocator), data_(data), bytes_(bytes) {}
  ~Buffer() { allocator_->Free(data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return allocator_->device(); }

 private:
  Allocator* allocator_;
  void* data_;
  size_t bytes_;
};

class Tensor {
 public:
  // An undefined tensor: no buffer; defined() is false.
  Tensor() = default;

  // Copies share the buffer. The four are declared only to scope a pragma:
  // moving a default-constructed Tensor (`t = Tensor()`) copies the shape's
  // InlinedVector storage whole, unused inline slots included, which GCC 12
  // reports (-Wmaybe-uninitialized) in every function it is inlined into.
  // A false positive: the slots copied are never read. GCC checks each
  // inlined frame, so silencing it here covers every caller.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
  Tensor(const Tensor&) = default;
  Tensor& operator=(const Tensor&) = default;
  Tensor(Tensor&&) = default;
  Tensor& operator=(Tensor&&) = default;
#pragma GCC diagnostic pop

  // Uninitialised storage for `shape` on `device`, usable on `stream`.
  static absl::StatusOr<Tensor> Empty(const Shape& shape, DType dtype,
                                      const Device& device = Device::Cpu(),
                                      StreamHandle stream = nullptr);
  // Zero-filled host tensor.
  static absl::StatusOr<Tensor> Zeros(const Shape& shape, DType dtype);

  // A host tensor holding a copy of `values`, which must fill `shape`.
  template <typename T>
  static absl::StatusOr<Tensor> FromVector(absl::Span<const T> values, const Shape& shape);

  bool defined() const { return buffer_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int axis) const;  // Negative axes count from the end.
  int64_t num_elements() const { return NumElements(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const { return buffer_ ? buffer_->device() : Device::Cpu(); }
  size_t nbytes() const { return num_elements() * DTypeSize(dtype_); }

  // Element access follows the constness of the handle: a const Tensor (an
  // op's input, a layer's saved activation) yields only const pointers, so a
  // kernel cannot write into what it was given to read without the compiler
  // saying so. Writing takes a non-const Tensor: an output the kernel
  // allocated, or an input of an op documented as in-place.
  const void* raw_data() const { return AddressOfFirstElement(); }
  void* raw_data() { return AddressOfFirstElement(); }
  template <typename T>
  const T* data() const {
    CheckElementType<T>();
    return static_cast<const T*>(raw_data());
  }
  template <typename T>
  T* data() {
    CheckElementType<T>();
    return static_cast<T*>(raw_data());
  }
  // Host-only convenience: the elements as a span (checks device and type).
  template <typename T>
  absl::Span<const T> span() const {
    CheckOnHost();
    return absl::Span<const T>(data<T>(), num_elements());
  }
  template <typename T>
  absl::Span<T> span() {
    CheckOnHost();
    return absl::Span<T>(data<T>(), num_elements());
  }
  template <typename T>
  std::vector<T> ToVector() const {
    absl::Span<const T> values = span<T>();
    return std::vector<T>(values.begin(), values.end());
  }

  // A view of rows [begin, end) along the first axis, sharing the buffer.
  absl::StatusOr<Tensor> Slice(int64_t begin, int64_t end) const;
  // A view with the same elements in a new shape, sharing the buffer.
  absl::StatusOr<Tensor> Reshape(const Shape& shape) const;

  bool SharesBufferWith(const Tensor& other) const {
    return buffer_ != nullptr && buffer_ == other.buffer_;
  }

  // "f32[2, 3] on cpu".
  std::string DebugString() const;

 private:
  Tensor(std::shared_ptr<Buffer> buffer, size_t offset_bytes, Shape shape, DType dtype)
      : buffer_(std::move(buffer)),
        offset_bytes_(offset_bytes),
        shape_(std::move(shape)),
        dtype_(dtype) {}

  void* AddressOfFirstElement() const {
    return buffer_ ? static_cast<char*>(buffer_->data()) + offset_bytes_ : nullptr;
  }
  template <typename T>
  void CheckElementType() const {
    TFM_CHECK(DTypeOf<T>::value == dtype_, "tensor element type mismatch");
  }
  void CheckOnHost() const { TFM_CHECK(device().is_cpu(), "span() of a device tensor"); }

  std::shared_ptr<Buffer> buffer_;
  size_t offset_bytes_ = 0;
  Shape shape_;
  DType dtype_ = DType::kF32;
};

template <typename T>
absl::StatusOr<Tensor> Tensor::FromVector(absl::Span<const T> values, const Shape& shape) {
  const absl::Status valid = ValidateShape(shape, sizeof(T));
  if (!valid.ok()) return valid;
  if (static_cast<int64_t>(values.size()) != NumElements(shape)) {
    return absl::InvalidArgumentError("FromVector: " + std::to_string(values.size()) +
                                      " values cannot fill shape " + ShapeToString(shape));
  }
  absl::StatusOr<Tensor> tensor = Empty(shape, DTypeOf<T>::value);
  if (!tensor.ok()) return tensor;
  std::copy(values.begin(), values.end(), tensor->template data<T>());
  return tensor;
}

}  // namespace tfm

#endif  // TFM_CORE_TENSOR_H_

// Element types of tensors and their C++ storage types.
#ifndef TFM_CORE_DTYPE_H_
#define TFM_CORE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tfm {

// kI8: int8 weights of quantized decoding (ops/quantized_linear), appended
// last so the values of the others (stored in checkpoints) do not move.
enum class DType : uint8_t { kF32, kF16, kBF16, kI32, kI64, kI8 };

// IEEE 754 binary16, stored as bits; arithmetic happens in float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float value);
  explicit operator float() const;
};

// bfloat16: the upper half of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float value);
  explicit operator float() const;
};

size_t DTypeSize(DType dtype);
absl::string_view DTypeName(DType dtype);  // "f32", "f16", "bf16", "i32", "i64", "i8"
absl::StatusOr<DType> ParseDType(absl::string_view name);
const std::vector<DType>& AllDTypes();

// Maps a C++ storage type to its DType: DTypeOf<float>::value == DType::kF32.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOf<Half> {
  static constexpr DType value = DType::kF16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::kBF16;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kI32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kI64;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::kI8;
};

}  // namespace tfm

#endif  // TFM_CORE_DTYPE_H_

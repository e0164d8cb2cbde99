#include "core/dtype.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tfm {
namespace {

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float BitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

}  // namespace

Half::Half(float value) {
  const uint32_t f = FloatBits(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN; keep NaN quiet.
    bits = static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    return;
  }
  if (abs >= 0x477ff000u) {  // Rounds to a magnitude beyond 65504: infinity.
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (abs < 0x38800000u) {  // Subnormal half (or zero): scale by 2^24 and round.
    const float scaled = BitsToFloat(abs) * 16777216.0f;
    // Round half to even through float's own rounding of the integer part.
    const float rounded = scaled + 12582912.0f - 12582912.0f;
    bits = static_cast<uint16_t>(sign | static_cast<uint32_t>(rounded));
    return;
  }
  // Normal: rebias the exponent and round the 13 dropped bits to nearest even.
  uint32_t mantissa_and_exp = abs - 0x38000000u;
  const uint32_t round_bit = 0x1000u;
  const uint32_t lower = mantissa_and_exp & 0x1fffu;
  mantissa_and_exp >>= 13;
  if (lower > round_bit || (lower == round_bit && (mantissa_and_exp & 1u))) {
    ++mantissa_and_exp;
  }
  bits = static_cast<uint16_t>(sign | mantissa_and_exp);
}

Half::operator float() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {  // Zero or subnormal: mantissa * 2^-24.
    const float magnitude = static_cast<float>(mantissa) / 16777216.0f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return BitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  return BitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

BFloat16::BFloat16(float value) {
  const uint32_t f = FloatBits(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) {  // NaN stays NaN after truncation.
    bits = static_cast<uint16_t>((f >> 16) | 0x40u);
    return;
  }
  const uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  bits = static_cast<uint16_t>((f + rounding) >> 16);
}

BFloat16::operator float() const {
  return BitsToFloat(static_cast<uint32_t>(bits) << 16);
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kI64:
      return 8;
    case DType::kI8:
      return 1;
  }
  return 0;
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kI8:
      return "i8";
  }
  return "unknown";
}

const std::vector<DType>& AllDTypes() {
  static const auto* all = new std::vector<DType>{
      DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kI8};
  return *all;
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  std::vector<std::string> known;
  for (DType dtype : AllDTypes()) {
    if (DTypeName(dtype) == name) return dtype;
    known.emplace_back(DTypeName(dtype));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", name,
                                                 "'; known dtypes: ",
                                                 absl::StrJoin(known, ", ")));
}

}  // namespace tfm

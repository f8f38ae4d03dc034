//===- HalfFloat.h - f16 and bf16 to and from f32, bit-exact ----*- C++ -*-===//
//
// Header-only: the generation engine narrows the keys and values it stores
// in a 16-bit pool, the paged attention kernel widens them back, and the
// tests check both against the same functions. Narrowing rounds to nearest,
// ties to even, as a cast does; NaN stays NaN.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_SRC_HALFFLOAT_H
#define KILN_RUNTIME_SRC_HALFFLOAT_H

#include <cstdint>
#include <cstring>

namespace kiln::rt {

inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// IEEE half: 1 sign, 5 exponent (bias 15) and 10 fraction bits.
inline float halfToFloat(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000) << 16;
  const uint32_t exponent = (half >> 10) & 0x1F, fraction = half & 0x3FF;
  if (exponent == 0x1F) // inf, NaN
    return bitsFloat(sign | 0x7F800000 | (fraction << 13));
  if (exponent == 0) // zero, subnormal: fraction · 2^-24, exact in f32
    return bitsFloat(sign | floatBits(static_cast<float>(fraction) * 0x1p-24f));
  return bitsFloat(sign | ((exponent + 112) << 23) | (fraction << 13));
}

inline uint16_t floatToHalf(float value) {
  const uint32_t bits = floatBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) // NaN: keep it quiet
    return sign | 0x7E00;
  if (magnitude >= 0x477FF000) // rounds past 65504: inf
    return sign | 0x7C00;
  if (magnitude < 0x38800000) { // below 2^-14: a subnormal half, or 0
    // The value in units of 2^-24, rounded to nearest even by the FPU.
    const float scaled = bitsFloat(magnitude) * 0x1p24f;
    float rounded = __builtin_nearbyintf(scaled);
    return sign | static_cast<uint16_t>(rounded);
  }
  // Normal: drop 13 fraction bits, rounding to nearest even; a carry into
  // the exponent is the right result too.
  const uint32_t rebased = magnitude - (112u << 23);
  const uint32_t roundBit = (rebased >> 13) & 1;
  return sign | static_cast<uint16_t>((rebased + 0xFFF + roundBit) >> 13);
}

/// bfloat16: f32's upper half.
inline float bfloat16ToFloat(uint16_t value) {
  return bitsFloat(static_cast<uint32_t>(value) << 16);
}

inline uint16_t floatToBfloat16(float value) {
  const uint32_t bits = floatBits(value);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) // NaN: keep it quiet
    return static_cast<uint16_t>((bits >> 16) | 0x0040);
  const uint32_t roundBit = (bits >> 16) & 1;
  return static_cast<uint16_t>((bits + 0x7FFF + roundBit) >> 16);
}

/// `value` as a 16-bit pool holds it (bf16 when `bfloat`, else f16),
/// widened back: what a key or value stored there reads as.
inline float roundedTo16Bits(float value, bool bfloat) {
  return bfloat ? bfloat16ToFloat(floatToBfloat16(value)) : halfToFloat(floatToHalf(value));
}

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_HALFFLOAT_H

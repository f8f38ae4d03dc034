//===- HalfFloatTest.cpp - f16 and bf16 conversions -----------------------===//
//
// The conversions the engine stores a 16-bit KV pool with and the attention
// kernel reads it back with (runtime/src/HalfFloat.h): every f16 widens to
// the f32 of its value and narrows back to itself, and narrowing rounds to
// nearest, ties to even, overflows to inf and keeps NaN.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/HalfFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace {

using namespace kiln::rt;

/// The f32 an f16 stands for, from its fields: (-1)^s · 2^(e-15) · 1.f, or
/// 2^-14 · 0.f for e = 0.
double halfValue(uint16_t half) {
  const int exponent = (half >> 10) & 0x1F, fraction = half & 0x3FF;
  const double sign = (half & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0)
    return sign * std::ldexp(fraction, -24);
  return sign * std::ldexp(1024 + fraction, exponent - 25);
}

TEST(HalfFloat, EveryHalfWidensToItsValueAndNarrowsBack) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const uint16_t half = static_cast<uint16_t>(bits);
    const float wide = halfToFloat(half);
    if (((half >> 10) & 0x1F) == 0x1F) {
      EXPECT_EQ(std::isnan(wide), (half & 0x3FF) != 0) << std::hex << bits;
      EXPECT_TRUE(std::isnan(wide) || std::isinf(wide)) << std::hex << bits;
      if (std::isnan(wide))
        continue;
    } else {
      ASSERT_EQ(static_cast<double>(wide), halfValue(half)) << std::hex << bits;
    }
    ASSERT_EQ(floatToHalf(wide), half) << std::hex << bits;
  }
}

TEST(HalfFloat, NarrowingRoundsToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: to the even 1.
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3C00);
  // 1 + 3·2^-11 lies halfway between 1 + 2^-10 and 1 + 2^-9: to the even.
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  // The largest half, the midpoint past it (to inf), and beyond.
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);
  EXPECT_EQ(floatToHalf(-1e10f), 0xFC00);
  // Subnormals: 2^-24 is the smallest; half of it ties to 0, more rounds up.
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);
  EXPECT_EQ(floatToHalf(0x1.8p-25f), 0x0001);
  EXPECT_EQ(floatToHalf(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
}

TEST(HalfFloat, Bfloat16IsTheUpperHalfRoundedToNearestEven) {
  for (uint32_t bits : {0x3F800000u, 0xC0490000u, 0x00010000u, 0x7F7F0000u})
    EXPECT_EQ(bfloat16ToFloat(floatToBfloat16(bitsFloat(bits))), bitsFloat(bits));
  EXPECT_EQ(floatToBfloat16(bitsFloat(0x3F808000u)), 0x3F80); // tie, to even
  EXPECT_EQ(floatToBfloat16(bitsFloat(0x3F818000u)), 0x3F82); // tie, to even
  EXPECT_EQ(floatToBfloat16(bitsFloat(0x3F808001u)), 0x3F81);
  EXPECT_EQ(floatToBfloat16(bitsFloat(0x7F7FC000u)), 0x7F80); // past the largest: inf
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBfloat16(bitsFloat(0x7F800001u)))));
  EXPECT_TRUE(std::isinf(bfloat16ToFloat(floatToBfloat16(INFINITY))));
}

} // namespace

// Element types: names, numpy descrs, and float16 <-> float conversions (numpy's float16 is
// IEEE 754 binary16, rounded to nearest even).
#include "core/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace fanout::core {
namespace {

TEST(HalfTest, KnownValuesBothWays) {
  struct Case {
    uint16_t half;
    float value;
  };
  for (Case c : std::vector<Case>{{0x0000, 0.0f},
                                  {0x8000, -0.0f},
                                  {0x3c00, 1.0f},
                                  {0xc000, -2.0f},
                                  {0x3555, 0.333251953125f},
                                  {0x7bff, 65504.0f},           // largest finite
                                  {0x0400, 6.103515625e-05f},   // smallest normal, 2^-14
                                  {0x0001, 5.9604644775390625e-08f},  // smallest subnormal, 2^-24
                                  {0x03ff, 6.097555160522461e-05f},   // largest subnormal
                                  {0x7c00, std::numeric_limits<float>::infinity()},
                                  {0xfc00, -std::numeric_limits<float>::infinity()}}) {
    EXPECT_EQ(std::bit_cast<uint32_t>(HalfToFloat(c.half)), std::bit_cast<uint32_t>(c.value)) << std::hex << c.half;
    EXPECT_EQ(FloatToHalf(c.value), c.half) << c.value;
  }
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::quiet_NaN()) & 0x7e00, 0x7e00);
}

// Every finite half converts to a float and back to itself; NaNs stay NaN.
TEST(HalfTest, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_EQ((h & 0x7c00), 0x7c00u);
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f))));
      continue;
    }
    ASSERT_EQ(FloatToHalf(f), h) << std::hex << h;
  }
}

// Rounding: to nearest, ties to the even half; past the largest finite half, infinity.
TEST(HalfTest, RoundsToNearestEven) {
  const float ulp1 = std::ldexp(1.0f, -10);  // spacing of halves in [1, 2)
  EXPECT_EQ(FloatToHalf(1.0f + ulp1 / 2), 0x3c00);      // tie: down to even 0x3c00
  EXPECT_EQ(FloatToHalf(1.0f + 3 * ulp1 / 2), 0x3c02);  // tie: up to even 0x3c02
  EXPECT_EQ(FloatToHalf(1.0f + ulp1 / 2 + ulp1 / 64), 0x3c01);
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // the tie above 65504 rounds to infinity
  EXPECT_EQ(FloatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(FloatToHalf(-1e10f), 0xfc00);
  // Subnormals: in units of 2^-24, ties to even; below half a unit, zero.
  const float unit = std::ldexp(1.0f, -24);
  EXPECT_EQ(FloatToHalf(unit / 2), 0x0000);
  EXPECT_EQ(FloatToHalf(3 * unit / 2), 0x0002);
  EXPECT_EQ(FloatToHalf(unit * 0.51f), 0x0001);
  EXPECT_EQ(FloatToHalf(-unit), 0x8001);
  EXPECT_EQ(FloatToHalf(1023.5f * unit), 0x0400);  // rounds up into the smallest normal
}

TEST(ConvertElementsTest, EveryDtypeReadsAsItsValue) {
  const uint16_t halves[] = {FloatToHalf(-1.5f), FloatToHalf(2048.0f)};
  const int8_t bytes[] = {-3, 7};
  const uint8_t flags[] = {1, 0};
  const double doubles[] = {2.75, -1e300};
  float f[2];
  ConvertElements(DType::kFloat16, halves, 2, f);
  EXPECT_EQ(f[0], -1.5f);
  EXPECT_EQ(f[1], 2048.0f);
  int64_t i[2];
  ConvertElements(DType::kInt8, bytes, 2, i);
  EXPECT_EQ(i[0], -3);
  EXPECT_EQ(i[1], 7);
  ConvertElements(DType::kBool, flags, 2, i);
  EXPECT_EQ(i[0], 1);
  EXPECT_EQ(i[1], 0);
  double d[2];
  ConvertElements(DType::kFloat64, doubles, 2, d);
  EXPECT_EQ(d[0], 2.75);
  EXPECT_EQ(d[1], -1e300);
  // Unaligned input is read as bytes.
  alignas(8) char buffer[1 + 2 * sizeof(int64_t)];
  const int64_t longs[] = {-5, int64_t{1} << 40};
  std::memcpy(buffer + 1, longs, sizeof(longs));
  ConvertElements(DType::kInt64, buffer + 1, 2, d);
  EXPECT_EQ(d[0], -5.0);
  EXPECT_EQ(d[1], std::ldexp(1.0, 40));
}

TEST(DTypeTest, NamesAndDescrsRoundTrip) {
  for (DType t : {DType::kBool, DType::kInt8, DType::kUInt8, DType::kInt16, DType::kInt32, DType::kInt64,
                  DType::kFloat16, DType::kFloat32, DType::kFloat64}) {
    EXPECT_EQ(*DTypeFromName(DTypeName(t)), t);
    EXPECT_EQ(*DTypeFromNpyDescr(DTypeNpyDescr(t)), t);
  }
  EXPECT_EQ(DTypeSize(DType::kFloat16), 2u);
  EXPECT_FALSE(DTypeFromName("bfloat16").ok());
  EXPECT_NE(DTypeFromNpyDescr(">f4").status().message().find("big-endian"), std::string::npos);
}

}  // namespace
}  // namespace fanout::core

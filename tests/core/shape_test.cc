#include "core/shape.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace fanout::core {
namespace {

TEST(ShapeTest, CountsElementsAndBytes) {
  EXPECT_EQ(*ShapeElements(std::vector<int64_t>{}, "x"), 1);
  EXPECT_EQ(*ShapeElements(std::vector<int64_t>{3, 0, 5}, "x"), 0);
  EXPECT_EQ(*ShapeBytes(std::vector<int64_t>{1000, 100}, 4, "x"), 400000);
}

TEST(ShapeTest, RefusesOverflowNamingWhat) {
  // (2^61, 2) int64: 2^62 elements fit, 2^65 bytes do not.
  auto b = ShapeBytes(std::vector<int64_t>{int64_t{1} << 61, 2}, 8, "edges.npy");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("edges.npy"), std::string::npos) << b.status();
  // (1000, 2^62): the element count itself overflows.
  auto e = ShapeElements(std::vector<int64_t>{1000, int64_t{1} << 62}, "node_feat.npy");
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  // A zero dimension does not hide an overflow in the others (a row size would hit it).
  EXPECT_FALSE(ShapeElements(std::vector<int64_t>{0, int64_t{1} << 40, int64_t{1} << 40}, "x").ok());
  EXPECT_FALSE(ShapeElements(std::vector<int64_t>{-1, 4}, "x").ok());
}

TEST(ShapeTest, LimitIsResourceExhausted) {
  auto b = ShapeBytes(std::vector<int64_t>{1 << 20, 16}, 8, "answer", 1 << 20);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted) << b.status();
}

TEST(ShapeTest, CheckedArithmetic) {
  int64_t r = 7;
  EXPECT_FALSE(CheckedMul(std::numeric_limits<int64_t>::max(), 2, &r));
  EXPECT_EQ(r, 7);
  EXPECT_FALSE(CheckedAdd(std::numeric_limits<int64_t>::max(), 1, &r));
  EXPECT_FALSE(CheckedMul(-1, 2, &r));
  EXPECT_TRUE(CheckedMul(int64_t{1} << 31, int64_t{1} << 31, &r));
  EXPECT_EQ(r, int64_t{1} << 62);
}

}  // namespace
}  // namespace fanout::core

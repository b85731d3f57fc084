#include "core/partition_book.h"

#include <random>

#include "gtest/gtest.h"

namespace fanout::core {
namespace {

TEST(RangePartitionBookTest, RoundTripsEveryId) {
  auto book = RangePartitionBook::FromBounds({0, 10, 10, 25, 40});  // part 1 is empty
  ASSERT_TRUE(book.ok());
  EXPECT_EQ(book->num_parts(), 4);
  EXPECT_EQ(book->num_ids(), 40);
  for (int64_t gid = 0; gid < 40; ++gid) {
    int p = book->PartOf(gid);
    EXPECT_NE(p, 1);
    EXPECT_GE(gid, book->start(p));
    EXPECT_LT(gid, book->end(p));
    EXPECT_EQ(book->ToGlobal(p, book->ToLocal(gid)), gid);
  }
  EXPECT_EQ(book->PartOf(9), 0);
  EXPECT_EQ(book->PartOf(10), 2);
  EXPECT_EQ(book->PartOf(39), 3);
}

TEST(RangePartitionBookTest, ManyRandomPartitions) {
  std::mt19937_64 rng(7);
  std::vector<int64_t> b{0};
  for (int k = 0; k < 100; ++k) b.push_back(b.back() + static_cast<int64_t>(rng() % 50));
  auto book = RangePartitionBook::FromBounds(b);
  ASSERT_TRUE(book.ok());
  for (int64_t gid = 0; gid < book->num_ids(); ++gid) {
    int p = book->PartOf(gid);
    ASSERT_TRUE(gid >= b[p] && gid < b[p + 1]) << gid;
  }
}

TEST(RangePartitionBookTest, RejectsBadRangesWithAReason) {
  EXPECT_FALSE(RangePartitionBook::FromBounds({}).ok());
  EXPECT_FALSE(RangePartitionBook::FromBounds({1, 5}).ok());
  EXPECT_FALSE(RangePartitionBook::FromBounds({0, 5, 3}).ok());
  auto gap = RangePartitionBook::FromRanges({{0, 5}, {6, 9}});
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(std::string(gap.status().message()).find("partition 1 starts at 6"), std::string::npos);
  auto ok = RangePartitionBook::FromRanges({{0, 5}, {5, 9}});
  ASSERT_TRUE(ok.ok());
  auto out = ok->CheckedPartOf(9);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(std::string(out.status().message()).find("ID 9 is outside [0, 9)"), std::string::npos);
  EXPECT_FALSE(ok->CheckedPartOf(-1).ok());
}

}  // namespace
}  // namespace fanout::core

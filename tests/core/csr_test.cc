#include "core/csr.h"

#include "gtest/gtest.h"

namespace fanout::core {
namespace {

TEST(CsrTest, BuildIsAStableCountingSortAndSkipsNegativeRows) {
  std::vector<std::pair<int64_t, int64_t>> edges = {{2, 5}, {0, 1}, {2, 3}, {-1, 9}, {0, 7}, {2, 5}};
  std::vector<int64_t> origin;
  Csr c = BuildCsr(4, static_cast<int64_t>(edges.size()), [&](int64_t e) { return edges[e]; }, &origin);
  EXPECT_EQ(c.indptr, (std::vector<int64_t>{0, 2, 2, 5, 5}));
  EXPECT_EQ(c.indices, (std::vector<int64_t>{1, 7, 5, 3, 5}));
  EXPECT_EQ(origin, (std::vector<int64_t>{1, 4, 0, 2, 5}));
  EXPECT_EQ(c.degree(2), 3);

  Csr keep = c;
  std::vector<int64_t> keep_origin = origin;
  EXPECT_EQ(SortRows(&keep, &keep_origin, /*dedup=*/false, /*num_threads=*/2), 1);  // found, kept
  EXPECT_EQ(keep.indices, (std::vector<int64_t>{1, 7, 3, 5, 5}));
  EXPECT_EQ(keep_origin, (std::vector<int64_t>{1, 4, 2, 0, 5}));

  EXPECT_EQ(SortRows(&c, &origin, /*dedup=*/true), 1);
  EXPECT_EQ(c.indptr, (std::vector<int64_t>{0, 2, 2, 4, 4}));
  EXPECT_EQ(c.indices, (std::vector<int64_t>{1, 7, 3, 5}));
  EXPECT_EQ(origin, (std::vector<int64_t>{1, 4, 2, 0}));  // the first copy survives
}

}  // namespace
}  // namespace fanout::core

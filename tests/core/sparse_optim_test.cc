#include "core/sparse_optim.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace fanout::core {
namespace {

// CheckSparseGradients finds a repeated ID by a bitmap over the rows where that is small beside
// the IDs, else by sorting: both ways must name the same node, and non-finite gradients the node
// whose row holds one, wherever in the row.
TEST(SparseOptimTest, CheckSparseGradientsNamesRepeatsAndNonFiniteRowsEitherWay) {
  const int64_t dim = 3, first = 1000;
  for (const int64_t num_rows : {int64_t{8}, int64_t{1} << 20}) {  // bitmap, then sort
    SCOPED_TRACE(num_rows);
    const std::vector<int64_t> ids = {first + 5, first, first + 7, first + 2};
    std::vector<float> grads(ids.size() * dim, 0.5f);
    EXPECT_TRUE(CheckSparseGradients(ids, first, num_rows, dim, grads.data()).ok());
    EXPECT_TRUE(CheckSparseGradients({}, first, num_rows, dim, nullptr).ok());

    const std::vector<int64_t> repeated = {first + 5, first, first + 7, first};
    absl::Status dup = CheckSparseGradients(repeated, first, num_rows, dim, grads.data());
    EXPECT_EQ(dup.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(dup.message().find("node 1000 appears twice"), std::string::npos) << dup;

    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()}) {
      std::vector<float> g = grads;
      g[2 * dim + 2] = bad;  // the last value of node first + 7's row
      absl::Status nf = CheckSparseGradients(ids, first, num_rows, dim, g.data());
      EXPECT_EQ(nf.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(nf.message().find("the gradient of node 1007 is not finite"), std::string::npos) << nf;
    }
    // The largest finite float is finite.
    std::vector<float> big(ids.size() * dim, std::numeric_limits<float>::max());
    EXPECT_TRUE(CheckSparseGradients(ids, first, num_rows, dim, big.data()).ok());
  }
  // An ID outside the rows is refused, not looked up past the bitmap.
  const std::vector<int64_t> outside = {1000, 1008};
  std::vector<float> g(outside.size() * dim, 0.0f);
  EXPECT_EQ(CheckSparseGradients(outside, 1000, 8, dim, g.data()).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fanout::core

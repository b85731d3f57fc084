// NormalizeNodeFeatures: PyG's NormalizeFeatures on hand-checked rows.
#include "partition/dataset.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace fanout::partition {
namespace {

Dataset WithFeat(core::NpyArray feat) {
  Dataset d;
  d.num_nodes = feat.rows();
  d.node_fields.push_back({"feat", std::move(feat)});
  return d;
}

std::vector<float> Values(const Dataset& d) {
  const core::NpyArray& a = d.FindNodeField("feat")->data;
  EXPECT_EQ(a.dtype(), core::DType::kFloat32);
  return std::vector<float>(a.data_as<float>(), a.data_as<float>() + a.num_elements());
}

TEST(NormalizeNodeFeaturesTest, RowsSumToOneAndZeroRowsStayZero) {
  // Integer counts (a bag of words): minimum 0.
  Dataset d = WithFeat(core::NpyArray::Adopt(std::vector<int64_t>{1, 3, 0, 0, 2, 2}, {3, 2}));
  ASSERT_TRUE(NormalizeNodeFeatures(&d).ok());
  EXPECT_EQ(Values(d), (std::vector<float>{0.25f, 0.75f, 0.f, 0.f, 0.5f, 0.5f}));
  EXPECT_EQ(d.FindNodeField("feat")->data.shape(), (std::vector<int64_t>{3, 2}));
}

TEST(NormalizeNodeFeaturesTest, TheMinimumIsSubtractedFirstAndSmallSumsCountAsOne) {
  // Minimum -1: rows [0, 2] / 2 and [1, 1] / 2, and [0, 0.5] / 1 (its sum is below 1).
  Dataset d = WithFeat(core::NpyArray::Adopt(std::vector<float>{-1, 1, 0, 0, -1, -0.5f}, {3, 2}));
  ASSERT_TRUE(NormalizeNodeFeatures(&d).ok());
  const std::vector<float> v = Values(d);
  EXPECT_FLOAT_EQ(v[0], 0.f);
  EXPECT_FLOAT_EQ(v[1], 1.f);
  EXPECT_FLOAT_EQ(v[2], 0.5f);
  EXPECT_FLOAT_EQ(v[3], 0.5f);
  // Row [0, 0.5] sums to 0.5 < 1: divided by 1, so it keeps its values.
  EXPECT_FLOAT_EQ(v[4], 0.f);
  EXPECT_FLOAT_EQ(v[5], 0.5f);
}

TEST(NormalizeNodeFeaturesTest, MissingOrNonNumericFieldsAreRefused) {
  Dataset d;
  EXPECT_EQ(NormalizeNodeFeatures(&d).message(), "--normalize-features: the dataset has no node field 'feat'");
  Dataset b = WithFeat(core::NpyArray::Owned(core::DType::kBool, {2, 1}));
  absl::Status s = NormalizeNodeFeatures(&b);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("is bool"), std::string::npos) << s;
  Dataset nan = WithFeat(core::NpyArray::Adopt(std::vector<float>{1, std::nanf("")}, {1, 2}));
  EXPECT_NE(NormalizeNodeFeatures(&nan).message().find("row 0 of node field 'feat' holds a NaN"), std::string::npos);
}

}  // namespace
}  // namespace fanout::partition

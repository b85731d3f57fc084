#include "core/feature_codec.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/partition_config.h"
#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace fanout::core {
namespace {

std::vector<float> RoundTrip(FeatureStorage to, const std::vector<float>& x, int64_t rows) {
  const int64_t dim = static_cast<int64_t>(x.size()) / rows;
  std::vector<char> stored(static_cast<size_t>(rows * to.stored_elems(dim)) * DTypeSize(to.dtype));
  EXPECT_EQ(EncodeRows(to, DType::kFloat32, x.data(), rows, dim, stored.data()), -1);
  std::vector<float> back(x.size());
  if (to.codec == FeatureCodec::kNone) {
    ConvertElements<float>(to.dtype, stored.data(), x.size(), back.data());
  } else {
    DecodeRows(to.codec, stored.data(), rows, dim, back.data());
  }
  return back;
}

std::vector<float> RandomRows(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

TEST(FeatureCodecTest, NamesAreTheFlagsAndTheConfigs) {
  for (const char* name : {"float32", "float16", "bfloat16", "int8"}) EXPECT_TRUE(FeatureStorageFromName(name).ok());
  EXPECT_EQ(FeatureStorageFromName("int4").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*FeatureCodecFromName("int8"), FeatureCodec::kInt8);
  EXPECT_EQ(*FeatureCodecFromName(""), FeatureCodec::kNone);
  EXPECT_FALSE(FeatureCodecFromName("fp8").ok());
  EXPECT_EQ(FeatureStorageFromName("int8")->stored_elems(100), 108);
  EXPECT_EQ(CodecDecodedElems(FeatureCodec::kInt8, 108), 100);
}

// bfloat16 keeps float32's exponent and 8 bits of significand: relative error at most 2^-8,
// rounding to nearest even, infinities and NaN kept.
TEST(FeatureCodecTest, BFloat16RoundsToNearestEvenWithinHalfAUnit) {
  const std::vector<float> x = RandomRows(4096, 1);
  const std::vector<float> back = RoundTrip(*FeatureStorageFromName("bfloat16"), x, 64);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::fabs(back[i] - x[i]), std::ldexp(std::fabs(x[i]), -8)) << x[i];
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.0f + 1.0f / 256)), 1.0f);             // tie: to even (down)
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);  // tie: to even (up)
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(-2.5f)), -2.5f);                        // exact
  EXPECT_TRUE(std::isinf(BFloat16ToFloat(FloatToBFloat16(std::numeric_limits<float>::infinity()))));
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::nanf("")))));
}

// int8 rows span their own minimum to maximum in 255 steps: every value within half a step, the
// minimum exact, a constant row exact.
TEST(FeatureCodecTest, Int8RowsAreWithinHalfAStepOfTheirValues) {
  const int64_t rows = 64, dim = 100;
  std::vector<float> x = RandomRows(rows * dim, 2);
  for (int64_t j = 0; j < dim; ++j) x[5 * dim + j] = 0.75f;  // a constant row
  const std::vector<float> back = RoundTrip(*FeatureStorageFromName("int8"), x, rows);
  for (int64_t r = 0; r < rows; ++r) {
    float lo = x[r * dim], hi = lo;
    for (int64_t j = 0; j < dim; ++j) {
      lo = std::min(lo, x[r * dim + j]);
      hi = std::max(hi, x[r * dim + j]);
    }
    const float step = (hi - lo) / 255;
    for (int64_t j = 0; j < dim; ++j) {
      const float v = x[r * dim + j];
      EXPECT_LE(std::fabs(back[r * dim + j] - v), step / 2 * 1.001f + 1e-6f) << "row " << r << " value " << v;
      if (v == lo) {
        EXPECT_EQ(back[r * dim + j], v);
      }
    }
  }
  for (int64_t j = 0; j < dim; ++j) EXPECT_EQ(back[5 * dim + j], 0.75f);
}

// Values on a row's own grid of quarter steps come back exactly, whatever the codec: what the
// training tests use to compare codecs on identical inputs.
TEST(FeatureCodecTest, ValuesOnTheirRowsGridComeBackExactly) {
  const int64_t rows = 10, dim = 256;
  std::vector<float> x(rows * dim);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < dim; ++j) x[r * dim + j] = r - 3 + static_cast<float>((j * 37 + r) % 256) / 4;
  }
  for (const char* name : {"float16", "bfloat16", "int8"}) {
    const std::vector<float> back = RoundTrip(*FeatureStorageFromName(name), x, rows);
    if (std::string(name) == "bfloat16") {
      for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::fabs(back[i] - x[i]), std::ldexp(std::fabs(x[i]), -8));
    } else {
      EXPECT_EQ(back, x) << name;
    }
  }
}

TEST(FeatureCodecTest, EncodeRowsConvertsAnyNumericInputAndNamesANonFiniteRow) {
  const std::vector<int32_t> ints = {0, 255, 10, 20, 275, 147};  // rows spanning 255: steps of 1
  std::vector<uint8_t> out(2 * (3 + kInt8RowTail));
  ASSERT_EQ(EncodeRows(*FeatureStorageFromName("int8"), DType::kInt32, ints.data(), 2, 3, out.data()), -1);
  std::vector<float> back(6);
  DecodeRows(FeatureCodec::kInt8, out.data(), 2, 3, back.data());
  EXPECT_EQ(back, (std::vector<float>{0, 255, 10, 20, 275, 147}));
  std::vector<float> x = {1, 2, 3, 4, std::numeric_limits<float>::infinity(), 6};
  EXPECT_EQ(EncodeRows(*FeatureStorageFromName("int8"), DType::kFloat32, x.data(), 2, 3, out.data()), 1);
  std::vector<uint16_t> halves(6);
  EXPECT_EQ(EncodeRows(*FeatureStorageFromName("bfloat16"), DType::kFloat32, x.data(), 2, 3, halves.data()), -1);
}

std::string ConfigWithFeat(const std::string& field) {
  return R"({"format_version": 1, "graph_name": "g", "num_nodes": 5, "num_edges": 7,
    "num_parts": 1, "node_map": {"_N": [[0, 5]]}, "edge_map": {"_N:_E:_N": [[0, 7]]},
    "node_fields": [)" + field + "]}";
}

TEST(FeatureCodecTest, ConfigsRecordTheCodecAndRefuseOneThatDoesNotFitTheRows) {
  testing::TempDir dir;
  std::ofstream(dir.Sub("g.json")) << ConfigWithFeat(R"({"name": "feat", "dtype": "uint8", "shape": [108], "codec": "int8"})");
  auto c = LoadPartitionConfig(dir.Sub("g.json"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->node_fields[0].codec, FeatureCodec::kInt8);
  EXPECT_EQ(c->node_fields[0].decoded_elems(), 100);
  EXPECT_EQ(c->node_fields[0].row_bytes(), 108u);
  auto text = PartitionConfigToJson(*c, "");
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("\"codec\": \"int8\""), std::string::npos) << *text;

  for (const char* bad : {R"({"name": "feat", "dtype": "float32", "shape": [108], "codec": "int8"})",
                          R"({"name": "feat", "dtype": "uint8", "shape": [8], "codec": "int8"})",
                          R"({"name": "feat", "dtype": "uint8", "shape": [4, 27], "codec": "int8"})",
                          R"({"name": "feat", "dtype": "float32", "shape": [4], "codec": "bfloat16"})",
                          R"({"name": "feat", "dtype": "uint8", "shape": [108], "codec": "int4"})",
                          R"({"name": "feat", "dtype": "uint8", "shape": [108], "codec": 8})"}) {
    std::ofstream(dir.Sub("g.json")) << ConfigWithFeat(bad);
    auto b = LoadPartitionConfig(dir.Sub("g.json"));
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(std::string(b.status().message()).find("node_fields 'feat' codec"), std::string::npos) << b.status();
  }
}

}  // namespace
}  // namespace fanout::core

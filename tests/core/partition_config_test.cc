#include "core/partition_config.h"

#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace fanout::core {
namespace {

using testing::TempDir;

// A one-partition config with a node field of row shape `shape` (JSON text).
std::string Config(const std::string& shape) {
  return R"({"format_version": 1, "graph_name": "g", "num_nodes": 5, "num_edges": 7,
    "num_parts": 1, "node_map": {"_N": [[0, 5]]}, "edge_map": {"_N:_E:_N": [[0, 7]]},
    "node_fields": [{"name": "feat", "dtype": "float32", "shape": )" + shape + "}]}";
}

TEST(PartitionConfigTest, LoadsFieldSchemas) {
  TempDir dir;
  std::ofstream(dir.Sub("g.json")) << Config("[4, 2]");
  auto c = LoadPartitionConfig(dir.Sub("g.json"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->node_fields.size(), 1u);
  EXPECT_EQ(c->node_fields[0].row_shape, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(c->node_fields[0].row_bytes(), 32u);
}

TEST(PartitionConfigTest, RejectsRowShapesWhoseSizeIsNegativeOrOverflows) {
  // Found by fuzzing (issue 11): these loaded, and row_elems()/row_bytes() then returned a
  // negative size or overflowed int64 (undefined behaviour).
  TempDir dir;
  for (const char* shape : {"[-1]", "[4611686018427387904, 4]", "[2305843009213693952]"}) {
    std::ofstream(dir.Sub("g.json")) << Config(shape);
    auto c = LoadPartitionConfig(dir.Sub("g.json"));
    ASSERT_FALSE(c.ok()) << shape;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
    EXPECT_NE(std::string(c.status().message()).find("node_fields 'feat' shape"), std::string::npos)
        << c.status();
    EXPECT_NE(std::string(c.status().message()).find("g.json"), std::string::npos) << c.status();
  }
}

TEST(PartitionConfigTest, RejectsFloatsWhereIntegersBelong) {
  // Found by fuzzing (issue 11): get<int>() on 1.8e37 is an out-of-range float-to-int
  // conversion (undefined behaviour); now an error naming the key.
  TempDir dir;
  std::string text = Config("[4]");
  for (const char* key : {"\"num_parts\": 1,", "\"num_nodes\": 5,"}) {
    std::string bad = text;
    std::string replacement = std::string(key).substr(0, std::string(key).find(':') + 2) + "1.8e37,";
    bad.replace(bad.find(key), std::string(key).size(), replacement);
    std::ofstream(dir.Sub("g.json")) << bad;
    auto c = LoadPartitionConfig(dir.Sub("g.json"));
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(std::string(c.status().message()).find("must be an integer"), std::string::npos) << c.status();
  }
  std::ofstream(dir.Sub("g.json")) << Config("[2.5e30]");
  auto c = LoadPartitionConfig(dir.Sub("g.json"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("shape must list integers"), std::string::npos) << c.status();
}

}  // namespace
}  // namespace fanout::core

#include "core/partition_config.h"

#include <fstream>
#include <utility>
#include <vector>
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

// The link relations: "link_etypes" (a list), or a partition from before several relations could
// be split with "link_etype" alone; each must be an edge type, once; saving writes both forms
// when there is one, the list alone when there are more.
TEST(PartitionConfigTest, ReadsLinkRelationsInEitherForm) {
  TempDir dir;
  auto typed = [](const std::string& link) {
    return R"({"format_version": 1, "graph_name": "g", "num_nodes": 5, "num_edges": 7, "num_parts": 1,
      "ntypes": {"a": 0, "b": 1}, "etypes": {"a:r:b": 0, "b:s:a": 1},
      "node_map": {"a": [[0, 3]], "b": [[3, 5]]}, "edge_map": {"a:r:b": [[0, 4]], "b:s:a": [[4, 7]]})" +
           link + "}";
  };
  const std::pair<std::string, std::vector<std::string>> good[] = {
      {R"(, "link_etype": "a:r:b")", {"a:r:b"}},
      {R"(, "link_etypes": ["b:s:a", "a:r:b"])", {"b:s:a", "a:r:b"}},
      {"", {}},
  };
  for (const auto& [link, want] : good) {
    std::ofstream(dir.Sub("g.json")) << typed(link);
    auto c = LoadPartitionConfig(dir.Sub("g.json"));
    ASSERT_TRUE(c.ok()) << c.status() << " " << link;
    EXPECT_EQ(c->link_etypes, want) << link;
    auto text = PartitionConfigToJson(*c, "");
    ASSERT_TRUE(text.ok()) << text.status();
    std::ofstream(dir.Sub("again.json")) << *text;
    auto again = LoadPartitionConfig(dir.Sub("again.json"));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->link_etypes, want) << link;
    EXPECT_EQ(text->find("\"link_etype\"") != std::string::npos, want.size() == 1) << *text;
  }
  for (const auto& [link, error] : {std::pair<std::string, std::string>{R"(, "link_etypes": ["a:q:b"])", "'a:q:b' is not one of the etypes"},
                                    {R"(, "link_etypes": ["a:r:b", "a:r:b"])", "'a:r:b' is listed twice"},
                                    {R"(, "link_etypes": [])", "non-empty list"},
                                    {R"(, "link_etype": "b:q:a")", "'b:q:a' is not one of the etypes"}}) {
    std::ofstream(dir.Sub("g.json")) << typed(link);
    auto c = LoadPartitionConfig(dir.Sub("g.json"));
    ASSERT_FALSE(c.ok()) << link;
    EXPECT_NE(std::string(c.status().message()).find(error), std::string::npos) << c.status();
  }
}

}  // namespace
}  // namespace fanout::core

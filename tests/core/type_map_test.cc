// Node and edge types (core/type_map.h) and their place in the partition config.
#include "core/type_map.h"

#include <fstream>

#include "core/partition_config.h"
#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace fanout::core {
namespace {

// Two partitions [0, 5) and [5, 9); in each, papers then authors: partition 0 has papers
// [0, 3) and authors [3, 5), partition 1 papers [5, 6) and authors [6, 9).
TypeMap PapersAndAuthors() {
  auto m = TypeMap::Make(TypeMap::Kind::kNode, {"paper", "author"}, {{{0, 3}, {5, 6}}, {{3, 5}, {6, 9}}}, {0, 5, 9});
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

TEST(TypeMapTest, EveryIdMapsToItsTypeAndTypeWiseIdAndBack) {
  const TypeMap m = PapersAndAuthors();
  EXPECT_EQ(m.num_types(), 2);
  EXPECT_EQ(m.count(0), 4);
  EXPECT_EQ(m.count(1), 5);
  // Type-wise IDs number a type's nodes partition by partition.
  const std::vector<std::pair<int, int64_t>> want = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1},
                                                     {0, 3}, {1, 2}, {1, 3}, {1, 4}};
  for (int64_t id = 0; id < 9; ++id) {
    EXPECT_EQ(m.ToTypeWise(id), want[id]) << id;
    EXPECT_EQ(m.ToHomogeneous(want[id].first, want[id].second), id) << id;
  }
  EXPECT_EQ(*m.TypeId("author"), 1);
  EXPECT_EQ(m.TypeId("venue").status().message(), "no type 'venue' (this graph has: paper, author)");
}

TEST(TypeMapTest, EmptyRangesAndTheOneTypeGraph) {
  // Partition 1 holds no papers: the type-wise IDs skip it.
  auto m = TypeMap::Make(TypeMap::Kind::kNode, {"paper", "author"}, {{{0, 2}, {4, 4}, {6, 7}}, {{2, 4}, {4, 6}, {7, 7}}}, {0, 4, 6, 7});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->ToTypeWise(6), (std::pair<int, int64_t>{0, 2}));
  EXPECT_EQ(m->ToHomogeneous(0, 2), 6);
  EXPECT_EQ(m->ToHomogeneous(1, 2), 4);
  const TypeMap one = *TypeMap::Single(TypeMap::Kind::kNode, {0, 3, 8});
  EXPECT_EQ(one.name(0), "_N");
  EXPECT_EQ(TypeMap::Single(TypeMap::Kind::kEdge, {0, 3})->name(0), "_N:_E:_N");
  EXPECT_FALSE(TypeMap::Single(TypeMap::Kind::kEdge, {0, 4, 0}).ok());  // not ascending: an error, not a crash
  EXPECT_EQ(one.num_types(), 1);
  for (int64_t id = 0; id < 8; ++id) EXPECT_EQ(one.ToTypeWise(id), (std::pair<int, int64_t>{0, id}));
}

TEST(TypeMapTest, RangesThatDoNotTileEachPartitionInTypeOrderAreRefused) {
  auto gap = TypeMap::Make(TypeMap::Kind::kNode, {"paper", "author"}, {{{0, 3}, {5, 6}}, {{4, 5}, {6, 9}}}, {0, 5, 9});
  EXPECT_EQ(gap.status().message(),
            "node types: 'author' in partition 0 is [4, 5); it must start at 3 (the types of a partition follow each "
            "other in order)");
  auto short_end = TypeMap::Make(TypeMap::Kind::kEdge, {"paper:cites:paper"}, {{{0, 3}, {5, 8}}}, {0, 5, 9});
  EXPECT_NE(short_end.status().message().find("edge types: partition 0's types end at 3, not at the partition's end 5"), std::string::npos)
      << short_end.status();
  auto twice = TypeMap::Make(TypeMap::Kind::kNode, {"a", "a"}, {{{0, 1}}, {{1, 2}}}, {0, 2});
  EXPECT_NE(twice.status().message().find("'a' is listed twice"), std::string::npos) << twice.status();
  auto colon = TypeMap::Make(TypeMap::Kind::kNode, {"a:b"}, {{{0, 2}}}, {0, 2});
  EXPECT_NE(colon.status().message().find("not a type name"), std::string::npos) << colon.status();
  auto not_canonical = TypeMap::Make(TypeMap::Kind::kEdge, {"cites"}, {{{0, 2}}}, {0, 2});
  EXPECT_NE(not_canonical.status().message().find("is not SRC:RELATION:DST"), std::string::npos)
      << not_canonical.status();
  EXPECT_FALSE(CanonicalEdgeType::Parse("paper:cites").ok());
  EXPECT_FALSE(CanonicalEdgeType::Parse("paper::paper").ok());
  EXPECT_EQ(CanonicalEdgeType::Parse("author:writes:paper")->rel, "writes");
}

TEST(TypeMapTest, PartitionConfigsCarryTheirTypesThroughJson) {
  testing::TempDir dir;
  PartitionConfig c;
  c.graph_name = "mag";
  c.num_parts = 2;
  c.num_nodes = 9;
  c.num_edges = 6;
  c.node_bounds = {0, 5, 9};
  c.edge_bounds = {0, 4, 6};
  c.node_types = {"paper", "author"};
  c.node_type_ranges = {{{0, 3}, {5, 6}}, {{3, 5}, {6, 9}}};
  c.edge_types = {{"paper", "cites", "paper"}, {"author", "writes", "paper"}};
  c.edge_type_ranges = {{{0, 1}, {4, 6}}, {{1, 4}, {6, 6}}};
  auto text = PartitionConfigToJson(c, "");
  ASSERT_TRUE(text.ok()) << text.status();
  std::ofstream(dir.Sub("mag.json")) << *text;
  auto back = LoadPartitionConfig(dir.Sub("mag.json"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->node_types, c.node_types);
  EXPECT_EQ(back->node_type_ranges, c.node_type_ranges);
  EXPECT_EQ(back->edge_types, c.edge_types);
  EXPECT_EQ(back->edge_type_ranges, c.edge_type_ranges);
  EXPECT_EQ(back->node_bounds, c.node_bounds);
  EXPECT_EQ(back->edge_bounds, c.edge_bounds);
  EXPECT_EQ(back->EdgeTypes()->name(1), "author:writes:paper");

  // Today's one-type config reads as node type _N and edge type _N:_E:_N.
  PartitionConfig plain = c;
  plain.node_types.clear();
  plain.node_type_ranges.clear();
  plain.edge_types.clear();
  plain.edge_type_ranges.clear();
  std::ofstream(dir.Sub("plain.json")) << *PartitionConfigToJson(plain, "");
  back = LoadPartitionConfig(dir.Sub("plain.json"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->node_types, std::vector<std::string>{"_N"});
  EXPECT_EQ(back->edge_types, (std::vector<CanonicalEdgeType>{{"_N", "_E", "_N"}}));
  EXPECT_EQ(back->node_bounds, c.node_bounds);

  // An edge type whose end is not a node type is refused, naming both.
  std::string bad = *text;
  bad.replace(bad.find("author:writes:paper"), 19, "venue:writes:paper");
  bad.replace(bad.find("author:writes:paper"), 19, "venue:writes:paper");
  std::ofstream(dir.Sub("bad.json")) << bad;
  auto refused = LoadPartitionConfig(dir.Sub("bad.json"));
  EXPECT_NE(refused.status().message().find("edge type 'venue:writes:paper' names node type 'venue'"),
            std::string::npos)
      << refused.status();
}

}  // namespace
// DGL's rule for naming an edge type: its canonical form, or a relation name one type alone has.
TEST(TypeMapTest, EdgeTypesFoundByCanonicalFormOrUniqueRelationName) {
  const std::vector<CanonicalEdgeType> types = {
      {"author", "writes", "paper"}, {"paper", "cites", "paper"}, {"paper", "rev_writes", "author"},
      {"user", "cites", "paper"}};
  EXPECT_EQ(FindEdgeType(types, "writes").value(), 0);
  EXPECT_EQ(FindEdgeType(types, "paper:rev_writes:author").value(), 2);
  EXPECT_EQ(FindEdgeType(types, "user:cites:paper").value(), 3);
  absl::Status s = FindEdgeType(types, "cites").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "'cites' names several edge types; write one as SRC:REL:DST (paper:cites:paper, user:cites:paper)");
  s = FindEdgeType(types, "likes").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "no edge type 'likes' (the graph has author:writes:paper, paper:cites:paper, "
                         "paper:rev_writes:author, user:cites:paper)");
  EXPECT_FALSE(FindEdgeType(types, "paper:writes:author").ok());  // the ends matter
}

}  // namespace fanout::core

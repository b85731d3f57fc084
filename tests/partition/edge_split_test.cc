// Link-prediction edge splits: held-out pairs never stored in either direction, negatives never
// linked to their source, counts and determinism.
#include "partition/edge_split.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <utility>

#include "core/partition_config.h"
#include "core/npy.h"
#include "core/partition_store.h"
#include "gtest/gtest.h"
#include "partition/partitioner.h"
#include "tests/testing/testing.h"

namespace fanout::partition {
namespace {

using Pair = std::pair<int64_t, int64_t>;

std::set<Pair> UndirectedPairs(const Dataset& d) {
  std::set<Pair> out;
  const int64_t* e = d.edges.data_as<int64_t>();
  for (int64_t r = 0; r < d.num_edges(); ++r) {
    out.insert({std::min(e[2 * r], e[2 * r + 1]), std::max(e[2 * r], e[2 * r + 1])});
  }
  return out;
}

TEST(EdgeSplitTest, ParsesFractionsAndNamesBadOnes) {
  auto o = ParseEdgeSplit("0.85,0.05,0.10");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_DOUBLE_EQ(o->valid, 0.05);
  EXPECT_DOUBLE_EQ(o->test, 0.10);
  EXPECT_EQ(ParseEdgeSplit("0.8,0.1").status().message(),
            "--edge-split '0.8,0.1': expected three fractions TRAIN,VALID,TEST, e.g. 0.85,0.05,0.10");
  EXPECT_NE(ParseEdgeSplit("0.8,0.1,0.2").status().message().find("sum to 1.1"), std::string::npos);
  EXPECT_NE(ParseEdgeSplit("0.9,x,0.1").status().message().find("'x' is not a fraction"), std::string::npos);
  EXPECT_NE(ParseEdgeSplit("0,0.5,0.5").status().message().find("nothing would train"), std::string::npos);
}

TEST(EdgeSplitTest, HeldOutPairsAndNegativesFollowTheRules) {
  const Dataset d = testing::MakeRandomDataset({.num_nodes = 300, .num_edges = 2000});
  EdgeSplitOptions o{.valid = 0.1, .test = 0.2, .negatives = 3, .seed = 5};
  auto s = SplitEdges(d, o);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::set<Pair> pairs = UndirectedPairs(d);
  const int64_t* e = d.edges.data_as<int64_t>();
  int64_t self_loops = 0;
  for (const Pair& p : pairs) self_loops += p.first == p.second;
  EXPECT_EQ(s->pairs, static_cast<int64_t>(pairs.size()) - self_loops);
  const int64_t valid = static_cast<int64_t>(s->valid_pos.size() / 2), test = static_cast<int64_t>(s->test_pos.size() / 2);
  EXPECT_EQ(valid, std::llround(s->pairs * 0.1));
  EXPECT_EQ(test, std::llround(s->pairs * 0.2));
  EXPECT_EQ(s->train_pairs + valid + test, s->pairs);
  EXPECT_EQ(s->valid_neg.size(), s->valid_pos.size() * 3);
  EXPECT_EQ(s->test_neg.size(), s->test_pos.size() * 3);

  // Every input row of a held-out pair is held out with the same role; no pair is in two sets.
  std::set<Pair> held[3];
  for (int role : {1, 2}) {
    const std::vector<int64_t>& pos = role == 1 ? s->valid_pos : s->test_pos;
    for (size_t i = 0; i < pos.size(); i += 2) {
      const Pair p{std::min(pos[i], pos[i + 1]), std::max(pos[i], pos[i + 1])};
      EXPECT_TRUE(pairs.count(p)) << "a positive that is not an input edge";
      EXPECT_NE(p.first, p.second) << "a self loop held out";
      EXPECT_TRUE(held[role].insert(p).second) << "a pair held out twice";
    }
  }
  for (int64_t r = 0; r < d.num_edges(); ++r) {
    const Pair p{std::min(e[2 * r], e[2 * r + 1]), std::max(e[2 * r], e[2 * r + 1])};
    const int want = held[1].count(p) ? 1 : held[2].count(p) ? 2 : 0;
    EXPECT_EQ(s->role[r], want) << "row " << r;
  }
  // Negatives: the positive's source, and a node it is linked to in neither direction.
  for (int role : {1, 2}) {
    const std::vector<int64_t>& pos = role == 1 ? s->valid_pos : s->test_pos;
    const std::vector<int64_t>& neg = role == 1 ? s->valid_neg : s->test_neg;
    for (size_t i = 0; i < neg.size(); i += 2) {
      const size_t positive = i / 2 / 3;
      EXPECT_EQ(neg[i], pos[2 * positive]);
      EXPECT_NE(neg[i], neg[i + 1]);
      EXPECT_FALSE(pairs.count({std::min(neg[i], neg[i + 1]), std::max(neg[i], neg[i + 1])}))
          << "negative (" << neg[i] << ", " << neg[i + 1] << ") is an edge";
    }
  }
  // Deterministic in the seed.
  auto again = SplitEdges(d, o);
  EXPECT_EQ(again->valid_pos, s->valid_pos);
  EXPECT_EQ(again->test_neg, s->test_neg);
  o.seed = 6;
  EXPECT_NE(SplitEdges(d, o)->valid_pos, s->valid_pos);
}

// Through the partitioner, with reverse edges added: no held-out pair is reachable in any
// partition's stored in- or out-edges, in either direction, and every other input row is stored
// (twice unless a self loop of a one-type graph).
void ExpectPartitionerStoresNoHeldOutPair(const Dataset& d, const EdgeSplitOptions& split,
                                          core::PartitionConfig* loaded = nullptr) {
  testing::TempDir dir;
  PartitionOptions o;
  o.out_dir = dir.Sub("parts");
  o.num_parts = 2;
  o.add_reverse_edges = true;
  o.quiet = true;
  o.edge_split = split;
  auto summary = PartitionDataset(d, o);
  ASSERT_TRUE(summary.ok()) << summary.status();
  auto config = core::LoadPartitionConfig(summary->config_path);
  ASSERT_TRUE(config.ok()) << config.status();
  std::vector<std::unique_ptr<core::PartitionStore>> parts;
  for (int k = 0; k < 2; ++k) {
    auto p = core::PartitionStore::Open(*config, k);
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_TRUE((*p)->LoadOutEdges().ok());  // Neighbors(v, kOut) below
    parts.push_back(std::move(*p));
  }
  auto book = config->NodeBook();
  ASSERT_TRUE(book.ok());
  if (loaded != nullptr) *loaded = *config;
  // (A typed graph's in-edges are per relation: every relation's.)
  const int relations = d.typed() ? static_cast<int>(d.edge_types.size()) * 2 : 1;
  auto linked = [&](int64_t u, int64_t v, core::EdgeDir dir) {
    for (int r = 0; r < relations; ++r) {
      const auto a = parts[book->PartOf(v)]->Neighbors(v, dir, d.typed() && dir == core::EdgeDir::kIn ? r : -1);
      for (int64_t i = 0; i < a.degree; ++i) {
        if (a.nbr(i) == u) return true;
      }
    }
    return false;
  };
  int64_t held_out = 0;
  for (const char* f : {"valid_pos", "test_pos"}) {
    auto pos = core::NpyArray::Map(dir.Sub(std::string("parts/link/") + f + ".npy"));
    ASSERT_TRUE(pos.ok()) << pos.status();
    const int64_t* x = pos->data_as<int64_t>();
    if (d.typed()) {  // each pair's relation beside it, and the pair of that relation's types
      auto rel = core::NpyArray::Map(dir.Sub(std::string("parts/link/") + std::string(f).substr(0, std::string(f).find("_pos")) + "_rel.npy"));
      ASSERT_TRUE(rel.ok()) << rel.status();
      ASSERT_EQ(rel->rows(), pos->rows());
      auto types = config->NodeTypes();
      ASSERT_TRUE(types.ok());
      for (int64_t i = 0; i < pos->rows(); ++i) {
        const int64_t r = rel->data_as<int64_t>()[i];
        ASSERT_TRUE(r >= 0 && r < static_cast<int64_t>(config->link_etypes.size())) << f << " pair " << i;
        auto t = core::CanonicalEdgeType::Parse(config->link_etypes[r]);
        ASSERT_TRUE(t.ok());
        EXPECT_EQ(types->name(types->ToTypeWise(x[2 * i]).first), t->src) << f << " pair " << i;
        EXPECT_EQ(types->name(types->ToTypeWise(x[2 * i + 1]).first), t->dst) << f << " pair " << i;
      }
    }
    for (int64_t i = 0; i < pos->rows(); ++i, ++held_out) {
      const int64_t u = x[2 * i], v = x[2 * i + 1];
      for (core::EdgeDir dir : {core::EdgeDir::kIn, core::EdgeDir::kOut}) {
        EXPECT_FALSE(linked(u, v, dir)) << f << " pair " << i;
        EXPECT_FALSE(linked(v, u, dir)) << f << " pair " << i;
      }
    }
  }
  EXPECT_EQ(held_out, summary->link_valid + summary->link_test);
  // Stored edges: the rows of train pairs in both directions, self loops once.
  EdgeSplitOptions again = split;
  again.seed = o.seed;
  auto s = SplitEdges(d, again);
  ASSERT_TRUE(s.ok()) << s.status();
  int64_t want = 0;
  const int64_t* e = d.edges.data_as<int64_t>();
  for (int64_t r = 0; r < d.num_edges(); ++r) {
    // (A typed graph stores a self loop's reverse too: it is an edge of rev_REL.)
    if (s->role[r] == 0) want += !d.typed() && e[2 * r] == e[2 * r + 1] ? 1 : 2;
  }
  EXPECT_EQ(summary->num_edges, want);
}

// A typed graph splits one relation (--link-etype): its rows only, its pairs (source type,
// destination type), negatives pairing the positive's source with an unlinked node of the
// destination type; the partitioner stores no held-out pair in the relation or its reverse and
// records the relation in the config.
TEST(EdgeSplitTest, TypedGraphSplitsOneRelationWithNegativesOfItsDestinationType) {
  const Dataset d = testing::MakeTypedDataset(3, 200, 150, 8);
  EXPECT_NE(SplitEdges(d, {.valid = 0.1, .test = 0.1}).status().message().find(
                "--edge-split on a typed graph needs --link-etype: the relation to predict (one of author:writes:paper"),
            std::string::npos);
  EXPECT_NE(SplitEdges(d, {.valid = 0.1, .test = 0.1, .relations = {"likes"}}).status().message().find(
                "--link-etype likes: no edge type 'likes' (the graph has author:writes:paper"),
            std::string::npos);
  EXPECT_NE(SplitEdges(testing::MakeRandomDataset({.num_nodes = 50, .num_edges = 200}),
                       {.valid = 0.1, .test = 0.1, .relations = {"writes"}})
                .status()
                .message()
                .find("--link-etype applies to typed graphs only"),
            std::string::npos);
  const EdgeSplitOptions o{.valid = 0.1, .test = 0.1, .negatives = 2, .relations = {"writes"}};
  auto s = SplitEdges(d, o);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->relations, std::vector<int>{0});  // author:writes:paper
  EXPECT_EQ(s->valid_rel, std::vector<int64_t>(s->valid_pos.size() / 2, 0));
  const int author = d.NodeTypeIndex("author"), paper = d.NodeTypeIndex("paper");
  for (int64_t r = 0; r < d.num_edges(); ++r) {
    if (s->role[r] != 0) {
      EXPECT_EQ(d.EdgeTypeOf(r), 0) << "row " << r;
    }
  }
  std::set<Pair> writes;
  const int64_t* e = d.edges.data_as<int64_t>();
  for (int64_t r = d.edge_type_offsets[0]; r < d.edge_type_offsets[1]; ++r) writes.insert({e[2 * r], e[2 * r + 1]});
  for (const auto* pos : {&s->valid_pos, &s->test_pos}) {
    ASSERT_FALSE(pos->empty());
    const auto& neg = pos == &s->valid_pos ? s->valid_neg : s->test_neg;
    ASSERT_EQ(neg.size(), pos->size() * 2);
    for (size_t i = 0; i < pos->size(); i += 2) {
      EXPECT_EQ(d.NodeTypeOf((*pos)[i]), author);
      EXPECT_EQ(d.NodeTypeOf((*pos)[i + 1]), paper);
      EXPECT_TRUE(writes.count({(*pos)[i], (*pos)[i + 1]}));
      for (size_t j = i * 2; j < i * 2 + 4; j += 2) {
        EXPECT_EQ(neg[j], (*pos)[i]);
        EXPECT_EQ(d.NodeTypeOf(neg[j + 1]), paper);
        EXPECT_FALSE(writes.count({neg[j], neg[j + 1]}));
      }
    }
  }
  core::PartitionConfig config;
  ExpectPartitionerStoresNoHeldOutPair(d, o, &config);
  EXPECT_EQ(config.link_etypes, std::vector<std::string>{"author:writes:paper"});
}

// Several relations at once (--link-etype writes,cites): each split on its own with the same
// fractions, the first exactly as it is alone; each pair's relation beside it; negatives of the
// pair's relation's destination type; nothing held out stored; the config lists both.
TEST(EdgeSplitTest, SeveralRelationsSplitEachOnItsOwn) {
  const Dataset d = testing::MakeTypedDataset(5, 200, 150, 8);
  EXPECT_NE(SplitEdges(d, {.valid = 0.1, .test = 0.1, .relations = {"writes", "author:writes:paper"}})
                .status()
                .message()
                .find("author:writes:paper is named twice"),
            std::string::npos);
  const EdgeSplitOptions o{.valid = 0.1, .test = 0.1, .negatives = 2, .relations = {"writes", "cites"}};
  auto both = SplitEdges(d, o);
  ASSERT_TRUE(both.ok()) << both.status();
  auto alone = SplitEdges(d, {.valid = 0.1, .test = 0.1, .negatives = 2, .relations = {"writes"}});
  ASSERT_TRUE(alone.ok()) << alone.status();
  ASSERT_EQ(both->relations, (std::vector<int>{0, 1}));
  ASSERT_EQ(both->relation_counts.size(), 2u);
  // The first relation's pairs come first and are the one-relation split's.
  ASSERT_GT(both->valid_pos.size(), alone->valid_pos.size());
  EXPECT_TRUE(std::equal(alone->valid_pos.begin(), alone->valid_pos.end(), both->valid_pos.begin()));
  EXPECT_TRUE(std::equal(alone->test_neg.begin(), alone->test_neg.end(), both->test_neg.begin()));
  const int64_t* e = d.edges.data_as<int64_t>();
  std::set<Pair> of[2];
  for (int r = 0; r < 2; ++r) {
    for (int64_t row = d.edge_type_offsets[r]; row < d.edge_type_offsets[r + 1]; ++row) of[r].insert({e[2 * row], e[2 * row + 1]});
    const auto& [pairs, train, valid, test] = both->relation_counts[r];
    EXPECT_EQ(valid, std::llround(pairs * 0.1)) << r;
    EXPECT_EQ(test, std::llround(pairs * 0.1)) << r;
    EXPECT_EQ(train, pairs - valid - test) << r;
  }
  int64_t held[2] = {0, 0};
  for (const auto* pos : {&both->valid_pos, &both->test_pos}) {
    const auto& rel = pos == &both->valid_pos ? both->valid_rel : both->test_rel;
    const auto& neg = pos == &both->valid_pos ? both->valid_neg : both->test_neg;
    ASSERT_EQ(rel.size() * 2, pos->size());
    for (size_t i = 0; i < rel.size(); ++i) {
      const int r = static_cast<int>(rel[i]);
      ASSERT_TRUE(r == 0 || r == 1);
      ++held[r];
      const int64_t u = (*pos)[2 * i], v = (*pos)[2 * i + 1];
      EXPECT_TRUE(of[r].count({u, v})) << "pair " << i << " is not an edge of its relation " << r;
      for (size_t j = 0; j < 2; ++j) {
        EXPECT_EQ(neg[4 * i + 2 * j], u);
        EXPECT_EQ(d.NodeTypeOf(neg[4 * i + 2 * j + 1]), d.NodeTypeIndex("paper"));  // both end in paper
      }
    }
  }
  for (int r = 0; r < 2; ++r) EXPECT_EQ(held[r], both->relation_counts[r][2] + both->relation_counts[r][3]) << r;
  for (int64_t row = 0; row < d.num_edges(); ++row) {
    if (both->role[row] != 0) EXPECT_LT(d.EdgeTypeOf(row), 2) << "row " << row;
  }
  core::PartitionConfig config;
  ExpectPartitionerStoresNoHeldOutPair(d, o, &config);
  EXPECT_EQ(config.link_etypes, (std::vector<std::string>{"author:writes:paper", "paper:cites:paper"}));
}

TEST(EdgeSplitTest, PartitionerStoresNoHeldOutPairInEitherDirection) {
  ExpectPartitionerStoresNoHeldOutPair(testing::MakeRandomDataset({.num_nodes = 400, .num_edges = 3000}),
                                       {.valid = 0.05, .test = 0.1, .negatives = 1});
}

// The first `count` input rows that are not self loops and join pairs not seen before, from row
// `from` on, as [u, v] flattened (reversed when `reverse`, to hold out a pair by its other
// direction).
std::vector<int64_t> SomeEdges(const Dataset& d, int64_t from, int64_t count, bool reverse, std::set<Pair>* seen) {
  std::vector<int64_t> out;
  const int64_t* e = d.edges.data_as<int64_t>();
  for (int64_t r = from; r < d.num_edges() && static_cast<int64_t>(out.size()) < 2 * count; ++r) {
    const int64_t u = e[2 * r], v = e[2 * r + 1];
    if (u == v || !seen->insert({std::min(u, v), std::max(u, v)}).second) continue;
    out.insert(out.end(), {reverse ? v : u, reverse ? u : v});
  }
  return out;
}

void WriteCsv(const std::string& path, const std::vector<int64_t>& pairs) {
  std::ofstream f(path);
  for (size_t i = 0; i < pairs.size(); i += 2) f << pairs[i] << "," << pairs[i + 1] << "\n";
}

void WritePairsNpy(const std::string& path, const std::vector<int64_t>& pairs) {
  ASSERT_TRUE(core::WriteNpy(path, core::DType::kInt64, {static_cast<int64_t>(pairs.size() / 2), 2}, pairs.data()).ok());
}

// A user's split (--edge-split-files): valid pairs in .npy given in the reverse direction of
// their input rows, test pairs in CSV with one pair that is no input edge (OGB lists held-out
// edges outside the graph); valid negatives as OGB-style destinations [n, k], test negatives
// drawn.
TEST(EdgeSplitTest, UsersFilesHoldOutTheirPairsAndDrawOnlyMissingNegatives) {
  testing::TempDir dir;
  const Dataset d = testing::MakeRandomDataset({.num_nodes = 300, .num_edges = 2000});
  const std::set<Pair> input = UndirectedPairs(d);
  std::set<Pair> seen;
  const std::vector<int64_t> valid = SomeEdges(d, 0, 5, /*reverse=*/true, &seen);
  std::vector<int64_t> test = SomeEdges(d, 100, 3, /*reverse=*/false, &seen);
  int64_t a = 0, b = 1;  // a pair that is not an input edge
  while (input.count({std::min(a, b), std::max(a, b)})) ++b;
  test.insert(test.end(), {a, b});
  WritePairsNpy(dir.Sub("valid_pos.npy"), valid);
  WriteCsv(dir.Sub("test_pos.csv"), test);
  const std::vector<int64_t> dst = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
  ASSERT_TRUE(core::WriteNpy(dir.Sub("valid_neg_dst.npy"), core::DType::kInt64, {5, 2}, dst.data()).ok());

  EdgeSplitOptions o{.negatives = 4, .seed = 1, .files_dir = dir.path()};
  ASSERT_TRUE(o.enabled());
  auto s = SplitEdges(d, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->valid_pos, valid);
  EXPECT_EQ(s->test_pos, test);
  EXPECT_EQ(s->pairs, static_cast<int64_t>(std::count_if(input.begin(), input.end(),
                                                         [](const Pair& p) { return p.first != p.second; })));
  EXPECT_EQ(s->train_pairs, s->pairs - 8) << "5 valid and 3 test pairs are input edges";
  const int64_t* e = d.edges.data_as<int64_t>();
  std::set<Pair> valid_set, test_set;
  for (size_t i = 0; i < valid.size(); i += 2) valid_set.insert({std::min(valid[i], valid[i + 1]), std::max(valid[i], valid[i + 1])});
  for (size_t i = 0; i < test.size(); i += 2) test_set.insert({std::min(test[i], test[i + 1]), std::max(test[i], test[i + 1])});
  for (int64_t r = 0; r < d.num_edges(); ++r) {
    const Pair p{std::min(e[2 * r], e[2 * r + 1]), std::max(e[2 * r], e[2 * r + 1])};
    EXPECT_EQ(s->role[r], valid_set.count(p) ? 1 : test_set.count(p) ? 2 : 0) << "row " << r;
  }
  // Given negatives: (the positive's source, each of its destinations), in order.
  ASSERT_EQ(s->valid_neg.size(), 20u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(s->valid_neg[2 * i], valid[2 * (i / 2)]);
    EXPECT_EQ(s->valid_neg[2 * i + 1], dst[i]);
  }
  // Drawn negatives: --eval-negatives per positive, from its source, linked to it in neither direction.
  ASSERT_EQ(s->test_neg.size(), 4u * 4 * 2);
  for (size_t i = 0; i < s->test_neg.size(); i += 2) {
    EXPECT_EQ(s->test_neg[i], test[2 * (i / 2 / 4)]);
    EXPECT_FALSE(input.count({std::min(s->test_neg[i], s->test_neg[i + 1]), std::max(s->test_neg[i], s->test_neg[i + 1])}));
  }
  ExpectPartitionerStoresNoHeldOutPair(d, o);
}

TEST(EdgeSplitTest, UsersFilesWithErrorsAreRefusedNamingTheFileAndRow) {
  const Dataset d = testing::MakeRandomDataset({.num_nodes = 50, .num_edges = 200});
  auto error_with = [&](const std::function<void(const testing::TempDir&)>& write) {
    testing::TempDir dir;
    WritePairsNpy(dir.Sub("valid_pos.npy"), {1, 2, 3, 4});
    WriteCsv(dir.Sub("test_pos.csv"), {5, 6});
    write(dir);
    auto s = SplitEdges(d, {.files_dir = dir.path()});
    return s.ok() ? std::string() : std::string(s.status().message());
  };
  EXPECT_EQ(error_with([](const testing::TempDir&) {}), "") << "the base case is valid";
  EXPECT_NE(error_with([](const testing::TempDir& dir) { WritePairsNpy(dir.Sub("valid_pos.npy"), {1, 2, 3, 50}); })
                .find("valid_pos.npy row 1: node ID 50 is outside [0, 50)"),
            std::string::npos);
  EXPECT_NE(error_with([](const testing::TempDir& dir) { WriteCsv(dir.Sub("test_pos.csv"), {5, 6, 7, 7}); })
                .find("test_pos.csv row 1: (7, 7) is a self loop"),
            std::string::npos);
  EXPECT_NE(error_with([](const testing::TempDir& dir) { WriteCsv(dir.Sub("test_pos.csv"), {2, 1}); })
                .find("the pair (1, 2) is in both valid_pos and test_pos"),
            std::string::npos);
  EXPECT_NE(error_with([](const testing::TempDir& dir) { WritePairsNpy(dir.Sub("valid_neg.npy"), {1, 9, 1, 8, 3, 7}); })
                .find("3 negative pairs for 2 valid positives"),
            std::string::npos);
  EXPECT_NE(error_with([](const testing::TempDir& dir) {
              WritePairsNpy(dir.Sub("test_neg.npy"), {5, 9});
              WritePairsNpy(dir.Sub("test_neg_dst.npy"), {9});
            }).find("keep one"),
            std::string::npos);
  EXPECT_NE(error_with([](const testing::TempDir& dir) { std::filesystem::remove(dir.Sub("test_pos.csv")); })
                .find("no test_pos.npy"),
            std::string::npos);
}

}  // namespace
}  // namespace fanout::partition

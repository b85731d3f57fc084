// Link-prediction edge splits: held-out pairs never stored in either direction, negatives never
// linked to their source, counts and determinism.
#include "partition/edge_split.h"

#include <algorithm>
#include <set>
#include <utility>

#include "core/partition_config.h"
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
// (twice unless a self loop).
TEST(EdgeSplitTest, PartitionerStoresNoHeldOutPairInEitherDirection) {
  testing::TempDir dir;
  Dataset d = testing::MakeRandomDataset({.num_nodes = 400, .num_edges = 3000});
  PartitionOptions o;
  o.out_dir = dir.Sub("parts");
  o.num_parts = 2;
  o.add_reverse_edges = true;
  o.quiet = true;
  o.edge_split = {.valid = 0.05, .test = 0.1, .negatives = 1};
  auto summary = PartitionDataset(d, o);
  ASSERT_TRUE(summary.ok()) << summary.status();
  auto config = core::LoadPartitionConfig(summary->config_path);
  ASSERT_TRUE(config.ok()) << config.status();
  std::vector<std::unique_ptr<core::PartitionStore>> parts;
  for (int k = 0; k < 2; ++k) {
    auto p = core::PartitionStore::Open(*config, k);
    ASSERT_TRUE(p.ok()) << p.status();
    parts.push_back(std::move(*p));
  }
  auto book = config->NodeBook();
  ASSERT_TRUE(book.ok());
  auto linked = [&](int64_t u, int64_t v, core::EdgeDir dir) {
    const auto a = parts[book->PartOf(v)]->Neighbors(v, dir);
    return std::find(a.nbrs, a.nbrs + a.degree, u) != a.nbrs + a.degree;
  };
  int64_t held_out = 0;
  for (const char* f : {"valid_pos", "test_pos"}) {
    auto pos = core::NpyArray::Map(dir.Sub(std::string("parts/link/") + f + ".npy"));
    ASSERT_TRUE(pos.ok()) << pos.status();
    const int64_t* x = pos->data_as<int64_t>();
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
  const std::set<Pair> pairs = UndirectedPairs(d);
  auto s = SplitEdges(d, {.valid = 0.05, .test = 0.1, .negatives = 1, .seed = o.seed});
  int64_t want = 0;
  const int64_t* e = d.edges.data_as<int64_t>();
  for (int64_t r = 0; r < d.num_edges(); ++r) {
    if (s->role[r] == 0) want += e[2 * r] == e[2 * r + 1] ? 1 : 2;
  }
  EXPECT_EQ(summary->num_edges, want);
}

}  // namespace
}  // namespace fanout::partition

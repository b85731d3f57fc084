#include "base/process_stats.h"
#include "partition/partitioner.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/partition_config.h"
#include "gtest/gtest.h"
#include "partition/readers.h"
#include "tests/testing/testing.h"

namespace fanout::partition {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

struct Case {
  PartMethod method;
  int parts;
  bool reverse;
  bool remove_self_loops;
  bool remove_duplicates;
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string m = c.method == PartMethod::kMetis ? "metis" : c.method == PartMethod::kRandom ? "random" : "file";
  return m + "_k" + std::to_string(c.parts) + (c.reverse ? "_rev" : "") +
         (c.remove_self_loops ? "_noloops" : "") + (c.remove_duplicates ? "_dedup" : "");
}

class PartitionInvariantsTest : public ::testing::TestWithParam<Case> {};

TEST_P(PartitionInvariantsTest, HoldOnRandomGraphs) {
  const Case& c = GetParam();
  for (uint64_t seed : {1, 2}) {
    TempDir dir;
    Dataset d = testing::MakeRandomDataset({.num_nodes = 300 + 37 * static_cast<int64_t>(seed),
                                            .num_edges = 2000, .seed = seed});
    PartitionOptions o;
    o.out_dir = dir.Sub("out");
    o.num_parts = c.parts;
    o.method = c.method;
    o.add_reverse_edges = c.reverse;
    o.remove_self_loops = c.remove_self_loops;
    o.remove_duplicate_edges = c.remove_duplicates;
    o.quiet = true;
    o.seed = seed;
    if (c.method == PartMethod::kFile) {
      // An arbitrary external assignment, including an empty partition when K > 1.
      std::string text;
      for (int64_t v = 0; v < d.num_nodes; ++v) text += std::to_string((v * 7) % std::max(1, c.parts - 1)) + "\n";
      testing::WriteText(dir.Sub("assign.txt"), text);
      o.assignment_file = dir.Sub("assign.txt");
    }
    auto s = PartitionDataset(d, o);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->self_loops, 10);
    EXPECT_GE(s->duplicates, 20);  // found and reported whether removed or kept
    testing::ExpectValidPartition(d, o, s->config_path);
    EXPECT_EQ(s->edge_cut, testing::EdgeCut(s->config_path));
    // Only the final folder exists next to the output: no staging leftovers.
    int entries = 0;
    for (const auto& e : fs::directory_iterator(dir.path())) entries += e.path().filename() != "assign.txt";
    EXPECT_EQ(entries, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Methods, PartitionInvariantsTest,
    ::testing::Values(Case{PartMethod::kMetis, 1, false, false, false},
                      Case{PartMethod::kMetis, 2, true, false, false},
                      Case{PartMethod::kMetis, 4, true, true, true},
                      Case{PartMethod::kMetis, 3, false, false, true},
                      Case{PartMethod::kRandom, 1, false, false, false},
                      Case{PartMethod::kRandom, 4, true, false, false},
                      Case{PartMethod::kRandom, 5, false, true, false},
                      Case{PartMethod::kFile, 3, true, false, true},
                      Case{PartMethod::kFile, 1, false, false, false}),
    CaseName);

PartitionOptions Opts(const std::string& out, int k, PartMethod m) {
  PartitionOptions o;
  o.out_dir = out;
  o.num_parts = k;
  o.method = m;
  o.add_reverse_edges = true;
  o.quiet = true;
  return o;
}

TEST(PartitionerTest, MetisCutsFarFewerEdgesThanRandomAndBalancesTraining) {
  TempDir dir;
  Dataset d = testing::MakeRandomDataset({.num_nodes = 4000, .num_edges = 30000, .num_classes = 4});
  auto metis = PartitionDataset(d, Opts(dir.Sub("m"), 4, PartMethod::kMetis));
  auto random = PartitionDataset(d, Opts(dir.Sub("r"), 4, PartMethod::kRandom));
  ASSERT_TRUE(metis.ok() && random.ok());
  EXPECT_LT(metis->edge_cut, random->edge_cut / 2) << metis->edge_cut << " vs " << random->edge_cut;
  int64_t train_total = 0, train_max = 0;
  for (int64_t t : metis->part_train) {
    train_total += t;
    train_max = std::max(train_max, t);
  }
  EXPECT_EQ(train_total, static_cast<int64_t>(d.train_idx.size()));
  EXPECT_LT(train_max, 1.1 * train_total / 4);
  // Random partitioning is exactly balanced in nodes.
  for (int64_t n : random->part_nodes) EXPECT_EQ(n, 1000);
}

TEST(PartitionerTest, SameSeedSameOutput) {
  TempDir dir;
  Dataset d = testing::MakeRandomDataset({.num_nodes = 800, .num_edges = 5000});
  for (PartMethod m : {PartMethod::kMetis, PartMethod::kRandom}) {
    auto a = PartitionDataset(d, Opts(dir.Sub("a"), 3, m));
    auto b = PartitionDataset(d, Opts(dir.Sub("b"), 3, m));
    ASSERT_TRUE(a.ok() && b.ok());
    for (const char* f : {"part0/graph/orig_nids.npy", "part2/graph/indices.npy", "part1/node_data/feat.npy"}) {
      std::ifstream fa(dir.Sub("a/") + f, std::ios::binary), fb(dir.Sub("b/") + f, std::ios::binary);
      std::stringstream sa, sb;
      sa << fa.rdbuf();
      sb << fb.rdbuf();
      EXPECT_EQ(sa.str(), sb.str()) << f;
    }
    fs::remove_all(dir.Sub("a"));
    fs::remove_all(dir.Sub("b"));
  }
}

// A node count whose per-node arrays cannot fit (IDs that are not 0..N-1) is refused up front,
// naming where the count came from; an unknown amount of memory refuses nothing.
TEST(PartitionerTest, ANodeCountThatCannotFitIsRefusedNamingItsSource) {
  Dataset d = testing::MakeRandomDataset({.num_nodes = 1000, .num_edges = 40});
  d.num_nodes_source = "the largest node ID in edges.csv, 999 on line 7";
  absl::Status s = CheckNodeCountFits(d, 1000 * 24 - 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(std::string(s.message()).find("1000 nodes (from the largest node ID in edges.csv, 999 on line 7)"),
            std::string::npos) << s;
  EXPECT_NE(std::string(s.message()).find("Node IDs must be 0..N-1"), std::string::npos) << s;
  EXPECT_TRUE(CheckNodeCountFits(d, 1000 * 24).ok());
  EXPECT_TRUE(CheckNodeCountFits(d, -1).ok());
  EXPECT_GT(base::UsableMemoryBytes(), 0);
}

TEST(PartitionerTest, BadOptionsFailBeforeWritingAnything) {
  TempDir dir;
  Dataset d = testing::MakeRandomDataset({.num_nodes = 20, .num_edges = 40});
  struct Bad {
    PartitionOptions o;
    std::string expected;
  };
  std::vector<Bad> cases;
  auto base = [&] { return Opts(dir.Sub("out"), 2, PartMethod::kMetis); };
  cases.push_back({base(), ""});
  cases.back().o.num_parts = 0;
  cases.back().expected = "--num-parts must be at least 1, got 0";
  cases.push_back({base(), ""});
  cases.back().o.num_parts = 21;
  cases.back().expected = "--num-parts must be in [1, 20] (the number of nodes), got 21";
  cases.push_back({base(), ""});
  cases.back().o.method = PartMethod::kFile;
  cases.back().expected = "--assignment";
  cases.push_back({base(), ""});
  cases.back().o.method = PartMethod::kFile;
  cases.back().o.assignment_file = dir.Sub("missing.txt");
  cases.back().expected = "missing.txt";
  cases.push_back({base(), ""});
  cases.back().o.graph_name = "a/b";
  cases.back().expected = "--graph-name";
  cases.push_back({base(), ""});
  cases.back().o.halo_hops = 2;
  cases.back().expected = "--halo-hops";
  cases.push_back({base(), ""});
  cases.back().o.edge_split.files_dir = dir.Sub("no-such-split");
  cases.back().expected = "--edge-split-files " + dir.Sub("no-such-split") + ": not a readable folder";
  for (const auto& c : cases) {
    auto s = PartitionDataset(d, c.o);
    ASSERT_FALSE(s.ok()) << c.expected;
    EXPECT_NE(std::string(s.status().message()).find(c.expected), std::string::npos) << s.status();
    EXPECT_TRUE(fs::is_empty(dir.path())) << "left something behind after: " << s.status();
  }
}

TEST(PartitionerTest, RefusesToClobberUnlessAsked) {
  TempDir dir;
  Dataset d = testing::MakeRandomDataset({.num_nodes = 50, .num_edges = 200});
  PartitionOptions o = Opts(dir.Sub("out"), 2, PartMethod::kRandom);
  ASSERT_TRUE(PartitionDataset(d, o).ok());
  auto again = PartitionDataset(d, o);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  o.overwrite = true;
  o.num_parts = 3;
  auto s = PartitionDataset(d, o);
  ASSERT_TRUE(s.ok()) << s.status();
  auto cfg = core::LoadPartitionConfig(s->config_path);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->num_parts, 3);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

// The real Cora citation graph from ../shared/data (skipped when absent).
class CoraTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string root = testing::SharedDataDir();
    if (root.empty() || !fs::exists(root + "/cora/raw/edge.csv.gz")) {
      GTEST_SKIP() << "../shared/data/cora not present";
    }
    auto d = ReadDataset({.input_dir = root + "/cora"});
    ASSERT_TRUE(d.ok()) << d.status();
    data_ = std::move(*d);
  }
  Dataset data_;
};

TEST_F(CoraTest, ReadsThePublishedShape) {
  EXPECT_EQ(data_.num_nodes, 2708);
  EXPECT_EQ(data_.num_edges(), 5278);
  EXPECT_EQ(data_.FindNodeField("feat")->data.shape(), (std::vector<int64_t>{2708, 1433}));
  EXPECT_EQ(data_.num_classes, 7);
  EXPECT_EQ(data_.train_idx.size(), 140u);
  EXPECT_EQ(data_.valid_idx.size(), 500u);
  EXPECT_EQ(data_.test_idx.size(), 1000u);
}

TEST_F(CoraTest, InvariantsAndMetisBeatsRandom) {
  for (int k : {2, 4}) {
    TempDir dir;
    PartitionOptions m = Opts(dir.Sub("metis"), k, PartMethod::kMetis);
    PartitionOptions r = Opts(dir.Sub("random"), k, PartMethod::kRandom);
    auto ms = PartitionDataset(data_, m);
    auto rs = PartitionDataset(data_, r);
    ASSERT_TRUE(ms.ok()) << ms.status();
    ASSERT_TRUE(rs.ok()) << rs.status();
    EXPECT_EQ(ms->num_edges, 10556);
    testing::ExpectValidPartition(data_, m, ms->config_path);
    testing::ExpectValidPartition(data_, r, rs->config_path);
    // Cora's METIS cut is a few percent of edges; random cuts (K-1)/K of them.
    EXPECT_LT(ms->edge_cut * 4, rs->edge_cut) << "k=" << k << " metis " << ms->edge_cut << " random " << rs->edge_cut;
  }
}

}  // namespace
}  // namespace fanout::partition

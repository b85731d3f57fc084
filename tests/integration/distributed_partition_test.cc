// fanout-partition --distributed (issue 30) run as users run it: under mpirun with 1 to 4 ranks on
// this machine. The output must be what the single-machine tool writes: byte for byte for the same
// assignment, and every partition invariant for PT-Scotch's and the random one.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "core/npy.h"
#include "core/partition_config.h"
#include "gtest/gtest.h"
#include "partition/partitioner.h"
#include "partition/readers.h"
#include "tests/testing/testing.h"

namespace fanout {
namespace {

namespace fs = std::filesystem;
using base::StrCat;
using testing::TempDir;

#define SKIP_WITHOUT_MPI() \
  if (testing::MpirunPath().empty()) GTEST_SKIP() << "mpirun not installed (scripts/setup.sh installs Open MPI)"

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Every file under `a` and `b` (but the marker and the config) equal byte for byte, and the
// configs equal but for the "build" record (which tool, how many ranks, the peaks) and, when
// `same_method` is false, "part_method".
void ExpectSameOutput(const std::string& a, const std::string& b, const std::string& name, bool same_method = true) {
  auto files = [](const std::string& root) {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (!e.is_regular_file()) continue;
      const std::string rel = fs::relative(e.path(), root).string();
      if (rel.find('/') != std::string::npos) out.push_back(rel);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  const std::vector<std::string> fa = files(a), fb = files(b);
  ASSERT_EQ(fa, fb);
  EXPECT_GT(fa.size(), 10u);
  for (const std::string& f : fa) EXPECT_TRUE(Slurp(a + "/" + f) == Slurp(b + "/" + f)) << f << " differs";
  nlohmann::json ja = nlohmann::json::parse(Slurp(a + "/" + name + ".json"));
  nlohmann::json jb = nlohmann::json::parse(Slurp(b + "/" + name + ".json"));
  EXPECT_EQ(jb["build"]["tool"], "fanout-partition --distributed");
  ja.erase("build"), jb.erase("build");
  if (!same_method) ja.erase("part_method"), jb.erase("part_method");
  EXPECT_EQ(ja, jb);
}

struct Input {
  partition::Dataset d;
  std::string dir;
};

// A community graph with self loops, repeated edges, an edge field and a split, in the plain layout.
Input WriteInput(const TempDir& dir, testing::RandomGraphSpec spec, const std::string& name = "g") {
  Input in;
  in.dir = dir.Sub(name);
  fs::create_directories(in.dir);
  testing::WritePlainLayout(testing::MakeRandomDataset(spec), in.dir);
  auto d = partition::ReadDataset({.input_dir = in.dir});
  EXPECT_TRUE(d.ok()) << d.status();
  if (d.ok()) in.d = std::move(*d);
  return in;
}

std::string WriteAssignment(const TempDir& dir, int64_t n, int k, uint64_t seed) {
  std::vector<int64_t> a(n);
  std::mt19937_64 rng(seed);
  for (int64_t& x : a) x = static_cast<int64_t>(rng() % k);
  const std::string path = dir.Sub(StrCat("assign", seed, ".npy"));
  EXPECT_TRUE(core::WriteNpy(path, a).ok());
  return path;
}

int Distributed(int ranks, const std::vector<std::string>& flags, std::string* out, std::string* err,
                const std::vector<std::string>& mpi_flags = {}) {
  std::vector<std::string> args = {FANOUT_PARTITION_BIN, "--distributed"};
  args.insert(args.end(), flags.begin(), flags.end());
  return testing::RunMpi(ranks, args, out, err, mpi_flags);
}

TEST(DistributedPartitionTest, SameFilesAsTheSerialToolForTheSameAssignment) {
  SKIP_WITHOUT_MPI();
  TempDir dir;
  Input in = WriteInput(dir, {.num_nodes = 700, .num_edges = 5000, .self_loops = 15, .duplicates = 40});
  const std::string assign = WriteAssignment(dir, 700, 4, 7);
  struct Variant {
    bool reverse, remove_loops, remove_dups;
    int halo;
    bool int8;  // --feature-dtype int8 (the serial tool's input compressed likewise)
  };
  int run = 0;
  for (Variant v : {Variant{true, false, false, 1, false}, Variant{false, true, true, 0, true}}) {
    if (v.int8) {
      ASSERT_TRUE(partition::CompressNodeFeatures(&in.d, *core::FeatureStorageFromName("int8")).ok());
    }
    partition::PartitionOptions o;
    o.num_parts = 4;
    o.method = partition::PartMethod::kFile;
    o.assignment_file = assign;
    o.add_reverse_edges = v.reverse;
    o.remove_self_loops = v.remove_loops;
    o.remove_duplicate_edges = v.remove_dups;
    o.halo_hops = v.halo;
    o.quiet = true;
    o.out_dir = dir.Sub(StrCat("serial", run));
    ASSERT_TRUE(partition::PartitionDataset(in.d, o).ok());
    std::vector<std::string> flags = {"--input", in.dir, "--num-parts", "4", "--part-method", "file", "--assignment",
                                      assign, "--halo-hops", std::to_string(v.halo), "--quiet"};
    if (v.reverse) flags.push_back("--add-reverse-edges");
    if (v.remove_loops) flags.insert(flags.end(), {"--self-loops", "remove"});
    if (v.remove_dups) flags.insert(flags.end(), {"--duplicate-edges", "remove"});
    if (v.int8) flags.insert(flags.end(), {"--feature-dtype", "int8"});
    // Fewer ranks than partitions (a rank writes two), as many, and one rank alone.
    for (int ranks : {1, 3, 4}) {
      const std::string out = dir.Sub(StrCat("dist", run, "-", ranks));
      std::vector<std::string> f = flags;
      f.insert(f.end(), {"--out", out});
      std::string err;
      ASSERT_EQ(Distributed(ranks, f, nullptr, &err), 0) << err;
      ExpectSameOutput(o.out_dir, out, "g");
      testing::ExpectValidPartition(in.d, o, out + "/g.json");
    }
    ++run;
  }
}

// PT-Scotch on the graph itself (small graphs), and on the graph contracted by label propagation
// over two or three levels (--scotch-max-edges below the graph's edges), refined on the way back.
// A typed graph (fanout-generate --preset mag, the typed .npy layout): per-type node ranges,
// relation-major edge type ranges, rev_REL relations, type-wise original IDs, per-type fields and
// masks, all as the serial tool writes them.
TEST(DistributedPartitionTest, TypedGraphSameFilesAsTheSerialTool) {
  SKIP_WITHOUT_MPI();
  TempDir dir;
  std::string err;
  ASSERT_EQ(testing::RunProcess({FANOUT_GENERATE_BIN, "--preset", "mag", "--scale", "0.002", "--feat-dim", "8",
                                 "--format", "npy", "--out", dir.Sub("mag"), "--seed", "3"},
                                nullptr, &err),
            0)
      << err;
  auto d = partition::ReadDataset({.input_dir = dir.Sub("mag")});
  ASSERT_TRUE(d.ok()) << d.status();
  const std::string assign = WriteAssignment(dir, d->num_nodes, 3, 9);
  for (const bool reverse : {true, false}) {
    partition::PartitionOptions o;
    o.num_parts = 3;
    o.method = partition::PartMethod::kFile;
    o.assignment_file = assign;
    o.add_reverse_edges = reverse;
    o.quiet = true;
    o.out_dir = dir.Sub(StrCat("serial-", reverse));
    ASSERT_TRUE(partition::PartitionDataset(*d, o).ok());
    for (int ranks : {2, 4}) {
      const std::string out = dir.Sub(StrCat("dist-", reverse, "-", ranks));
      std::vector<std::string> flags = {"--input", dir.Sub("mag"), "--num-parts", "3", "--part-method", "file",
                                        "--assignment", assign, "--out", out, "--quiet"};
      if (reverse) flags.push_back("--add-reverse-edges");
      ASSERT_EQ(Distributed(ranks, flags, nullptr, &err), 0) << err;
      ExpectSameOutput(o.out_dir, out, "mag");
    }
  }
  // PT-Scotch on the typed graph: the summary lists the types, and the output is what the serial
  // tool (whose typed partitions typed_partition_test checks) writes for the same assignment.
  std::string text;
  ASSERT_EQ(Distributed(2, {"--input", dir.Sub("mag"), "--num-parts", "2", "--out", dir.Sub("scotch"),
                            "--add-reverse-edges", "--scotch-max-edges", "2000"},
                        &text, &err),
            0)
      << err;
  EXPECT_NE(text.find("edge types:       author:affiliated_with:institution 2088"), std::string::npos) << text;
  auto cfg = core::LoadPartitionConfig(dir.Sub("scotch/mag.json"));
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  std::vector<int64_t> part(d->num_nodes, -1);
  for (int k = 0; k < 2; ++k) {
    auto orig = core::NpyArray::Map(cfg->PartPath(k, core::PartFiles::kOrigNids));
    ASSERT_TRUE(orig.ok()) << orig.status();
    for (int64_t i = 0; i < orig->rows(); ++i) {
      const int64_t id = cfg->node_bounds[k] + i;
      int t = 0;
      while (!(id >= cfg->node_type_ranges[t][k].first && id < cfg->node_type_ranges[t][k].second)) ++t;
      part[d->node_type_offsets[t] + orig->data_as<int64_t>()[i]] = k;
    }
  }
  EXPECT_EQ(std::count(part.begin(), part.end(), -1), 0);
  ASSERT_TRUE(core::WriteNpy(dir.Sub("scotch-assign.npy"), part).ok());
  partition::PartitionOptions o;
  o.num_parts = 2;
  o.add_reverse_edges = true;
  o.method = partition::PartMethod::kFile;
  o.assignment_file = dir.Sub("scotch-assign.npy");
  o.quiet = true;
  o.out_dir = dir.Sub("scotch-serial");
  ASSERT_TRUE(partition::PartitionDataset(*d, o).ok());
  ExpectSameOutput(o.out_dir, dir.Sub("scotch"), "mag", /*same_method=*/false);
}

TEST(DistributedPartitionTest, PtScotchOnTwoAndFourRanksCutsLikeMetis) {
  SKIP_WITHOUT_MPI();
  TempDir dir;
  Input in = WriteInput(dir, {.num_nodes = 3000, .num_edges = 24000, .feat_dim = 4, .num_classes = 6});
  partition::PartitionOptions o;
  o.num_parts = 4;
  o.add_reverse_edges = true;
  o.quiet = true;
  o.out_dir = dir.Sub("metis");
  ASSERT_TRUE(partition::PartitionDataset(in.d, o).ok());
  const int64_t metis_cut = testing::EdgeCut(o.out_dir + "/g.json");
  o.method = partition::PartMethod::kRandom;
  o.out_dir = dir.Sub("random");
  ASSERT_TRUE(partition::PartitionDataset(in.d, o).ok());
  const int64_t random_cut = testing::EdgeCut(o.out_dir + "/g.json");
  o.method = partition::PartMethod::kMetis;
  for (int ranks : {2, 4}) {
    for (int parts : {3, 4}) {
     for (const bool contract : {false, true}) {
      const std::string out = dir.Sub(StrCat("d", ranks, "-", parts, "-", contract));
      std::string stdout_text, err;
      ASSERT_EQ(Distributed(ranks, {"--input", in.dir, "--num-parts", std::to_string(parts), "--out", out,
                                    "--add-reverse-edges", "--scotch-max-edges", contract ? "1000" : "0"},
                            &stdout_text, &err),
                0)
          << err;
      EXPECT_NE(stdout_text.find(StrCat("PT-Scotch k-way on ", ranks, " ranks")), std::string::npos) << stdout_text;
      EXPECT_EQ(stdout_text.find("contracted by label propagation (3000 nodes -> ") != std::string::npos, contract)
          << stdout_text;
      EXPECT_NE(stdout_text.find("per rank at most"), std::string::npos) << stdout_text;
      o.num_parts = parts;
      testing::ExpectValidPartition(in.d, o, out + "/g.json");
      auto cfg = core::LoadPartitionConfig(out + "/g.json");
      ASSERT_TRUE(cfg.ok()) << cfg.status();
      for (int k = 0; k < parts; ++k) {
        const int64_t size = cfg->node_bounds[k + 1] - cfg->node_bounds[k];
        EXPECT_GT(size, 3000 / parts * 0.85) << "partition " << k << " of " << parts;
        EXPECT_LT(size, 3000 / parts * 1.15) << "partition " << k << " of " << parts;
      }
      if (parts == 4) {
        const int64_t cut = testing::EdgeCut(out + "/g.json");
        std::printf("%d ranks%s: cut %lld, serial METIS %lld, random %lld\n", ranks, contract ? ", contracted" : "",
                    static_cast<long long>(cut), static_cast<long long>(metis_cut), static_cast<long long>(random_cut));
        EXPECT_LT(cut, metis_cut * 1.3);
        EXPECT_LT(cut, random_cut / 2);
      }
     }
    }
  }
}

TEST(DistributedPartitionTest, RandomAssignmentIsBalancedAndValid) {
  SKIP_WITHOUT_MPI();
  TempDir dir;
  Input in = WriteInput(dir, {.num_nodes = 1001, .num_edges = 6000});
  std::string err;
  ASSERT_EQ(Distributed(3, {"--input", in.dir, "--num-parts", "4", "--out", dir.Sub("out"), "--part-method", "random",
                            "--seed", "5", "--quiet"},
                        nullptr, &err),
            0)
      << err;
  partition::PartitionOptions o;
  o.num_parts = 4;
  o.method = partition::PartMethod::kRandom;
  testing::ExpectValidPartition(in.d, o, dir.Sub("out/g.json"));
  auto cfg = core::LoadPartitionConfig(dir.Sub("out/g.json"));
  ASSERT_TRUE(cfg.ok());
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(cfg->node_bounds[k + 1] - cfg->node_bounds[k], 250.25, 1.0);
}

// DGL's chunked graph format (metadata.json): edges in text or .npy chunks, node and edge data in
// .npy chunks, read in slices that cross chunk boundaries; the same files as the plain layout's.
TEST(DistributedPartitionTest, DglChunkedInputGivesTheSameFilesAsThePlainLayout) {
  SKIP_WITHOUT_MPI();
  TempDir dir;
  testing::RandomGraphSpec spec{.num_nodes = 500, .num_edges = 3000};
  partition::Dataset d = testing::MakeRandomDataset(spec);
  d.has_split = false;
  fs::create_directories(dir.Sub("plain"));
  testing::WritePlainLayout(d, dir.Sub("plain"));
  const std::string assign = WriteAssignment(dir, 500, 3, 11);
  std::string err;
  ASSERT_EQ(Distributed(2, {"--input", dir.Sub("plain"), "--num-parts", "3", "--part-method", "file", "--assignment",
                            assign, "--add-reverse-edges", "--out", dir.Sub("from-plain"), "--quiet"},
                        nullptr, &err),
            0)
      << err;
  for (std::string format : {"csv", "numpy"}) {
    const std::string root = dir.Sub("chunked-" + format);
    testing::WriteDglChunkedLayout(d, root, format, {0, 1000, 1999, d.num_edges()}, {0, 170, d.num_nodes});
    const std::string out = dir.Sub("from-" + format);
    ASSERT_EQ(Distributed(4, {"--input", root, "--num-parts", "3", "--part-method", "file", "--assignment", assign,
                              "--add-reverse-edges", "--out", out, "--graph-name", "plain", "--quiet"},
                          nullptr, &err),
              0)
        << err;
    ExpectSameOutput(dir.Sub("from-plain"), out, "plain");
  }
}

// A bad node ID in one rank's slice stops every rank; the error names the rank, the file and the
// edge, and nothing is published.
TEST(DistributedPartitionTest, BadInputStopsEveryRankNamingTheRankFileAndEdge) {
  SKIP_WITHOUT_MPI();
  TempDir dir;
  testing::RandomGraphSpec spec{.num_nodes = 300, .num_edges = 2000};
  partition::Dataset d = testing::MakeRandomDataset(spec);
  int64_t* e = static_cast<int64_t*>(d.edges.mutable_data());
  const int64_t bad_row = d.num_edges() - 3;  // in the last rank's slice
  e[2 * bad_row + 1] = 300;
  fs::create_directories(dir.Sub("in"));
  testing::WritePlainLayout(d, dir.Sub("in"));
  std::string err;
  EXPECT_EQ(Distributed(3, {"--input", dir.Sub("in"), "--num-parts", "2", "--out", dir.Sub("out")}, nullptr, &err), 1);
  EXPECT_NE(err.find(StrCat("fanout-partition: error: rank 2 on ")), std::string::npos) << err;
  EXPECT_NE(err.find(StrCat("edges.npy edge ", bad_row, ": node ID 300 is outside [0, 300)")), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir.Sub("out")));
  // What --distributed does not do is refused by name, and other layouts are pointed elsewhere.
  EXPECT_EQ(Distributed(2, {"--input", dir.Sub("in"), "--num-parts", "2", "--out", dir.Sub("out"), "--edge-split",
                            "0.8,0.1,0.1"},
                        nullptr, &err),
            1);
  EXPECT_NE(err.find("--edge-split / --edge-split-files: not available with --distributed"), std::string::npos) << err;
  fs::create_directories(dir.Sub("text"));
  testing::WriteText(dir.Sub("text/edges.csv"), "0,1\n1,2\n");
  EXPECT_EQ(Distributed(2, {"--input", dir.Sub("text"), "--num-parts", "2", "--out", dir.Sub("out")}, nullptr, &err), 1);
  EXPECT_NE(err.find("--distributed reads the plain .npy layout (edges.npy), the typed .npy layout (num_nodes.json) or "
                     "DGL's chunked format"),
            std::string::npos)
      << err;
  // Raw IDs (not 0..N-1): refused before any per-node array is allocated.
  fs::create_directories(dir.Sub("raw"));
  const std::vector<int64_t> raw = {0, 1, 1, 1000000000000, 2, 3};
  ASSERT_TRUE(core::WriteNpy(dir.Sub("raw/edges.npy"), core::DType::kInt64, {3, 2}, raw.data()).ok());
  EXPECT_EQ(Distributed(2, {"--input", dir.Sub("raw"), "--num-parts", "2", "--out", dir.Sub("out")}, nullptr, &err), 1);
  EXPECT_NE(err.find("1000000000001 nodes (from the largest node ID in " + dir.Sub("raw/edges.npy") + ") need at least"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("relabel raw or hashed IDs to consecutive integers"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir.Sub("out")));
}

// A rank that dies mid-job (SIGKILL while edges move) ends every rank: mpirun names the rank and
// the signal, exits non-zero, and no output is published (the staging folder is removed by the
// next run in that folder).
TEST(DistributedPartitionTest, KilledRankEndsEveryRankAndPublishesNothing) {
  SKIP_WITHOUT_MPI();
  TempDir dir;
  Input in = WriteInput(dir, {.num_nodes = 400, .num_edges = 3000});
  std::string err;
  const int rc = Distributed(3, {"--input", in.dir, "--num-parts", "3", "--out", dir.Sub("out")}, nullptr, &err,
                             {"-x", "FANOUT_TEST_KILL_RANK=1:shuffle-edges"});
  EXPECT_NE(rc, 0);
  EXPECT_NE(rc, 124) << "the ranks left waited until the time limit";
  EXPECT_NE(err.find("rank 1"), std::string::npos) << err;
  EXPECT_NE(err.find("signal 9"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir.Sub("out")));
  // mpirun may return while it still ends the other ranks: rank 0 (whose pid names its staging
  // folder) is gone within seconds.
  pid_t rank0 = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(".out.tmp-", 0) == 0) rank0 = std::stoi(name.substr(9));
  }
  ASSERT_GT(rank0, 0) << "rank 0's staging folder";
  EXPECT_TRUE(testing::WaitUntil([&] { return kill(rank0, 0) != 0; }, std::chrono::seconds(30)))
      << "rank 0 (pid " << rank0 << ") outlived the job";
  // The next run publishes, and removes the dead run's staging folder.
  ASSERT_EQ(Distributed(3, {"--input", in.dir, "--num-parts", "3", "--out", dir.Sub("out"), "--quiet"}, nullptr, &err), 0)
      << err;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".out.tmp"), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace fanout

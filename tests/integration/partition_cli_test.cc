// Runs the real fanout-generate and fanout-partition binaries as a user would.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/strings.h"
#include "core/feature_codec.h"
#include "core/npy.h"
#include "core/partition_config.h"
#include "gtest/gtest.h"
#include "partition/readers.h"
#include "tests/testing/testing.h"

namespace fanout {
namespace {

namespace fs = std::filesystem;
using base::StrCat;
using testing::TempDir;

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

RunResult RunTool(const TempDir&, std::vector<std::string> args) {
  RunResult r;
  r.exit_code = testing::RunProcess(args, &r.out, &r.err);
  return r;
}

bool OnlyEntries(const std::string& dir, std::vector<std::string> names) {
  std::vector<std::string> got;
  for (const auto& e : fs::directory_iterator(dir)) got.push_back(e.path().filename().string());
  std::sort(got.begin(), got.end());
  std::sort(names.begin(), names.end());
  return got == names;
}

TEST(PartitionCliTest, GenerateThenPartitionBothLayouts) {
  for (std::string format : {"npy", "ogb"}) {
    TempDir dir;
    RunResult g = RunTool(dir, {FANOUT_GENERATE_BIN, "--preset", "tiny", "--format", format, "--out",
                            dir.Sub("data"), "--seed", "3"});
    ASSERT_EQ(g.exit_code, 0) << g.err;
    RunResult p = RunTool(dir, {FANOUT_PARTITION_BIN, "--input", dir.Sub("data"), "--num-parts", "2",
                            "--out", dir.Sub("parts"), "--add-reverse-edges"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("edge cut:"), std::string::npos) << p.out;
    EXPECT_NE(p.out.find("peak memory:"), std::string::npos) << p.out;
    auto d = partition::ReadDataset({.input_dir = dir.Sub("data")});
    ASSERT_TRUE(d.ok()) << d.status();
    partition::PartitionOptions o;
    o.num_parts = 2;
    o.add_reverse_edges = true;
    testing::ExpectValidPartition(*d, o, dir.Sub("parts/data.json"));
  }
}

// A typed graph through the tools as a user runs them: fanout-generate --preset mag in both
// typed layouts, fanout-partition with reverse relations and normalised paper features; the
// summary lists the types, and both layouts give the same partition files.
TEST(PartitionCliTest, GenerateThenPartitionATypedGraph) {
  TempDir dir;
  for (std::string format : {"npy", "ogb"}) {
    RunResult g = RunTool(dir, {FANOUT_GENERATE_BIN, "--preset", "mag", "--scale", "0.002", "--feat-dim", "8",
                                "--format", format, "--out", dir.Sub("mag-" + format), "--seed", "3"});
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_NE(g.out.find("ogbn-mag x 0.002): 2269 author, 120 field_of_study, 17 institution, 1473 paper (featured)"),
              std::string::npos)
        << g.out;
    RunResult p = RunTool(dir, {FANOUT_PARTITION_BIN, "--input", dir.Sub("mag-" + format), "--num-parts", "2", "--out",
                                dir.Sub("parts-" + format), "--add-reverse-edges", "--normalize-features",
                                "--graph-name", "mag"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_NE(p.out.find("node types:       author 2269, field_of_study 120, institution 17, paper 1473"),
              std::string::npos)
        << p.out;
    EXPECT_NE(p.out.find("paper:rev_cites:paper"), std::string::npos) << p.out;
  }
  for (const char* file : {"part1/graph/indices.npy", "part0/graph/orig_eids.npy", "part1/node_data/paper/feat.npy",
                           "part0/node_data/paper/train_mask.npy"}) {
    EXPECT_EQ(Slurp(dir.Sub(StrCat("parts-npy/", file))), Slurp(dir.Sub(StrCat("parts-ogb/", file)))) << file;
  }
  // The paper features were normalised per row; the typed config says whose rows they are.
  auto cfg = core::LoadPartitionConfig(dir.Sub("parts-npy/mag.json"));
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  auto feat = cfg->NodeField("paper/feat");
  ASSERT_TRUE(feat.ok()) << feat.status();
  EXPECT_EQ(feat->dtype, core::DType::kFloat32);
  EXPECT_EQ(feat->node_type, "paper");
}

// --normalize-features: every partition's feat rows are float32 and sum to 1 (or are all zero),
// proportional to the input rows (the generated features are >= 0 after the minimum goes).
TEST(PartitionCliTest, NormalizeFeaturesWritesRowsThatSumToOne) {
  TempDir dir;
  RunResult g = RunTool(dir, {FANOUT_GENERATE_BIN, "--preset", "tiny", "--out", dir.Sub("data"), "--seed", "3"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  RunResult p = RunTool(dir, {FANOUT_PARTITION_BIN, "--input", dir.Sub("data"), "--num-parts", "2", "--out",
                              dir.Sub("parts"), "--normalize-features", "--quiet"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(p.out + p.err, "") << "--quiet printed";
  int64_t rows = 0;
  for (int k = 0; k < 2; ++k) {
    auto f = core::NpyArray::Map(dir.Sub(StrCat("parts/part", k, "/node_data/feat.npy")));
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_EQ(f->dtype(), core::DType::kFloat32);
    const float* x = f->data_as<float>();
    for (int64_t r = 0; r < f->rows(); ++r, ++rows) {
      double sum = 0;
      for (int64_t c = 0; c < f->row_elems(); ++c) {
        ASSERT_GE(x[r * f->row_elems() + c], 0.f);
        sum += x[r * f->row_elems() + c];
      }
      if (sum != 0) {
        ASSERT_NEAR(sum, 1.0, 1e-5) << "partition " << k << " row " << r;
      }
    }
  }
  auto d = partition::ReadDataset({.input_dir = dir.Sub("data")});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(rows, d->num_nodes);
}

// --feature-dtype: each partition's feat.npy is stored as asked (int8: uint8 rows of the codes
// and 8 bytes of scale and offset, bfloat16: int16 bits), the config names the codec, and the
// rows decode to the float32 partitioning's rows of the same nodes within the codec's error.
TEST(PartitionCliTest, FeatureDtypeStoresSmallerRowsThatDecodeToTheFloatOnes) {
  TempDir dir;
  RunResult g = RunTool(dir, {FANOUT_GENERATE_BIN, "--preset", "tiny", "--out", dir.Sub("data"), "--seed", "3"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  for (const std::string dtype : {"float32", "float16", "bfloat16", "int8"}) {
    RunResult p = RunTool(dir, {FANOUT_PARTITION_BIN, "--input", dir.Sub("data"), "--num-parts", "2", "--out",
                                dir.Sub(dtype), "--feature-dtype", dtype, "--quiet"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
  }
  auto config = core::LoadPartitionConfig(dir.Sub("int8/data.json"));
  ASSERT_TRUE(config.ok()) << config.status();
  auto schema = std::find_if(config->node_fields.begin(), config->node_fields.end(),
                             [](const core::FieldSchema& f) { return f.name == "feat"; });
  ASSERT_NE(schema, config->node_fields.end());
  EXPECT_EQ(schema->codec, core::FeatureCodec::kInt8);
  EXPECT_EQ(schema->dtype, core::DType::kUInt8);
  for (int k = 0; k < 2; ++k) {
    auto plain = core::NpyArray::Map(dir.Sub(StrCat("float32/part", k, "/node_data/feat.npy")));
    ASSERT_TRUE(plain.ok()) << plain.status();
    const int64_t rows = plain->rows(), dim = plain->row_elems();
    const float* x = plain->data_as<float>();
    for (const std::string dtype : {"float16", "bfloat16", "int8"}) {
      auto stored = core::NpyArray::Map(dir.Sub(StrCat(dtype, "/part", k, "/node_data/feat.npy")));
      ASSERT_TRUE(stored.ok()) << stored.status();
      const core::FeatureStorage to = *core::FeatureStorageFromName(dtype);
      ASSERT_EQ(stored->dtype(), to.dtype) << dtype;
      ASSERT_EQ(stored->shape(), (std::vector<int64_t>{rows, to.stored_elems(dim)})) << dtype;
      std::vector<float> back(rows * dim);
      if (to.codec == core::FeatureCodec::kNone) {
        core::ConvertElements<float>(to.dtype, stored->data(), back.size(), back.data());
      } else {
        core::DecodeRows(to.codec, stored->data(), rows, dim, back.data());
      }
      for (int64_t r = 0; r < rows; ++r) {
        float lo = x[r * dim], hi = lo;
        for (int64_t c = 0; c < dim; ++c) lo = std::min(lo, x[r * dim + c]), hi = std::max(hi, x[r * dim + c]);
        for (int64_t c = 0; c < dim; ++c) {
          const float v = x[r * dim + c];
          const float bound = dtype == "int8" ? (hi - lo) / 255 * 0.501f + 1e-6f
                                              : std::ldexp(std::fabs(v), dtype == "bfloat16" ? -8 : -10) + 1e-7f;
          ASSERT_LE(std::fabs(back[r * dim + c] - v), bound) << dtype << " partition " << k << " row " << r;
        }
      }
    }
  }
}

struct CliError {
  const char* name;
  const char* edges;                   // content of edges.csv ("" keeps a valid file)
  std::vector<std::string> flags;      // extra flags ("{}" replaced by the temp dir)
  int exit_code;
  const char* expected;                // substring of stderr
};

class PartitionCliErrorTest : public ::testing::TestWithParam<CliError> {};

TEST_P(PartitionCliErrorTest, ExitsNonZeroNamingTheCulpritAndWritesNothing) {
  const CliError& c = GetParam();
  TempDir dir;
  fs::create_directories(dir.Sub("in"));
  testing::WriteText(dir.Sub("in/edges.csv"), *c.edges ? c.edges : "0,1\n1,2\n2,3\n3,0\n");
  std::vector<std::string> args = {FANOUT_PARTITION_BIN, "--input", dir.Sub("in"), "--out", dir.Sub("out")};
  for (std::string f : c.flags) {
    if (size_t at = f.find("{}"); at != std::string::npos) f.replace(at, 2, dir.path());
    args.push_back(f);
  }
  RunResult r = RunTool(dir, args);
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
  EXPECT_TRUE(OnlyEntries(dir.path(), {"in"})) << "output or staging folder left behind";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PartitionCliErrorTest,
    ::testing::Values(
        CliError{"malformed_csv", "0,1\n1;2\n", {"--num-parts", "2"}, 1, "edges.csv:2: expected 'src,dst'"},
        CliError{"id_out_of_range", "0,1\n1,7\n", {"--num-parts", "2", "--num-nodes", "5"}, 1, "edges.csv:2: node ID 7"},
        CliError{"too_many_parts", "", {"--num-parts", "5"}, 1, "--num-parts must be in [1, 4]"},
        CliError{"zero_parts", "", {"--num-parts", "0"}, 1, "--num-parts must be at least 1, got 0"},
        CliError{"missing_parts", "", {}, 1, "--num-parts is required"},
        CliError{"unknown_flag", "", {"--num-parts", "2", "--frobnicate"}, 2, "unknown flag --frobnicate"},
        CliError{"bad_method", "", {"--num-parts", "2", "--part-method", "magic"}, 2, "one of metis, random, file"},
        CliError{"missing_assignment", "", {"--num-parts", "2", "--part-method", "file", "--assignment", "{}/nope.txt"}, 1, "nope.txt"},
        // Issue 11: extra columns were silently dropped; nonsense counts silently defaulted.
        CliError{"extra_columns", "0,1\n1,2,0.5\n", {"--num-parts", "2"}, 1, "edges.csv:2: expected 'src,dst' node IDs, got 3 columns"},
        CliError{"trailing_comma", "0,1,\n", {"--num-parts", "1"}, 1, "edges.csv:1: expected 'src,dst' node IDs, got 3 columns"},
        CliError{"negative_threads", "", {"--num-parts", "2", "--num-threads", "-4"}, 1, "--num-threads must be >= 0"},
        CliError{"negative_num_nodes", "", {"--num-parts", "2", "--num-nodes", "-5"}, 1, "--num-nodes must be -1"},
        CliError{"halo_hops", "", {"--num-parts", "2", "--halo-hops", "2"}, 1, "--halo-hops must be 0 or 1"},
        CliError{"feature_dtype_without_features", "", {"--num-parts", "2", "--feature-dtype", "int8"}, 1,
                 "--feature-dtype: the dataset has no node field 'feat'"},
        CliError{"feature_dtype_unknown", "", {"--num-parts", "2", "--feature-dtype", "int4"}, 2,
                 "one of float32, float16, bfloat16, int8"},
        CliError{"bad_input_dir", "", {"--num-parts", "2", "--input", "{}/absent"}, 1, "absent: not a readable folder"},
        // Raw (non-consecutive) IDs: the count inferred from the largest cannot be held; before,
        // std::bad_alloc aborted the tool. With METIS the 32-bit limit speaks first.
        CliError{"sparse_ids", "0,1\n1,1000000000000\n2,3\n", {"--num-parts", "2", "--part-method", "random"}, 1,
                 "1000000000001 nodes (from the largest node ID in "},
        CliError{"sparse_ids_line", "0,1\n1,1000000000000\n2,3\n", {"--num-parts", "2", "--part-method", "random"}, 1,
                 "edges.csv, 1000000000000 on line 2) need at least 22351.7 GiB"},
        CliError{"sparse_ids_advice", "0,1\n1,1000000000000\n2,3\n", {"--num-parts", "2", "--part-method", "random"}, 1,
                 "relabel raw or hashed IDs to consecutive integers"},
        CliError{"huge_num_nodes", "", {"--num-parts", "2", "--part-method", "random", "--num-nodes", "1000000000000000"}, 1,
                 "1000000000000000 nodes (from --num-nodes) need at least"}),
    [](const auto& info) { return std::string(info.param.name); });

// Issue 11: a .npy whose header claims a shape whose byte size wraps around 64 bits (so the
// header alone "matched" the file size) must be refused by name, with no output written.
TEST(PartitionCliTest, CraftedNpyShapesAreRefusedNamingTheFile) {
  struct Case {
    const char* file;
    core::DType dtype;
    std::vector<int64_t> shape;
  } cases[] = {{"edges.npy", core::DType::kInt64, {int64_t{1} << 61, 2}},
               {"node_feat.npy", core::DType::kFloat32, {1000, int64_t{1} << 62}}};
  for (const auto& c : cases) {
    TempDir dir;
    fs::create_directories(dir.Sub("in"));
    if (std::string(c.file) != "edges.npy") {
      testing::WriteText(dir.Sub("in/edges.csv"), "0,1\n1,2\n2,3\n3,0\n");
    }
    // Only the header: with the old unchecked product this was a "complete" file.
    testing::WriteText(dir.Sub(std::string("in/") + c.file), core::EncodeNpyHeader(c.dtype, c.shape));
    RunResult r = RunTool(dir, {FANOUT_PARTITION_BIN, "--input", dir.Sub("in"), "--out", dir.Sub("out"),
                                "--num-parts", "2", "--part-method", "random"});
    EXPECT_EQ(r.exit_code, 1) << c.file << ": " << r.err;
    EXPECT_NE(r.err.find(c.file), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not a valid .npy file"), std::string::npos) << r.err;
    EXPECT_TRUE(OnlyEntries(dir.path(), {"in"})) << "output or staging folder left behind";
  }
}

TEST(PartitionCliTest, ExistingOutputIsKeptUnlessOverwrite) {
  TempDir dir;
  fs::create_directories(dir.Sub("in"));
  testing::WriteText(dir.Sub("in/edges.csv"), "0,1\n1,2\n2,3\n3,0\n");
  std::vector<std::string> args = {FANOUT_PARTITION_BIN, "--input", dir.Sub("in"), "--out",
                                   dir.Sub("out"), "--num-parts", "2"};
  RunResult r = RunTool(dir, args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunTool(dir, args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  // Its own earlier output is replaced with --overwrite.
  args.insert(args.end(), {"--overwrite", "--num-parts", "3"});
  r = RunTool(dir, args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto cfg = core::LoadPartitionConfig(dir.Sub("out/in.json"));
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->num_parts, 3);
  EXPECT_TRUE(OnlyEntries(dir.path(), {"in", "out"})) << "staging folder left behind";
}

// Issue 11: --overwrite deleted any folder at --out, the input dataset included.
TEST(PartitionCliTest, OverwriteNeverDeletesTheUsersData) {
  TempDir dir;
  fs::create_directories(dir.Sub("in/sub"));
  testing::WriteText(dir.Sub("in/edges.csv"), "0,1\n1,2\n2,3\n3,0\n");
  fs::create_directories(dir.Sub("user"));
  testing::WriteText(dir.Sub("user/precious.txt"), "keep me");
  struct Case {
    std::string out, expected;
  } cases[] = {{dir.Sub("user"), "was not written by fanout-partition"},
               {dir.Sub("in"), "is the input"},
               {dir.Sub("in/"), "is the input"},
               {dir.path(), "contains the input"},
               {dir.Sub("in/sub"), "is inside the input"}};
  for (const auto& c : cases) {
    RunResult r = RunTool(dir, {FANOUT_PARTITION_BIN, "--input", dir.Sub("in"), "--out", c.out,
                                "--num-parts", "2", "--overwrite"});
    EXPECT_EQ(r.exit_code, 1) << c.out << ": " << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  }
  EXPECT_EQ(Slurp(dir.Sub("user/precious.txt")), "keep me");
  EXPECT_EQ(Slurp(dir.Sub("in/edges.csv")), "0,1\n1,2\n2,3\n3,0\n");
  EXPECT_TRUE(fs::is_directory(dir.Sub("in/sub")));
  EXPECT_TRUE(OnlyEntries(dir.path(), {"in", "user"})) << "output or staging folder left behind";
  // The assignment file is an input too.
  testing::WriteText(dir.Sub("user/assign.txt"), "0\n1\n0\n1\n");
  RunResult r = RunTool(dir, {FANOUT_PARTITION_BIN, "--input", dir.Sub("in"), "--out", dir.Sub("user"),
                              "--num-parts", "2", "--overwrite", "--part-method", "file", "--assignment",
                              dir.Sub("user/assign.txt")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("contains the input"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(dir.Sub("user/assign.txt")));
}

// Issue 11: a killed run's hidden staging folder stayed forever. The next run removes those of
// dead processes on this host, and leaves a live run's alone.
TEST(PartitionCliTest, NextRunRemovesStaleStagingOfDeadRuns) {
  TempDir dir;
  fs::create_directories(dir.Sub("in"));
  testing::WriteText(dir.Sub("in/edges.csv"), "0,1\n1,2\n2,3\n3,0\n");
  // A pid that is certainly dead: a child that has exited and been reaped.
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  // This test process is alive; its start time from /proc/self/stat (field 22).
  std::string stat = Slurp("/proc/self/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string start;
  for (int f = 3; f <= 22; ++f) fields >> start;
  const std::string dead = StrCat(".out.tmp-", child, "-", 12345, "-1@", host);
  const std::string alive = StrCat(".out.tmp-", getpid(), "-", start, "-2@", host);
  for (const auto& name : {dead, alive}) testing::WriteText(dir.Sub(name + "/part0/graph/indptr.npy"), "x");
  RunResult r = RunTool(dir, {FANOUT_PARTITION_BIN, "--input", dir.Sub("in"), "--out", dir.Sub("out"),
                              "--num-parts", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(OnlyEntries(dir.path(), {"in", "out", alive}));
}

TEST(PartitionCliTest, HelpListsFlags) {
  TempDir dir;
  RunResult r = RunTool(dir, {FANOUT_PARTITION_BIN, "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* f : {"--input", "--num-parts", "--part-method", "--add-reverse-edges", "--balance-train"}) {
    EXPECT_NE(r.out.find(f), std::string::npos) << f;
  }
  // Required flags say so instead of showing a placeholder default.
  EXPECT_NE(r.out.find("number of partitions K (one per machine) [required]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("[default: 0]\n  --out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(also --split-name)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fanout

// fanout-train on typed graphs (issue 29) and on graphs without features, as processes against
// in-process graph servers: resuming with learnable embeddings, link prediction on one relation,
// per-type outputs, featureless training, and accuracy on ../shared/data/imdb.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "base/strings.h"
#include "core/feature_codec.h"
#include "core/npy.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "partition/partitioner.h"
#include "tests/testing/server_cluster.h"
#include "tests/testing/testing.h"
#include "tests/trainer/train_cli_testing.h"

namespace fanout {
namespace {

namespace fs = std::filesystem;
using base::StrCat;
using testing::StartRanks;

// A typed graph with learnable embeddings (issue 29): each rank's last.rank<r>.pt holds the rows
// it owns with their sparse Adam state, and --resume puts them back on the servers, so the
// resumed run's epochs are the uninterrupted run's, to the digit. The servers are the same ones
// throughout (their fields persist from run to run): a fresh start re-initialises rows and state.
TEST(TypedTrainCliTest, ResumingWithLearnableEmbeddingsContinuesTheUninterruptedRun) {
  testing::TempDir dir;
  const std::string config = testing::PartitionTyped(dir, testing::MakeTypedDataset(6, 300, 200, 10), 2);
  ASSERT_FALSE(config.empty());
  testing::ServerCluster cluster;
  cluster.Start(config, {.allow_push = true});
  std::string model = "rgcn";
  auto args = [&](int epochs) {
    return std::vector<std::string>{"--part-config", config, "--servers", cluster.ServerList(), "--model",
                                    model, "--embed-featureless", "8", "--fanouts", "4,4", "--hidden", "16",
                                    "--batch-size", "32", "--epochs", std::to_string(epochs), "--threads", "1",
                                    "--seed", "3", "--heads", "2"};
  };
  auto run = [&](std::vector<std::string> a) {
    auto ranks = StartRanks(2, a);
    EXPECT_EQ(ranks[1]->Finish(), 0) << ranks[1]->output();
    EXPECT_EQ(ranks[0]->Finish(), 0) << ranks[0]->output();
    return ranks[0]->output();
  };
  for (const char* kind : {"rgcn", "rgat", "hgt"}) {  // attention models' parameters resume as R-GCN's do
    SCOPED_TRACE(kind);
    model = kind;
    const std::string ckpt = dir.Sub(StrCat("ckpt-", kind));
    auto a = args(2);
    a.insert(a.end(), {"--checkpoint-dir", ckpt});
    const std::string first = run(a);
    EXPECT_NE(first.find("node classification of node type paper"), std::string::npos) << first;
    EXPECT_NE(first.find(StrCat(kind, " 2 layers")), std::string::npos) << first;
    a = args(4);
    a.insert(a.end(), {"--checkpoint-dir", ckpt, "--resume"});
    const std::string resumed = run(a);
    EXPECT_NE(resumed.find("resumed from"), std::string::npos) << resumed;
    const std::string straight = run(args(4));
    for (const char* epoch : {"epoch 2", "epoch 3"}) {
      const std::regex line(StrCat(epoch, " \\| loss [0-9.]+ \\| train acc [0-9.]+ \\| val acc [0-9.]+"));
      std::smatch x, y;
      ASSERT_TRUE(std::regex_search(resumed, x, line)) << resumed;
      ASSERT_TRUE(std::regex_search(straight, y, line)) << straight;
      EXPECT_EQ(x.str(), y.str());
    }
  }
  model = "rgcn";
  // A checkpoint written without embeddings cannot resume a run with them (its model has no
  // input projection either).
  const std::string plain = dir.Sub("plain");
  auto p = args(1);
  p[7] = "0";  // --embed-featureless 0
  p.insert(p.end(), {"--checkpoint-dir", plain});
  run(p);
  auto q = args(2);
  q.insert(q.end(), {"--checkpoint-dir", plain, "--resume"});
  auto ranks = StartRanks(2, q);
  ranks[1]->Finish();
  EXPECT_NE(ranks[0]->Finish(), 0);
  EXPECT_NE(ranks[0]->output().find("does not fit this model"), std::string::npos) << ranks[0]->output();

  // --embed-grad-dtype bfloat16: the gradient rows cross between the two ranks (Gloo's
  // all-to-all) as bfloat16, so rank 0's collectives send fewer bytes (the same batches, the same
  // rows), and the job trains to the float32 run's loss but for the rounding.
  auto loss_of = [](const std::string& out) {
    std::smatch m;
    const std::regex line("epoch 1 \\| loss ([0-9.]+)");
    return std::regex_search(out, m, line) ? std::stod(m[1]) : -1.0;
  };
  auto collectives_sent = [](const std::string& metrics) {  // rank 0's, over both epochs
    int64_t sent = 0;
    std::ifstream in(metrics);
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json r = nlohmann::json::parse(line);
      if (r.value("event", "") == "epoch") sent += r["wire_bytes"]["collectives"]["sent"].get<int64_t>();
    }
    return sent;
  };
  auto f = args(2);
  f.insert(f.end(), {"--metrics-file", dir.Sub("f32.jsonl")});
  const double f32 = loss_of(run(f));
  auto b = args(2);
  b.insert(b.end(), {"--embed-grad-dtype", "bfloat16", "--metrics-file", dir.Sub("bf16.jsonl")});
  const std::string bf = run(b);
  ASSERT_GT(f32, 0);
  EXPECT_NEAR(loss_of(bf), f32, 0.05 * f32) << bf;
  const int64_t sent32 = collectives_sent(dir.Sub("f32.jsonl")), sent16 = collectives_sent(dir.Sub("bf16.jsonl"));
  EXPECT_GT(sent32, 0);
  EXPECT_LT(sent16, sent32);
  std::printf("collectives sent by rank 0: float32 %lld bytes, bfloat16 gradient rows %lld\n",
              static_cast<long long>(sent32), static_cast<long long>(sent16));
}

// MakeTypedDataset(seed, 400 papers, 300 authors, 10 venues) with structure to learn: author a
// writes papers near paper a * 4/3 (drawn from `rng_seed`), with `cites` paper p cites papers
// just after it, instead of uniformly drawn ones; papers' features say where a paper is (smooth
// in its ID).
partition::Dataset LinkStructuredDataset(uint64_t seed, uint64_t rng_seed, bool cites) {
  partition::Dataset d = testing::MakeTypedDataset(seed, 400, 300, 10);
  std::vector<int64_t> e(d.edges.data_as<int64_t>(), d.edges.data_as<int64_t>() + 2 * d.num_edges());
  std::mt19937_64 rng(rng_seed);
  for (int64_t r = d.edge_type_offsets[0]; r < d.edge_type_offsets[1]; ++r) {
    const int64_t a = e[2 * r] - d.node_type_offsets[1];
    e[2 * r + 1] = std::min<int64_t>(399, a * 4 / 3 + static_cast<int64_t>(rng() % 8));
  }
  for (int64_t r = d.edge_type_offsets[1]; cites && r < d.edge_type_offsets[2]; ++r) {
    e[2 * r + 1] = (e[2 * r] + 1 + static_cast<int64_t>(rng() % 6)) % 400;
  }
  d.edges = core::NpyArray::Adopt(std::move(e), {d.num_edges(), 2});
  std::vector<float> feat(400 * 3);
  for (int64_t p = 0; p < 400; ++p) {
    feat[3 * p] = static_cast<float>(p) / 400;
    feat[3 * p + 1] = std::cos(static_cast<float>(p) * 0.12f);
    feat[3 * p + 2] = std::sin(static_cast<float>(p) * 0.12f);
  }
  d.node_fields[0].data = core::NpyArray::Adopt(std::move(feat), {400, 3});
  return d;
}

// Link prediction on one relation of a typed graph (fanout-partition --edge-split --link-etype):
// 2 partitions, R-GCN with learnable embeddings; it learns (held-out ROC-AUC well above chance),
// and a typed partition without a link relation is refused naming the flags.
TEST(TypedTrainCliTest, LinkPredictionOnOneRelationLearns) {
  testing::TempDir dir;
  partition::Dataset d = LinkStructuredDataset(5, 9, /*cites=*/false);
  partition::PartitionOptions o;
  o.out_dir = dir.Sub("parts");
  o.num_parts = 2;
  o.add_reverse_edges = true;
  o.quiet = true;
  o.edge_split = {.valid = 0.1, .test = 0.1, .negatives = 5, .relations = {"writes"}};
  auto summary = partition::PartitionDataset(d, o);
  ASSERT_TRUE(summary.ok()) << summary.status();
  testing::ServerCluster cluster;
  cluster.Start(summary->config_path, {.allow_push = true});
  auto ranks = StartRanks(2, {"--part-config", summary->config_path, "--servers", cluster.ServerList(), "--task",
                              "link", "--model", "rgcn", "--embed-featureless", "16", "--fanouts", "5,5", "--hidden",
                              "32", "--batch-size", "32", "--epochs", "15", "--lr", "0.02", "--sparse-lr", "0.05", "--eval-every", "5", "--threads", "1"});
  ASSERT_EQ(ranks[1]->Finish(), 0) << ranks[1]->output();
  ASSERT_EQ(ranks[0]->Finish(), 0) << ranks[0]->output();
  const std::string text = ranks[0]->output();
  EXPECT_NE(text.find("link prediction of relation author:writes:paper"), std::string::npos) << text;
  std::smatch m;
  // (Chance is 0.5; this run reaches 0.717 on validation, 0.685 on the 37 test pairs in 15
  // epochs: 30 gave 0.744 and 0.685, at twice the time.)
  ASSERT_TRUE(std::regex_search(text, m, std::regex("best validation roc-auc ([0-9.]+)"))) << text;
  const double valid = std::stod(m[1]);
  EXPECT_GT(valid, 0.65) << text;
  ASSERT_TRUE(std::regex_search(text, m, std::regex("test roc-auc ([0-9.]+)"))) << text;
  std::printf("typed link prediction: best validation roc-auc %.4f, test roc-auc %s\n", valid, m[1].str().c_str());
  EXPECT_GT(std::stod(m[1]), 0.6) << text;

  // The papers' remote rows cached by how often this trainer's own first epoch of typed link
  // batches takes them (--feature-cache-rows presample), which its sampler process maps.
  auto presampled = StartRanks(2, {"--part-config", summary->config_path, "--servers", cluster.ServerList(), "--task",
                                   "link", "--model", "rgcn", "--embed-featureless", "16", "--fanouts", "5,5",
                                   "--hidden", "32", "--batch-size", "32", "--epochs", "1", "--eval-every", "0",
                                   "--no-test", "--threads", "1", "--num-samplers", "1", "--feature-cache-rows",
                                   "presample"});
  ASSERT_EQ(presampled[1]->Finish(), 0) << presampled[1]->output();
  ASSERT_EQ(presampled[0]->Finish(), 0) << presampled[0]->output();
  const std::string cached = presampled[0]->output();
  EXPECT_TRUE(std::regex_search(cached, std::regex("feature cache: [0-9]+ remote rows of 'paper/feat' \\([0-9]+ MiB: the "
                                                   "rows most taken by this trainer's first [0-9]+ batches")))
      << cached;
  EXPECT_TRUE(std::regex_search(cached, std::regex("presampled row cache: [0-9]+ of [0-9]+ remote rows"))) << cached;

  // The same graph partitioned without --link-etype has no relation to predict.
  testing::TempDir plain_dir;
  const std::string plain = testing::PartitionTyped(plain_dir, d, 1);
  std::string out;
  EXPECT_NE(testing::RunProcess({FANOUT_TRAIN_BIN, "--part-config", plain, "--task", "link", "--model", "rgcn",
                                 "--fanouts", "3", "--epochs", "1", "--threads", "1"},
                                &out, &out),
            0);
  EXPECT_NE(out.find("predicts the relations it was partitioned for: partition it with fanout-partition "
                     "--edge-split TRAIN,VALID,TEST --link-etype REL[,REL...]"),
            std::string::npos)
      << out;
}

// Link prediction on two relations at once (--link-etype writes,cites): one model, DistMult with
// a row per relation, positives of both; evaluation ranks each held-out pair against drawn
// negatives of its own relation's destination type and reports MRR and Hits@K over all pairs and
// per relation, on the terminal and in the metrics file; both relations are learnt.
TEST(TypedTrainCliTest, LinkPredictionOnTwoRelationsReportsEach) {
  testing::TempDir dir;
  partition::Dataset d = LinkStructuredDataset(6, 11, /*cites=*/true);
  {
    // A weight of 1 on every edge of both relations (weighted-bce below), weights that leave
    // cites out (1 on writes, 0 on cites), and a field of writes alone.
    for (int r = 0; r < 2; ++r) {
      const int64_t n = d.edge_type_offsets[r + 1] - d.edge_type_offsets[r];
      d.edge_fields.push_back({.name = "w", .data = core::NpyArray::Adopt(std::vector<float>(n, 1.0f), {n}),
                               .edge_type = d.edge_types[r].ToString()});
      d.edge_fields.push_back({.name = "w_writes", .data = core::NpyArray::Adopt(std::vector<float>(n, r == 0 ? 1.0f : 0.0f), {n}),
                               .edge_type = d.edge_types[r].ToString()});
    }
    const int64_t nw = d.edge_type_offsets[1];
    d.edge_fields.push_back({.name = "only_writes", .data = core::NpyArray::Adopt(std::vector<float>(nw, 1.0f), {nw}),
                             .edge_type = d.edge_types[0].ToString()});
  }
  partition::PartitionOptions o;
  o.out_dir = dir.Sub("parts");
  o.num_parts = 2;
  o.add_reverse_edges = true;
  o.quiet = true;
  o.edge_split = {.valid = 0.1, .test = 0.1, .negatives = 5, .relations = {"writes", "cites"}};
  auto summary = partition::PartitionDataset(d, o);
  ASSERT_TRUE(summary.ok()) << summary.status();
  testing::ServerCluster cluster;
  cluster.Start(summary->config_path);  // no --allow-push: the learnable rows are the job's own fields
  const std::string metrics = dir.Sub("m.jsonl");
  auto ranks = StartRanks(2, {"--part-config", summary->config_path, "--servers", cluster.ServerList(), "--task",
                              "link", "--model", "rgcn", "--embed-featureless", "16", "--fanouts", "5,5", "--hidden",
                              "32", "--batch-size", "32", "--epochs", "8", "--lr", "0.02", "--sparse-lr", "0.05",
                              "--eval-every", "4", "--threads", "1", "--scorer", "distmult", "--eval-negatives", "20",
                              "--negative-sampling", "joint", "--negatives", "8", "--metrics-file", metrics});
  ASSERT_EQ(ranks[1]->Finish(), 0) << ranks[1]->output();
  ASSERT_EQ(ranks[0]->Finish(), 0) << ranks[0]->output();
  const std::string text = ranks[0]->output();
  EXPECT_NE(text.find("link prediction of relations author:writes:paper, paper:cites:paper"), std::string::npos)
      << text;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex("fanout-train: test mrr ([0-9.]+)[^;]*; per relation: "
                                                    "author:writes:paper mrr ([0-9.]+)[^;]*\\(([0-9]+) pairs\\); "
                                                    "paper:cites:paper mrr ([0-9.]+)[^;]*\\(([0-9]+) pairs\\)")))
      << text;
  const double all = std::stod(m[1]), writes = std::stod(m[2]), cites = std::stod(m[4]);
  const int64_t nw = std::stoll(m[3]), nc = std::stoll(m[5]);
  EXPECT_EQ(nw + nc, summary->link_test);
  // The whole is the pairs' mean of the parts.
  EXPECT_NEAR(all, (writes * nw + cites * nc) / (nw + nc), 2e-4) << text;
  // Against 20 drawn negatives chance is an MRR of about 0.18; both relations are learnt.
  const size_t at = text.find("fanout-train: test mrr");
  std::printf("two-relation link prediction: %s\n", text.substr(at, text.find('\n', at) - at).c_str());
  EXPECT_GT(writes, 0.3) << text;
  EXPECT_GT(cites, 0.3) << text;
  const auto lines = testing::ReadJsonLines(metrics);
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(lines.back().contains("test_mrr[author:writes:paper]") && lines.back().contains("test_hits@10[paper:cites:paper]"))
      << lines.back();

  // weighted-bce reads each positive's weight from its own relation's field: weights of 1 train
  // exactly as bce, weights of 0 on one relation do not; a field that one link relation lacks is
  // refused naming it. (No learnable rows here: the servers would keep one run's for the next.)
  std::string figures[3];
  for (int weighted = 0; weighted < 3; ++weighted) {
    std::vector<std::string> args = {"--part-config", summary->config_path, "--servers", cluster.ServerList(), "--task",
                                     "link", "--model", "rgcn", "--fanouts", "3,3",
                                     "--hidden", "16", "--batch-size", "32", "--epochs", "2", "--threads", "1",
                                     "--eval-every", "0", "--no-test", "--log-every", "3"};
    if (weighted) {
      args.insert(args.end(), {"--link-loss", "weighted-bce", "--loss-weight-field", weighted == 1 ? "w" : "w_writes"});
    }
    auto run = StartRanks(2, args);
    ASSERT_EQ(run[1]->Finish(), 0) << run[1]->output();
    ASSERT_EQ(run[0]->Finish(), 0) << run[0]->output();
    figures[weighted] = testing::TrainingFigures(run[0]->output());
  }
  EXPECT_NE(figures[0].find("epoch 1 | loss"), std::string::npos) << figures[0];
  EXPECT_EQ(figures[1], figures[0]);
  EXPECT_NE(figures[2], figures[0]);
  auto missing = StartRanks(2, {"--part-config", summary->config_path, "--servers", cluster.ServerList(), "--task",
                                "link", "--model", "rgcn", "--embed-featureless", "8", "--fanouts", "3", "--epochs",
                                "1", "--threads", "1", "--link-loss", "weighted-bce", "--loss-weight-field",
                                "only_writes", "--comm-timeout", "20"});
  missing[1]->Finish();
  EXPECT_NE(missing[0]->Finish(), 0);
  EXPECT_NE(missing[0]->output().find("no edge field 'paper:cites:paper/only_writes'"), std::string::npos)
      << missing[0]->output();
}

// A typed graph's features stored as int8 (fanout-partition --feature-dtype int8) train exactly
// as float32 where the values survive: integers with every row spanning 0 to 255. R-GCN through a
// sampler process, so the codec crosses in the batch file and the typed input decodes.
TEST(TypedTrainCliTest, Int8FeaturesTrainAsTheirFloat32Values) {
  std::string out[2];
  for (int int8 = 0; int8 < 2; ++int8) {
    partition::Dataset d = testing::MakeTypedDataset(8, 300, 200, 10);
    partition::Field& feat = d.node_fields[0];  // MakeTypedDataset's paper features
    ASSERT_EQ(feat.name, "feat");
    const int64_t rows = feat.data.rows(), dim = feat.data.row_elems();
    std::vector<float> grid(rows * dim);
    for (int64_t v = 0; v < rows; ++v) {
      for (int64_t j = 0; j < dim; ++j) grid[v * dim + j] = j == 0 ? 0.0f : j == 1 ? 255.0f : (v * 37 + j) % 256;
    }
    feat.data = core::NpyArray::Adopt(std::move(grid), {rows, dim});
    if (int8 == 1) {
      ASSERT_TRUE(partition::CompressNodeFeatures(&d, *core::FeatureStorageFromName("int8")).ok());
    }
    testing::TempDir dir;
    const std::string config = testing::PartitionTyped(dir, d, 1);
    ASSERT_FALSE(config.empty());
    testing::ServerCluster cluster;  // the featureless types' learnable rows live on the servers
    cluster.Start(config, {.allow_push = true});
    testing::RankProcess run({FANOUT_TRAIN_BIN, "--part-config", config, "--servers", cluster.ServerList(), "--model",
                              "rgcn", "--embed-featureless", "8", "--fanouts", "4,4", "--hidden", "16", "--batch-size",
                              "32", "--epochs", "2", "--threads", "1", "--seed", "3", "--log-every", "2",
                              "--num-samplers", "1"});
    ASSERT_EQ(run.Finish(), 0) << run.output();
    out[int8] = testing::TrainingFigures(run.output());
  }
  EXPECT_NE(out[0].find("test accuracy"), std::string::npos) << out[0];
  EXPECT_EQ(out[1], out[0]);
}

// A small typed job's training figures (testing::TrainingFigures) per value of one flag: `d` on
// one partition served in this process, R-GCN-sized settings and `common`, then `flag` with each of
// `values` ("": the flag left out), into (*out)[value]. Fails the test when a run fails.
void FiguresPerValue(const partition::Dataset& d, const std::vector<std::string>& common,
                     const std::string& flag, const std::vector<std::string>& values,
                     std::map<std::string, std::string>* out) {
  testing::TempDir dir;
  const std::string config = testing::PartitionTyped(dir, d, 1);
  ASSERT_FALSE(config.empty());
  testing::ServerCluster cluster;  // the featureless types' learnable rows live on the servers
  cluster.Start(config, {.allow_push = true});
  for (const std::string& value : values) {
    std::vector<std::string> argv = {FANOUT_TRAIN_BIN, "--part-config", config, "--servers", cluster.ServerList(),
                                     "--embed-featureless", "8", "--fanouts", "4,4", "--hidden", "16",
                                     "--batch-size", "32", "--epochs", "2", "--threads", "1", "--seed", "3",
                                     "--log-every", "2"};
    argv.insert(argv.end(), common.begin(), common.end());
    if (!value.empty()) argv.insert(argv.end(), {flag, value});
    testing::RankProcess run(argv);
    ASSERT_EQ(run.Finish(), 0) << run.output();
    (*out)[value] = testing::TrainingFigures(run.output());
  }
}

// --edge-weight on a typed graph (issue 67): each relation's own field of that name weighs its
// edges in R-GCN, through a sampler process's batch file. Weights of 1 on every relation that has
// the field (the others weigh theirs 1) train exactly as the unweighted model; halving one
// relation's messages changes the run.
TEST(TypedTrainCliTest, EdgeWeightsOfEachRelationWeighItsMessages) {
  partition::Dataset d = testing::MakeTypedDataset(8, 300, 200, 10);
  for (size_t r = 0; r < d.edge_types.size(); ++r) {
    const int64_t n = d.edge_type_offsets[r + 1] - d.edge_type_offsets[r];
    d.edge_fields.push_back({.name = "one",
                             .data = core::NpyArray::Adopt(std::vector<float>(n, 1.0f), {n}),
                             .edge_type = d.edge_types[r].ToString()});
    if (r == 0) {
      d.edge_fields.push_back({.name = "half",
                               .data = core::NpyArray::Adopt(std::vector<float>(n, 0.5f), {n}),
                               .edge_type = d.edge_types[r].ToString()});
    }
  }
  std::map<std::string, std::string> out;
  ASSERT_NO_FATAL_FAILURE(FiguresPerValue(d, {"--model", "rgcn", "--num-samplers", "1"}, "--edge-weight",
                                          {"", "one", "half"}, &out));
  EXPECT_NE(out[""].find("test accuracy"), std::string::npos) << out[""];
  EXPECT_EQ(out["one"], out[""]);
  EXPECT_NE(out["half"], out[""]);
}

// --dropout's default depends on the model where the peers' does (issue 67): R-GAT drops out at
// MLPerf's 0.2 (at the shared 0.5 it lost 1.5 points of test accuracy on a held-out graph), so a
// run without --dropout is the run with --dropout 0.2, not the one with 0.5; --help says so.
TEST(TypedTrainCliTest, RgatDropsOutAtMlperfsRateByDefault) {
  std::map<std::string, std::string> out;
  ASSERT_NO_FATAL_FAILURE(FiguresPerValue(testing::MakeTypedDataset(8, 300, 200, 10),
                                          {"--model", "rgat", "--heads", "2"}, "--dropout", {"", "0.2", "0.5"}, &out));
  EXPECT_NE(out[""].find("test accuracy"), std::string::npos) << out[""];
  EXPECT_EQ(out[""], out["0.2"]);
  EXPECT_NE(out[""], out["0.5"]);
  std::string help, err;
  ASSERT_EQ(testing::RunProcess({FANOUT_TRAIN_BIN, "--help"}, &help, &err), 0) << err;
  EXPECT_NE(help.find("0.5; 0.2 for rgat"), std::string::npos) << help;
}

// --save-embeddings on a typed graph: full-graph inference with the typed input layer (the
// learnable rows read from the servers), a folder per node type in type-wise original ID order;
// the papers' predictions give the test accuracy fanout-train printed (evaluation with every
// neighbour, as inference).
TEST(TypedTrainCliTest, SavedPredictionsPerTypeGiveThePrintedTestAccuracy) {
  testing::TempDir dir;
  const partition::Dataset d = testing::MakeTypedDataset(8, 300, 200, 10);
  const std::string config = testing::PartitionTyped(dir, d, 2);
  ASSERT_FALSE(config.empty());
  testing::ServerCluster cluster;
  cluster.Start(config, {.allow_push = true});
  const std::string out = dir.Sub("emb");
  auto ranks = StartRanks(2, {"--part-config", config, "--servers", cluster.ServerList(), "--model", "rgcn",
                              "--embed-featureless", "8", "--fanouts", "4,4", "--eval-fanouts", "-1,-1", "--hidden",
                              "16", "--batch-size", "32", "--epochs", "3", "--threads", "1", "--save-embeddings", out});
  ASSERT_EQ(ranks[1]->Finish(), 0) << ranks[1]->output();
  ASSERT_EQ(ranks[0]->Finish(), 0) << ranks[0]->output();
  const std::string text = ranks[0]->output();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex("test accuracy ([0-9.]+)"))) << text;
  const double printed = std::stod(m[1]);
  const int64_t counts[3] = {300, 200, 10};
  const char* names[3] = {"paper", "author", "venue"};
  for (int t = 0; t < 3; ++t) {
    auto e = core::NpyArray::Map(StrCat(out, "/", names[t], "/embeddings.npy"));
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->rows(), counts[t]) << names[t];
    EXPECT_TRUE(fs::exists(StrCat(out, "/", names[t], "/predictions.npy"))) << names[t];
  }
  auto pred = core::NpyArray::Map(out + "/paper/predictions.npy");
  ASSERT_TRUE(pred.ok()) << pred.status();
  const int64_t* p = static_cast<const int64_t*>(pred->data());
  const int64_t* label = static_cast<const int64_t*>(d.node_fields[1].data.data());  // MakeTypedDataset's "label"
  int64_t right = 0;
  for (int64_t v : d.test_idx) right += p[v] == label[v] ? 1 : 0;  // papers come first: input ID = paper ID
  EXPECT_NEAR(static_cast<double>(right) / static_cast<double>(d.test_idx.size()), printed, 1e-4);
  std::ifstream info_file(out + "/embeddings.json");
  const nlohmann::json info = nlohmann::json::parse(info_file);
  EXPECT_EQ(info["types"]["author"]["embeddings"]["shape"][0], 200);
}

// A graph with one node type and no features (or told to ignore them, --feature-field ''):
// every node gets a learnable row on the servers, and the model learns from the structure; a
// graph that has the feature field is refused with the flag that ignores it.
TEST(FeaturelessTrainCliTest, LearnableRowsStandInForFeatures) {
  testing::TempDir dir;
  const std::string config = testing::PartitionRandom(dir, {.num_nodes = 600, .num_edges = 4000, .feat_dim = 8}, 2);
  ASSERT_FALSE(config.empty());
  testing::ServerCluster cluster;
  cluster.Start(config, {.allow_push = true});
  std::vector<std::string> args = {"--part-config", config, "--servers", cluster.ServerList(), "--fanouts", "5,5",
                                   "--hidden", "16", "--batch-size", "64", "--epochs", "8", "--threads", "1",
                                   "--embed-featureless", "16", "--sparse-lr", "0.05"};
  auto refused = StartRanks(2, args);
  refused[1]->Finish();
  EXPECT_NE(refused[0]->Finish(), 0);
  EXPECT_NE(refused[0]->output().find("has features 'feat'; learnable rows are for nodes without features "
                                      "(--feature-field '' trains them in place of the features)"),
            std::string::npos)
      << refused[0]->output();
  args.insert(args.end(), {"--feature-field", ""});
  auto ranks = StartRanks(2, args);
  ASSERT_EQ(ranks[1]->Finish(), 0) << ranks[1]->output();
  ASSERT_EQ(ranks[0]->Finish(), 0) << ranks[0]->output();
  const std::string out = ranks[0]->output();
  EXPECT_NE(out.find("model input: _N nodes: learnable rows of 16 on the servers"), std::string::npos) << out;
  std::smatch first, last;
  ASSERT_TRUE(std::regex_search(out, first, std::regex("epoch 0 \\| loss ([0-9.]+)"))) << out;
  ASSERT_TRUE(std::regex_search(out, last, std::regex("epoch 7 \\| loss ([0-9.]+)"))) << out;
  EXPECT_LT(std::stod(last[1]), 0.5 * std::stod(first[1])) << out;
}

// R-GCN with learnable embeddings for the featureless directors and actors on the real typed
// graph in ../shared/data/imdb (issue 29): 2 partitions x 1 trainer against 1 x 1, the same
// global batch (256), five seeds each (a run's own spread is 1-2 points), embeddings held by the
// servers, which every run re-initialises. And R-GAT (issue 44; 4 heads of 16, dropout 0.2 as
// MLPerf's R-GAT) and HGT (8 heads of 8) on the one partition, same settings and seeds otherwise,
// at least as accurate as R-GCN. The measured numbers and the README's DGL reference are in
// docs/benchmarks.md.
TEST(ImdbAccuracyTest, RgcnWithEmbeddingsOnTwoPartitionsMatchesOneAndRgatAndHgtReachIt) {
  const std::string root = testing::SharedDataDir();
  if (root.empty() || !fs::exists(root + "/imdb/raw/num-node-dict.csv.gz")) GTEST_SKIP() << "../shared/data/imdb not present";
  testing::TempDir dir;
  double mean[3] = {0, 0, 0}, rgat = 0, hgt = 0;
  for (int parts : {1, 2}) {
    const std::string out = dir.Sub(StrCat("p", parts));
    std::string err;
    ASSERT_EQ(testing::RunProcess({FANOUT_PARTITION_BIN, "--input", root + "/imdb", "--num-parts",
                                   std::to_string(parts), "--out", out, "--add-reverse-edges", "--normalize-features"},
                                  nullptr, &err),
              0)
        << err;
    testing::ServerCluster cluster;
    server::ServerOptions so;
    so.allow_push = true;  // the embeddings live in the servers' memory
    cluster.Start(out + "/imdb.json", so);
    for (const std::string model : {"rgcn", "rgat", "hgt"}) {
      if (parts == 2 && model != "rgcn") continue;
      for (int seed : {0, 1, 2, 3, 4}) {
        std::vector<std::string> args = {"--part-config", out + "/imdb.json", "--servers", cluster.ServerList(),
                                         "--model", model, "--embed-featureless", "64", "--fanouts", "10,10",
                                         "--hidden", "64", "--lr", "0.01", "--sparse-lr", "0.02", "--batch-size",
                                         std::to_string(256 / parts), "--epochs", "10", "--threads", "1", "--seed",
                                         std::to_string(seed)};
        if (model == "rgat") args.insert(args.end(), {"--heads", "4", "--dropout", "0.2"});  // MLPerf's R-GAT's
        if (model == "hgt") args.insert(args.end(), {"--heads", "8"});
        auto ranks = StartRanks(parts, args);
        for (int r = parts - 1; r >= 0; --r) EXPECT_EQ(ranks[r]->Finish(std::chrono::seconds(300)), 0) << ranks[r]->output();
        std::smatch m;
        const std::string text = ranks[0]->output();
        ASSERT_TRUE(std::regex_search(text, m, std::regex("test accuracy ([0-9.]+)"))) << text;
        EXPECT_NE(text.find("node classification of node type movie"), std::string::npos) << text;
        (model == "rgat" ? rgat : model == "hgt" ? hgt : mean[parts]) += std::stod(m[1]) / 5;
      }
    }
  }
  std::printf("imdb test accuracy with learnable embeddings, mean of 5 seeds: R-GCN on 1 partition %.4f, on 2 partitions "
              "%.4f; R-GAT on 1 partition %.4f; HGT on 1 partition %.4f\n",
              mean[1], mean[2], rgat, hgt);
  EXPECT_GE(mean[1], 0.50);
  EXPECT_GE(mean[2], 0.50);
  EXPECT_NEAR(mean[2], mean[1], 0.02);
  EXPECT_GE(rgat, mean[1] - 0.005) << "R-GAT reaches R-GCN's accuracy";
  EXPECT_GE(hgt, mean[1] - 0.005) << "HGT reaches R-GCN's accuracy";
}

}  // namespace
}  // namespace fanout

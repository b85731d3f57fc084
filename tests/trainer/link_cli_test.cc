// fanout-train --task link as users run it (issue 43): the ranking metrics recomputed from the
// saved embeddings for stored, drawn and joint negatives; every negative sampling, loss and scorer
// training; refusals naming the flag; a resumed job ranking exactly as an unbroken one; and, on
// Cora (../shared/data, skipped when absent), each loss reaching its stated MRR.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "base/strings.h"
#include "core/graph_source.h"
#include "core/npy.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "gtest/gtest.h"
#include "partition/partitioner.h"
#include "sampler/dist_graph.h"
#include "sampler/link_sampler.h"
#include "tests/testing/testing.h"
#include "tests/trainer/train_cli_testing.h"

namespace fanout {
namespace {

namespace fs = std::filesystem;
using base::StrCat;
using testing::ReadJsonLines;
using testing::StartRanks;

// The first number after `prefix` in `out`, or -1.
double Figure(const std::string& out, const std::string& prefix) {
  std::smatch m;
  return std::regex_search(out, m, std::regex(prefix + " ([0-9.]+)")) ? std::stod(m[1]) : -1;
}

class LinkCliTest : public ::testing::Test {
 protected:
  // One partition (the trainer reads it itself: no servers) of a random graph with an 80/10/10
  // edge split, 4 stored negatives per held-out positive, a float32 edge field "w" > 0 and two
  // hard negatives per edge ("hard").
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    partition::Dataset d = testing::MakeRandomDataset({.num_nodes = 500, .num_edges = 3000, .feat_dim = 8});
    std::vector<float> w(d.num_edges());
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f + static_cast<float>((i * 7919) % 1000) / 1000.f;
    d.edge_fields.push_back({"w", core::NpyArray::Adopt(std::move(w), {d.num_edges()})});
    std::vector<int64_t> hard(2 * d.num_edges());
    for (size_t i = 0; i < hard.size(); ++i) hard[i] = static_cast<int64_t>((i * 37) % 500);
    d.edge_fields.push_back({"hard", core::NpyArray::Adopt(std::move(hard), {d.num_edges(), 2})});
    partition::PartitionOptions o;
    o.hard_negative_field = "hard";
    o.out_dir = dir_->Sub("parts");
    o.num_parts = 1;
    o.add_reverse_edges = true;
    o.quiet = true;
    o.edge_split = {.valid = 0.1, .test = 0.1, .negatives = 4};
    auto summary = partition::PartitionDataset(d, o);
    ASSERT_TRUE(summary.ok()) << summary.status();
    config_ = new std::string(summary->config_path);
  }
  static void TearDownTestSuite() {
    delete config_;
    delete dir_;
  }

  static std::vector<std::string> Args(std::vector<std::string> extra) {
    std::vector<std::string> a = {"--part-config", *config_, "--task", "link", "--fanouts", "4,4", "--hidden", "16",
                                  "--batch-size", "64", "--epochs", "1", "--threads", "1", "--seed", "2"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  // fanout-train with these flags, one rank; its output (the test fails unless it exits 0).
  static std::string Train(std::vector<std::string> extra) {
    auto rank = StartRanks(1, Args(std::move(extra)));
    const auto rc = rank[0]->Finish();
    EXPECT_EQ(rc, 0) << rank[0]->output();
    return rank[0]->output();
  }
  // The message of a run that must fail before training.
  static std::string Refused(std::vector<std::string> extra) {
    auto rank = StartRanks(1, Args(std::move(extra)));
    EXPECT_NE(rank[0]->Finish(), 0) << rank[0]->output();
    return rank[0]->output();
  }

  static testing::TempDir* dir_;
  static std::string* config_;
};
testing::TempDir* LinkCliTest::dir_ = nullptr;
std::string* LinkCliTest::config_ = nullptr;

struct RankingFigures {
  double mrr = 0, hits10 = 0;
  // Negatives scored within float rounding of their positive: the trainer's float32 sums (in
  // another order, a matrix product for joint negatives) may rank each of them either way, which
  // moves the MRR by at most 0.5 / n each.
  int64_t near_ties = 0;
};

// MRR and Hits@10 of positives (src, dst) against per-positive negative destinations (k each),
// dot-product scores of rows of `emb` (new node IDs), ties counted half: fanout's definition
// written out.
RankingFigures Ranking(const std::vector<std::vector<float>>& emb, const int64_t* pos, int64_t n,
                                  const std::vector<int64_t>& neg_dst, int64_t k) {
  auto dot = [&](int64_t a, int64_t b) {
    double s = 0;
    for (size_t j = 0; j < emb[a].size(); ++j) s += static_cast<double>(emb[a][j]) * emb[b][j];
    return static_cast<float>(s);
  };
  RankingFigures f;
  for (int64_t i = 0; i < n; ++i) {
    const float p = dot(pos[2 * i], pos[2 * i + 1]);
    double rank = 1;
    for (int64_t j = 0; j < k; ++j) {
      const float q = dot(pos[2 * i], neg_dst[i * k + j]);
      rank += q > p ? 1 : q == p ? 0.5 : 0;
      f.near_ties += std::abs(q - p) <= 1e-5f * std::max(1.f, std::abs(p));
    }
    f.mrr += 1 / rank / n;
    f.hits10 += (rank <= 10) / static_cast<double>(n);
  }
  return f;
}

// The test figures a job prints are the ranking of its saved embeddings against the negatives
// it says it used: link/test_neg.npy exactly as stored (given), or --eval-negatives drawn from
// --eval-seed (DrawEvalNegatives: per positive, or one joint set for all).
TEST_F(LinkCliTest, PrintedRankingIsTheEmbeddingsAgainstTheNegativesUsed) {
  const std::string parts = fs::path(*config_).parent_path().string();
  auto config = core::LoadPartitionConfig(*config_);
  ASSERT_TRUE(config.ok()) << config.status();
  auto orig = core::NpyArray::Map(parts + "/part0/" + core::PartFiles::kOrigNids);
  auto test_pos = core::NpyArray::Map(parts + "/link/test_pos.npy");
  auto test_neg = core::NpyArray::Map(parts + "/link/test_neg.npy");
  ASSERT_TRUE(orig.ok() && test_pos.ok() && test_neg.ok());
  const int64_t n = test_pos->rows();
  ASSERT_EQ(test_neg->rows(), 4 * n);
  // The graph as a trainer of machine 0 sees it, for the drawn negatives.
  auto store = core::PartitionStore::Open(*config, 0);
  ASSERT_TRUE(store.ok()) << store.status();
  auto graph =
      sampler::DistGraph::FromSources(*config, 0, {std::make_shared<core::LocalGraphSource>(std::move(*store))});
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<int64_t> pos_pairs(test_pos->data_as<int64_t>(), test_pos->data_as<int64_t>() + 2 * n);

  struct Case {
    std::vector<std::string> flags;
    int64_t k;
    std::vector<int64_t> neg_dst;  // n * k
    std::string says;
  };
  std::vector<Case> cases;
  {
    Case stored{{}, 4, {}, "over 4 negative(s) each"};
    const int64_t* q = test_neg->data_as<int64_t>();
    for (int64_t r = 0; r < 4 * n; ++r) {
      ASSERT_EQ(q[2 * r], pos_pairs[2 * (r / 4)]) << "a stored negative keeps its positive's source";
      stored.neg_dst.push_back(q[2 * r + 1]);
    }
    cases.push_back(stored);
  }
  cases.push_back({{"--eval-negatives", "30", "--eval-seed", "7"}, 30,
                   sampler::DrawEvalNegatives(**graph, pos_pairs, {}, 0, 30, false, 7, /*stream: test=*/1),
                   "over 30 negative(s) each (drawn)"});
  {
    const std::vector<int64_t> joint = sampler::DrawEvalNegatives(**graph, pos_pairs, {}, 0, 25, true, 7, 1);
    std::vector<int64_t> all;
    for (int64_t i = 0; i < n; ++i) all.insert(all.end(), joint.begin(), joint.end());
    cases.push_back({{"--eval-negatives", "25", "--eval-seed", "7", "--eval-negative-sampling", "joint"}, 25, all,
                     "over 25 negative(s) each (joint, drawn)"});
  }
  for (const Case& c : cases) {
    const std::string emb = dir_->Sub(StrCat("emb", c.k));
    std::vector<std::string> flags = {"--eval-every", "0", "--save-embeddings", emb, "--overwrite"};
    flags.insert(flags.end(), c.flags.begin(), c.flags.end());
    const std::string out = Train(flags);
    EXPECT_NE(out.find(c.says), std::string::npos) << out;
    auto e = core::NpyArray::Map(emb + "/embeddings.npy");
    ASSERT_TRUE(e.ok()) << e.status();
    const int64_t width = e->shape()[1];
    // Rows in original node-ID order; the pairs are in new IDs.
    std::vector<std::vector<float>> by_new(e->rows());
    for (int64_t v = 0; v < e->rows(); ++v) {
      const float* row = e->data_as<float>() + orig->data_as<int64_t>()[v] * width;
      by_new[v].assign(row, row + width);
    }
    const RankingFigures want = Ranking(by_new, pos_pairs.data(), n, c.neg_dst, c.k);
    const double slack = 6e-5 + static_cast<double>(want.near_ties) / n;
    EXPECT_NEAR(Figure(out, "test mrr"), want.mrr, slack) << c.says << "\n" << out;
    if (c.k >= 10) {
      EXPECT_NEAR(Figure(out, "hits@10"), want.hits10, slack) << c.says << "\n" << out;
    }
    EXPECT_LT(want.near_ties, n / 10) << "the check is not vacuous";
  }
}

// Every negative sampling, loss and scorer trains and says so; weighted-bce reads its field.
TEST_F(LinkCliTest, EveryNegativeSamplingLossAndScorerTrains) {
  const std::vector<std::vector<std::string>> runs = {
      {"--negative-sampling", "joint", "--negatives", "8", "--link-loss", "contrastive", "--scorer", "distmult"},
      {"--negative-sampling", "in-batch", "--negatives", "20", "--link-loss", "adversarial", "--loss-temperature",
       "0.5", "--scorer", "mlp"},
      {"--negative-sampling", "local", "--negatives", "2", "--link-loss", "weighted-bce", "--loss-weight-field", "w"},
      {"--negative-sampling", "degree", "--negatives", "3", "--link-loss", "weighted-bce", "--edge-weight", "w"},
  };
  for (const auto& flags : runs) {
    const std::string out = Train(flags);
    const std::string says = StrCat(flags[3], " negative(s) each (", flags[1], "); ");
    EXPECT_NE(out.find(says), std::string::npos) << out;
    EXPECT_NE(out.find(StrCat(flags[5], " loss")), std::string::npos) << out;
    EXPECT_GE(Figure(out, "test mrr"), 0) << out;
  }
  const std::string hard = Train({"--negatives", "3", "--hard-negative-field", "hard", "--hard-negatives", "2",
                                  "--num-samplers", "1"});
  EXPECT_NE(hard.find("3 negative(s) each (hard ones from edge field 'hard' first, then uniform)"), std::string::npos)
      << hard;
}

TEST_F(LinkCliTest, BadLinkFlagsAreRefusedNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--link-loss", "weighted-bce"}, "--link-loss weighted-bce weights each positive by an edge field"},
      {{"--loss-weight-field", "w"}, "--loss-weight-field applies to --link-loss weighted-bce only"},
      {{"--link-loss", "hinge"}, "'hinge' is not a link loss"},
      {{"--negative-sampling", "zipf"}, "'zipf' is not a negative sampling"},
      {{"--negative-sampling", "in-batch", "--batch-size", "1"}, "--batch-size must be >= 2"},
      {{"--eval-negatives", "10", "--eval-negative-sampling", "in-batch"},
       "--eval-negative-sampling must be uniform or joint"},
      {{"--eval-negatives", "-1"}, "--eval-negatives must be in [0, 100000]"},
      {{"--loss-temperature", "0", "--link-loss", "contrastive"}, "--loss-temperature must be a positive number"},
      {{"--edges-per-epoch", "-5"}, "--edges-per-epoch must be >= 0"},
      {{"--hard-negatives", "2"}, "--hard-negatives goes with --hard-negative-field"},
      {{"--hard-negative-field", "hard", "--negative-sampling", "joint"}, "--hard-negative-field gives each positive"},
      {{"--hard-negative-field", "w"}, "hard negative field 'w' holds float32, not int64 node IDs"},
      {{"--link-loss", "weighted-bce", "--loss-weight-field", "nope"}, "nope"},
  };
  for (const auto& [flags, message] : bad) {
    const std::string out = Refused(flags);
    EXPECT_NE(out.find(message), std::string::npos) << out;
  }
}

// A job stopped after its first epoch and resumed ranks exactly as the job run through: the
// scorer's parameters (DistMult's relations) and the batches of joint negatives come back too.
TEST_F(LinkCliTest, ResumedTrainingRanksTheSame) {
  const std::vector<std::string> flags = {"--negative-sampling", "joint", "--negatives", "6", "--link-loss",
                                          "contrastive", "--scorer", "distmult", "--eval-negatives", "20",
                                          "--edges-per-epoch", "640"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = flags;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const std::string through = Train(with({"--epochs", "3", "--checkpoint-dir", dir_->Sub("ck-through")}));
  Train(with({"--epochs", "1", "--checkpoint-dir", dir_->Sub("ck-broken")}));
  const std::string resumed = Train(with({"--epochs", "3", "--checkpoint-dir", dir_->Sub("ck-broken"), "--resume"}));
  EXPECT_NE(through.find("640 positive edges per trainer per epoch"), std::string::npos) << through;
  const double mrr = Figure(through, "test mrr");
  ASSERT_GE(mrr, 0) << through;
  EXPECT_EQ(Figure(resumed, "test mrr"), mrr) << resumed;
  EXPECT_EQ(Figure(resumed, "test roc-auc"), Figure(through, "test roc-auc")) << resumed;
}

// Cora (issue 43): an 85/5/10 edge split, GraphSAGE 2x64, 5 epochs on one partition, each
// positive ranked against 100 negatives drawn from --eval-seed 0 (the same for every run). The
// MRR each loss must reach is a few points under what it reached when measured (docs/training.md,
// "Link prediction"): bce 0.363, adversarial 0.449, contrastive 0.502.
TEST(CoraLinkRankingTest, EachLossReachesItsMrr) {
  const std::string root = testing::SharedDataDir();
  if (root.empty() || !fs::exists(root + "/cora/raw/edge.csv.gz")) GTEST_SKIP() << "../shared/data/cora not present";
  testing::TempDir dir;
  const std::string parts = dir.Sub("p1");
  std::string err;
  ASSERT_EQ(testing::RunProcess({FANOUT_PARTITION_BIN, "--input", root + "/cora", "--num-parts", "1", "--out", parts,
                                 "--add-reverse-edges", "--graph-name", "cora", "--edge-split", "0.85,0.05,0.10",
                                 "--normalize-features", "--quiet"},
                                nullptr, &err),
            0)
      << err;
  const std::vector<std::pair<std::vector<std::string>, double>> runs = {
      {{"--link-loss", "bce"}, 0.33},
      {{"--link-loss", "adversarial", "--negatives", "4"}, 0.42},
      {{"--link-loss", "contrastive", "--negative-sampling", "in-batch", "--negatives", "255"}, 0.47},
  };
  for (const auto& [flags, floor] : runs) {
    std::vector<std::string> a = {"--part-config", parts + "/cora.json", "--task", "link", "--fanouts", "10,10",
                                  "--hidden", "64", "--lr", "0.01", "--batch-size", "256", "--epochs", "5",
                                  "--eval-every", "0", "--threads", "1", "--eval-negatives", "100"};
    a.insert(a.end(), flags.begin(), flags.end());
    auto rank = StartRanks(1, a);
    ASSERT_EQ(rank[0]->Finish(std::chrono::seconds(300)), 0) << rank[0]->output();
    const double mrr = Figure(rank[0]->output(), "test mrr");
    std::printf("Cora link prediction, %s: test MRR %.4f against 100 drawn negatives\n", flags[1].c_str(), mrr);
    EXPECT_GE(mrr, floor) << rank[0]->output();
  }
}

}  // namespace
}  // namespace fanout

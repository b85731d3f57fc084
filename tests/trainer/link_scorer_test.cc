// Link prediction's pair scorers: the dot product, DistMult and the MLP against their
// definitions written out, every pair against every pair (ScoreAll), their names inside a
// model's state dict, and python/fanout's MLPScorer and DistMultScorer giving the same scores from
// a checkpoint; and the training losses against values worked by hand.
#include "trainer/link_scorer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "base/strings.h"
#include "tests/testing/testing.h"
#include "tests/trainer/python_testing.h"
#include "trainer/checkpoint.h"
#include "trainer/link_loss.h"
#include "trainer/models.h"

namespace fanout::trainer {
namespace {

using base::StrCat;

TEST(LinkScorerTest, ParsesItsNames) {
  EXPECT_EQ(*ParseScorerKind("dot"), ScorerKind::kDot);
  EXPECT_EQ(*ParseScorerKind("mlp"), ScorerKind::kMlp);
  EXPECT_EQ(*ParseScorerKind("distmult"), ScorerKind::kDistMult);
  EXPECT_EQ(ScorerKindName(ScorerKind::kDistMult), "distmult");
  auto bad = ParseScorerKind("cosine");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("dot, mlp or distmult"), std::string::npos) << bad.status();
}

// DistMult: <a, r, b> with r the chosen relation's row of a [relations, dim] parameter drawn
// Xavier-uniform (ReLU gain), trained with the model.
TEST(LinkScorerTest, DistMultWeighsTheProductByItsRelationsRow) {
  LinkScorer s(ScorerKind::kDistMult, 3, 5, /*num_relations=*/4, /*relation=*/2);
  ASSERT_EQ(s.named_parameters().size(), 1u);
  EXPECT_EQ(s.named_parameters()[0].key(), "relations");
  const at::Tensor r = s.named_parameters()[0].value();
  ASSERT_EQ(r.sizes(), (std::vector<int64_t>{4, 3}));
  const double bound = std::sqrt(2.0) * std::sqrt(6.0 / 7.0);
  EXPECT_LE(r.abs().max().item<double>(), bound);
  const at::Tensor a = at::tensor({1.f, 2.f, 3.f, 0.f, -1.f, 0.5f}).view({2, 3});
  const at::Tensor b = at::tensor({4.f, 5.f, 6.f, 2.f, 2.f, 2.f}).view({2, 3});
  const float* w = r.data_ptr<float>() + 2 * 3;
  const at::Tensor score = s.Score(a, b);
  EXPECT_FLOAT_EQ(score[0].item<float>(), 4 * w[0] + 10 * w[1] + 18 * w[2]);
  EXPECT_FLOAT_EQ(score[1].item<float>(), 0 * w[0] - 2 * w[1] + 1 * w[2]);
  s.Score(a, b).sum().backward();
  EXPECT_TRUE(r.grad().defined());
  EXPECT_EQ(r.grad()[0].abs().sum().item<float>(), 0.f) << "only the link relation's row is used";
  EXPECT_THROW(LinkScorer(ScorerKind::kDistMult, 3, 5, 2, 2), c10::Error);
}

// Several link relations: each pair scored with its own relation's row (`rel`), by Score and by
// ScoreAll (every a[i] with a[i]'s row), and only those rows get gradients; dot ignores `rel`.
TEST(LinkScorerTest, DistMultScoresEachPairWithItsRelationsRow) {
  LinkScorer s(ScorerKind::kDistMult, 3, 5, /*num_relations=*/4, /*relation=*/0);
  const at::Tensor r = s.named_parameters()[0].value();
  const at::Tensor a = at::randn({3, 3}), b = at::randn({3, 3});
  const at::Tensor rel = at::tensor({3, 1, 3}, at::kLong);
  const at::Tensor score = s.Score(a, b, rel);
  for (int64_t i = 0; i < 3; ++i) {
    const float want = (a[i] * r[rel[i].item<int64_t>()] * b[i]).sum().item<float>();
    EXPECT_NEAR(score[i].item<float>(), want, 1e-5) << "pair " << i;
  }
  const at::Tensor all = s.ScoreAll(a, b, rel);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      const float want = (a[i] * r[rel[i].item<int64_t>()] * b[j]).sum().item<float>();
      EXPECT_NEAR(all[i][j].item<float>(), want, 1e-5) << i << ", " << j;
    }
  }
  score.sum().backward();
  for (int64_t row : {0, 2}) EXPECT_EQ(r.grad()[row].abs().sum().item<float>(), 0.f) << "row " << row;
  for (int64_t row : {1, 3}) EXPECT_GT(r.grad()[row].abs().sum().item<float>(), 0.f) << "row " << row;
  LinkScorer dot(ScorerKind::kDot, 3, 5);
  EXPECT_TRUE(at::allclose(dot.Score(a, b, rel), dot.Score(a, b)));
}

// ScoreAll(a, b)[i][j] is Score(a[i], b[j]) for every kind (the MLP over chunks of pairs).
TEST(LinkScorerTest, ScoreAllScoresEveryPair) {
  const at::Tensor a = at::randn({7, 4}), b = at::randn({5, 4});
  for (ScorerKind kind : {ScorerKind::kDot, ScorerKind::kDistMult, ScorerKind::kMlp}) {
    LinkScorer s(kind, 4, 3);
    const at::Tensor all = s.ScoreAll(a, b);
    ASSERT_EQ(all.sizes(), (std::vector<int64_t>{7, 5})) << ScorerKindName(kind);
    for (int64_t i = 0; i < 7; ++i) {
      const at::Tensor row = s.Score(a[i].unsqueeze(0).expand({5, 4}), b);
      EXPECT_TRUE(at::allclose(all[i], row, 1e-5, 1e-6)) << ScorerKindName(kind) << " row " << i;
    }
  }
}

TEST(LinkLossTest, ParsesItsNames) {
  for (LinkLoss l : {LinkLoss::kBce, LinkLoss::kWeightedBce, LinkLoss::kAdversarial, LinkLoss::kContrastive}) {
    EXPECT_EQ(*ParseLinkLoss(LinkLossName(l)), l);
  }
  auto bad = ParseLinkLoss("hinge");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bce, weighted-bce, adversarial or contrastive"), std::string::npos);
}

double LogSigmoid(double x) { return -std::log1p(std::exp(-x)); }

// Two positives (scores 2, -1) with two negatives each ((0.5, -3) and (1, 1)), worked by hand.
TEST(LinkLossTest, EachLossIsItsDefinition) {
  const at::Tensor pos = at::tensor({2.f, -1.f}), neg = at::tensor({0.5f, -3.f, 1.f, 1.f}).view({2, 2});
  const double p[2] = {2, -1}, q[2][2] = {{0.5, -3}, {1, 1}};
  auto loss = [&](LinkLossOptions o, const at::Tensor& w = {}) { return LinkLossOf(o, pos, neg, w).item<double>(); };
  // bce: the mean over the 6 pairs of -log σ(pos) and -log σ(-neg).
  double bce = -LogSigmoid(p[0]) - LogSigmoid(p[1]);
  for (auto& row : q) bce += -LogSigmoid(-row[0]) - LogSigmoid(-row[1]);
  EXPECT_NEAR(loss({.kind = LinkLoss::kBce}), bce / 6, 1e-6);
  // weighted-bce: positives weighted 3 and 0.5, negatives 1, over the 6 pairs.
  double weighted = -3 * LogSigmoid(p[0]) - 0.5 * LogSigmoid(p[1]);
  for (auto& row : q) weighted += -LogSigmoid(-row[0]) - LogSigmoid(-row[1]);
  EXPECT_NEAR(loss({.kind = LinkLoss::kWeightedBce}, at::tensor({3.f, 0.5f})), weighted / 6, 1e-6);
  EXPECT_NEAR(loss({.kind = LinkLoss::kWeightedBce}, at::ones({2})), bce / 6, 1e-6) << "weights of 1 are bce";
  EXPECT_THROW(loss({.kind = LinkLoss::kWeightedBce}), c10::Error) << "no weights";
  // adversarial at T = 2: negatives weighted by softmax(2 * score) over each positive's.
  double neg_loss = 0;
  for (auto& row : q) {
    const double e0 = std::exp(2 * row[0]), e1 = std::exp(2 * row[1]);
    neg_loss += -(e0 * LogSigmoid(-row[0]) + e1 * LogSigmoid(-row[1])) / (e0 + e1);
  }
  const double pos_loss = -(LogSigmoid(p[0]) + LogSigmoid(p[1])) / 2;
  EXPECT_NEAR(loss({.kind = LinkLoss::kAdversarial, .temperature = 2}), (pos_loss + neg_loss / 2) / 2, 1e-6);
  // contrastive at T = 0.5: -log softmax of the positive among [pos, negatives] / T.
  double nce = 0;
  for (int i = 0; i < 2; ++i) {
    const double z = std::exp(p[i] / 0.5) + std::exp(q[i][0] / 0.5) + std::exp(q[i][1] / 0.5);
    nce += -(p[i] / 0.5 - std::log(z));
  }
  EXPECT_NEAR(loss({.kind = LinkLoss::kContrastive, .temperature = 0.5}), nce / 2, 1e-5);
  EXPECT_THROW(LinkLossOf({}, pos, neg.flatten()), c10::Error) << "negatives must be [n, k]";
}

// Self-adversarial weights are not differentiated: the gradient of a negative's score is its
// weight times d(-log σ(-s))/ds, as RotatE defines it. With no negatives a batch still trains.
TEST(LinkLossTest, AdversarialWeightsAreConstantsAndNoNegativesIsFine) {
  at::Tensor pos = at::tensor({0.f}).requires_grad_(), neg = at::tensor({1.f, -1.f}).view({1, 2}).requires_grad_();
  LinkLossOf({.kind = LinkLoss::kAdversarial}, pos, neg).backward();
  const double w0 = std::exp(1.0) / (std::exp(1.0) + std::exp(-1.0)), w1 = 1 - w0;
  auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  EXPECT_NEAR(neg.grad()[0][0].item<double>(), 0.5 * w0 * sigmoid(1.0), 1e-6);
  EXPECT_NEAR(neg.grad()[0][1].item<double>(), 0.5 * w1 * sigmoid(-1.0), 1e-6);
  for (LinkLoss l : {LinkLoss::kBce, LinkLoss::kAdversarial, LinkLoss::kContrastive}) {
    const at::Tensor none = LinkLossOf({.kind = l}, at::tensor({1.f, 2.f}), at::zeros({2, 0}));
    EXPECT_TRUE(std::isfinite(none.item<double>())) << LinkLossName(l);
  }
}

TEST(LinkScorerTest, DotIsTheInnerProductAndHasNoParameters) {
  LinkScorer s(ScorerKind::kDot, 3, 0);
  EXPECT_TRUE(s.parameters().empty());
  const at::Tensor a = at::tensor({1.f, 2.f, 3.f, 0.f, -1.f, 0.5f}).view({2, 3});
  const at::Tensor b = at::tensor({4.f, 5.f, 6.f, 2.f, 2.f, 2.f}).view({2, 3});
  const at::Tensor score = s.Score(a, b);
  ASSERT_EQ(score.sizes(), (std::vector<int64_t>{2}));
  EXPECT_FLOAT_EQ(score[0].item<float>(), 32.f);
  EXPECT_FLOAT_EQ(score[1].item<float>(), -1.f);
  EXPECT_THROW(s.Score(a, b.narrow(1, 0, 2)), c10::Error);
}

TEST(LinkScorerTest, MlpIsThreeLinearsOverTheProductAndTrains) {
  LinkScorer s(ScorerKind::kMlp, 4, 7);
  std::vector<std::string> names;
  std::vector<at::Tensor> p;
  for (const auto& kv : s.named_parameters()) {
    names.push_back(kv.key());
    p.push_back(kv.value());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"}));
  const at::Tensor a = at::randn({5, 4}), b = at::randn({5, 4});
  at::Tensor h = at::relu(at::linear(a * b, p[0], p[1]));
  h = at::relu(at::linear(h, p[2], p[3]));
  const at::Tensor want = at::linear(h, p[4], p[5]).squeeze(1);
  const at::Tensor got = s.Score(a, b);
  EXPECT_TRUE(at::allclose(got, want)) << got << want;
  // Equal seeds draw equal parameters; other seeds others.
  LinkScorer same(ScorerKind::kMlp, 4, 7), other(ScorerKind::kMlp, 4, 8);
  EXPECT_TRUE(at::equal(same.parameters()[0], p[0]));
  EXPECT_FALSE(at::equal(other.parameters()[0], p[0]));
  // Gradients reach every parameter.
  s.Score(a, b).sum().backward();
  for (const at::Tensor& t : s.parameters()) EXPECT_TRUE(t.grad().defined());
}

ModelOptions Sage() {
  ModelOptions o;
  o.in_dim = 5;
  o.hidden = 8;
  o.num_classes = 6;
  o.num_layers = 2;
  return o;
}

// As the trainer does: the scorer is the model's submodule "scorer", after the layers.
TEST(LinkScorerTest, InAModelItsTensorsFollowTheLayersUnderPyTorchNames) {
  auto m = *MakeModel(Sage(), 1);
  m->register_module("scorer", std::make_shared<LinkScorer>(ScorerKind::kMlp, 6, 2));
  std::vector<std::string> names;
  for (const auto& [name, t] : m->StateDict()) names.push_back(name);
  ASSERT_EQ(names.size(), 12u);
  EXPECT_EQ(names[0], "layers.0.fc_self.weight");
  EXPECT_EQ(std::vector<std::string>(names.begin() + 6, names.end()),
            (std::vector<std::string>{"scorer.0.weight", "scorer.0.bias", "scorer.2.weight", "scorer.2.bias",
                                      "scorer.4.weight", "scorer.4.bias"}));
}

TEST(LinkScorerTest, PythonsScorersReadTheCheckpointAndScoreAlike) {
  SKIP_WITHOUT_PYTHON_TORCH();
  fanout::testing::TempDir dir;
  // Pairs of embeddings 0.1 * (i, i+1, ...) and their scores here, by an MLP and a DistMult
  // scorer (3 relations, the second used), each checkpointed with a model.
  const at::Tensor a = at::arange(18, at::kFloat).view({3, 6}).mul(0.1);
  const at::Tensor b = a.flip(0);
  std::vector<at::Tensor> want;
  for (ScorerKind kind : {ScorerKind::kMlp, ScorerKind::kDistMult}) {
    auto m = *MakeModel(Sage(), 1);
    auto scorer = m->register_module("scorer", std::make_shared<LinkScorer>(kind, 6, 2, 3, 1));
    Checkpoint c;
    c.info["hyper_parameters"] = HyperParameters(m->options());
    c.info["epoch"] = 0;
    c.state_dict = m->StateDict();
    ASSERT_TRUE(WriteCheckpoint(dir.Sub(StrCat(ScorerKindName(kind), ".pt")), c).ok());
    want.push_back(scorer->Score(a, b).detach());
  }
  const std::string script = dir.Sub("score.py");
  std::ofstream(script) << "import sys, torch\n"
                        << "from fanout.models import GNN, MLPScorer, DistMultScorer\n"
                        << "a = (torch.arange(18, dtype=torch.float32).view(3, 6) * 0.1)\n"
                        << "for name, s in (('mlp', MLPScorer(6)), ('distmult', DistMultScorer(6, 3, relation=1))):\n"
                        << "    sd = torch.load(sys.argv[1] + '/' + name + '.pt')['state_dict']\n"
                        << "    s.load_state_dict({k: v for k, v in sd.items() if k.startswith('scorer.')})\n"
                        << "    g = GNN('sage', 5, 8, 6, 2)\n"
                        << "    g.load_state_dict({k: v for k, v in sd.items() if not k.startswith('scorer.')})\n"
                        << "    print(' '.join('%.6f' % x for x in s(a, a.flip(0)).tolist()))\n";
  const std::string out = dir.Sub("out.txt");
  ASSERT_EQ(testing::Python(StrCat(script, " ", dir.path()), out), 0);
  std::ifstream in(out);
  for (size_t k = 0; k < want.size(); ++k) {
    for (int64_t i = 0; i < 3; ++i) {
      double x = 0;
      ASSERT_TRUE(in >> x) << "scorer " << k << " row " << i;
      EXPECT_NEAR(x, want[k][i].item<double>(), 1e-5) << "scorer " << k << " row " << i;
    }
  }
}

}  // namespace
}  // namespace fanout::trainer

// Link prediction's pair scorers: the dot product, the MLP against its composition written out,
// its names inside a model's state dict, and python/fanout's MLPScorer giving the same scores
// from a checkpoint.
#include "trainer/link_scorer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "base/strings.h"
#include "tests/testing/testing.h"
#include "tests/trainer/python_testing.h"
#include "trainer/checkpoint.h"
#include "trainer/models.h"

namespace fanout::trainer {
namespace {

using base::StrCat;

TEST(LinkScorerTest, ParsesItsNames) {
  EXPECT_EQ(*ParseScorerKind("dot"), ScorerKind::kDot);
  EXPECT_EQ(*ParseScorerKind("mlp"), ScorerKind::kMlp);
  auto bad = ParseScorerKind("cosine");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("dot, mlp"), std::string::npos) << bad.status();
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

TEST(LinkScorerTest, PythonsMLPScorerReadsTheCheckpointAndScoresAlike) {
  SKIP_WITHOUT_PYTHON_TORCH();
  fanout::testing::TempDir dir;
  auto m = *MakeModel(Sage(), 1);
  auto scorer = m->register_module("scorer", std::make_shared<LinkScorer>(ScorerKind::kMlp, 6, 2));
  Checkpoint c;
  c.info["hyper_parameters"] = HyperParameters(m->options());
  c.info["epoch"] = 0;
  c.state_dict = m->StateDict();
  const std::string path = dir.Sub("best.pt");
  ASSERT_TRUE(WriteCheckpoint(path, c).ok());
  // Pairs of embeddings 0.1 * (i, i+1, ...) and their scores here.
  const at::Tensor a = at::arange(18, at::kFloat).view({3, 6}).mul(0.1);
  const at::Tensor b = a.flip(0);
  const at::Tensor want = scorer->Score(a, b).detach();
  const std::string script = dir.Sub("score.py");
  std::ofstream(script) << "import sys, torch\n"
                        << "from fanout.models import GNN, MLPScorer\n"
                        << "sd = torch.load(sys.argv[1])['state_dict']\n"
                        << "s = MLPScorer(6)\n"
                        << "s.load_state_dict({k: v for k, v in sd.items() if k.startswith('scorer.')})\n"
                        << "g = GNN('sage', 5, 8, 6, 2)\n"
                        << "g.load_state_dict({k: v for k, v in sd.items() if not k.startswith('scorer.')})\n"
                        << "a = (torch.arange(18, dtype=torch.float32).view(3, 6) * 0.1)\n"
                        << "print(' '.join('%.6f' % x for x in s(a, a.flip(0)).tolist()))\n";
  const std::string out = dir.Sub("out.txt");
  ASSERT_EQ(testing::Python(StrCat(script, " ", path), out), 0);
  std::ifstream in(out);
  for (int64_t i = 0; i < 3; ++i) {
    double x = 0;
    ASSERT_TRUE(in >> x) << "row " << i;
    EXPECT_NEAR(x, want[i].item<double>(), 1e-5) << "row " << i;
  }
}

}  // namespace
}  // namespace fanout::trainer

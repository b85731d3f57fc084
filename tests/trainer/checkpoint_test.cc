// Checkpoints: round trip, conventional names, refusals that name both shapes, foreign files,
// and a read back with Python's torch.load into python/fanout's models.GNN.
#include "trainer/checkpoint.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "base/strings.h"
#include "tests/testing/testing.h"
#include "tests/trainer/python_testing.h"
#include "tests/trainer/test_batches.h"
#include "trainer/batch_tensors.h"

namespace fanout::trainer {
namespace {

using base::StrCat;

ModelOptions Options(ModelKind kind, int64_t hidden = 8) {
  ModelOptions o;
  o.model = kind;
  o.in_dim = 5;
  o.hidden = hidden;
  o.num_classes = 3;
  o.num_layers = 2;
  o.heads = 2;
  return o;
}

Checkpoint Of(const GnnModel& m, int64_t epoch) {
  Checkpoint c;
  c.info["hyper_parameters"] = HyperParameters(m.options());
  c.info["epoch"] = epoch;
  c.info["training"] = {{"fanouts", {10, 25}}, {"lr", 0.003}, {"graph", "g"}, {"flag", true}};
  c.state_dict = m.StateDict();
  return c;
}

std::vector<std::string> Names(const GnnModel& m) {
  std::vector<std::string> out;
  for (const auto& [name, t] : m.StateDict()) out.push_back(name);
  return out;
}

TEST(CheckpointTest, BuiltInModelsUsePyTorchNames) {
  EXPECT_EQ(Names(**MakeModel(Options(ModelKind::kSage), 0)),
            (std::vector<std::string>{"layers.0.fc_self.weight", "layers.0.fc_neigh.weight", "layers.0.bias",
                                      "layers.1.fc_self.weight", "layers.1.fc_neigh.weight", "layers.1.bias"}));
  EXPECT_EQ(Names(**MakeModel(Options(ModelKind::kGcn), 0)),
            (std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"}));
  EXPECT_EQ(Names(**MakeModel(Options(ModelKind::kGat), 0)),
            (std::vector<std::string>{"layers.0.fc.weight", "layers.0.attn_l", "layers.0.attn_r", "layers.0.bias",
                                      "layers.1.fc.weight", "layers.1.attn_l", "layers.1.attn_r", "layers.1.bias"}));
  EXPECT_EQ(Names(**MakeModel(Options(ModelKind::kRgat), 0)),
            (std::vector<std::string>{"layers.0.fc_self.weight", "layers.0.fc.weight", "layers.0.attn_l",
                                      "layers.0.attn_r", "layers.0.bias", "layers.1.fc_self.weight",
                                      "layers.1.fc.weight", "layers.1.attn_l", "layers.1.attn_r", "layers.1.bias",
                                      "classifier.weight", "classifier.bias"}));
  // hgt: the skip gate where a layer keeps its width (not layer 0: 5 -> 8), the classifier last.
  EXPECT_EQ(Names(**MakeModel(Options(ModelKind::kHgt), 0)),
            (std::vector<std::string>{"layers.0.kqv", "layers.0.kqv_bias", "layers.0.k_rel", "layers.0.v_rel",
                                      "layers.0.p_rel", "layers.0.out", "layers.0.out_bias", "layers.1.kqv",
                                      "layers.1.kqv_bias", "layers.1.k_rel", "layers.1.v_rel", "layers.1.p_rel",
                                      "layers.1.out", "layers.1.out_bias", "layers.1.skip", "classifier.weight",
                                      "classifier.bias"}));
}

TEST(CheckpointTest, RoundTripRestoresOutputsAndInfo) {
  fanout::testing::TempDir dir;
  const std::string path = dir.Sub("best.pt");
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat, ModelKind::kRgat, ModelKind::kHgt}) {
    auto a = MakeModel(Options(kind), 1);
    auto b = MakeModel(Options(kind), 2);
    ASSERT_TRUE(a.ok() && b.ok());
    (*a)->eval();
    (*b)->eval();
    auto batch = ToTensors(testing::MakeRandomBatch({.in_dim = 5, .num_classes = 3}));
    ASSERT_TRUE(batch.ok());
    const at::Tensor want = (*a)->Forward(batch->blocks, batch->features);
    ASSERT_FALSE(at::allclose((*b)->Forward(batch->blocks, batch->features), want));
    Checkpoint c = Of(**a, 7);
    c.optimizer = std::string("\0\1\2opaque", 9);
    ASSERT_TRUE(WriteCheckpoint(path, c).ok());
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    auto read = ReadCheckpoint(path);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->info["format"], kCheckpointFormat);
    EXPECT_EQ(read->info["version"], kCheckpointVersion);
    EXPECT_EQ(read->info["epoch"], 7);
    EXPECT_EQ(read->info["training"], c.info["training"]);
    EXPECT_EQ(read->info["hyper_parameters"], HyperParameters((*a)->options()));
    EXPECT_EQ(read->optimizer, c.optimizer);
    ASSERT_TRUE(LoadStateDict(**b, *read, path).ok());
    EXPECT_TRUE(at::equal((*b)->Forward(batch->blocks, batch->features), want)) << ModelKindName(kind);
  }
}

TEST(CheckpointTest, ADifferentModelOrShapeIsRefusedNamingBothAndNothingIsCopied) {
  fanout::testing::TempDir dir;
  const std::string path = dir.Sub("best.pt");
  auto sage16 = MakeModel(Options(ModelKind::kSage, 16), 1);
  ASSERT_TRUE(WriteCheckpoint(path, Of(**sage16, 0)).ok());
  auto read = ReadCheckpoint(path);
  ASSERT_TRUE(read.ok());

  auto sage32 = MakeModel(Options(ModelKind::kSage, 32), 1);
  const at::Tensor before = (*sage32)->StateDict()[0].second.clone();
  absl::Status s = LoadStateDict(**sage32, *read, path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(StrCat("checkpoint ", path, " does not fit this model: tensor 'layers.0.fc_self.weight' "
                                    "is [16, 5] there and [32, 5] here")),
            std::string::npos)
      << s;
  EXPECT_NE(s.message().find("\"hidden\":16"), std::string::npos) << s;
  EXPECT_NE(s.message().find("\"hidden\":32"), std::string::npos) << s;
  EXPECT_TRUE(at::equal((*sage32)->StateDict()[0].second, before));

  auto gat = MakeModel(Options(ModelKind::kGat, 16), 1);
  s = LoadStateDict(**gat, *read, path);
  EXPECT_NE(s.message().find("tensor 0 is 'layers.0.fc_self.weight' there and 'layers.0.fc.weight' here"),
            std::string::npos)
      << s;
  auto three = Options(ModelKind::kSage, 16);
  three.num_layers = 3;
  s = LoadStateDict(**MakeModel(three, 1), *read, path);
  EXPECT_NE(s.message().find("tensor 'layers.1.fc_self.weight' is [3, 16] there and [16, 16] here"), std::string::npos)
      << s;
}

// Where a set of per-rank checkpoints resumes: the newest (epoch, step) that every rank holds in
// its last or previous file; older checkpoints without "resume_at" continue after their epoch.
TEST(CheckpointTest, ResumePositionIsTheNewestEveryRankHolds) {
  Checkpoint inside, after, old;
  inside.info = {{"epoch", 2}, {"resume_at", {3, 7}}};
  after.info = {{"epoch", 3}, {"resume_at", {4, 0}}};
  old.info = {{"epoch", 1}};
  const double k37 = ResumeKey(inside), k40 = ResumeKey(after), k20 = ResumeKey(old);
  EXPECT_EQ(KeyEpoch(k37), 3);
  EXPECT_EQ(KeyStep(k37), 7);
  EXPECT_EQ(KeyEpoch(k40), 4);
  EXPECT_EQ(KeyStep(k40), 0);
  EXPECT_EQ(KeyEpoch(k20), 2);
  EXPECT_EQ(KeyStep(k20), 0);
  EXPECT_LT(k20, k37);
  EXPECT_LT(k37, k40);
  // Every rank at (4, 0): there.
  EXPECT_EQ(NewestKeyEveryRankHolds({k40, k37, k40, k37}), k40);
  // Rank 1 killed before replacing (3, 7): its last is rank 0's previous.
  EXPECT_EQ(NewestKeyEveryRankHolds({k40, k37, k37, k20}), k37);
  // A rank with nothing yet, or nothing in common: none (-1).
  EXPECT_EQ(NewestKeyEveryRankHolds({k40, k37, -1, -1}), -1);
  EXPECT_EQ(NewestKeyEveryRankHolds({k40, -1, k20, -1}), -1);
}

TEST(CheckpointTest, ForeignAndMissingFilesAreNamed) {
  fanout::testing::TempDir dir;
  EXPECT_EQ(ReadCheckpoint(dir.Sub("none.pt")).status().code(), absl::StatusCode::kNotFound);
  const std::string junk = dir.Sub("junk.pt");
  std::ofstream(junk) << "not a checkpoint";
  auto r = ReadCheckpoint(junk);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(StrCat("checkpoint ", junk, " is not a fanout checkpoint")), std::string::npos)
      << r.status();
}

// Python reads the file with torch.load and loads the state dict into models.GNN of the same
// kind, strictly; the parameter sums printed must match.
TEST(CheckpointTest, TorchLoadInPythonReadsItIntoTheAuthoringPackagesModel) {
  SKIP_WITHOUT_PYTHON_TORCH();
  fanout::testing::TempDir dir;
  const std::vector<ModelKind> kinds = {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat, ModelKind::kRgcn,
                                        ModelKind::kRgat, ModelKind::kHgt};
  std::vector<double> sums;
  std::string paths;
  for (ModelKind kind : kinds) {
    ModelOptions o = Options(kind);
    if (kind == ModelKind::kRgcn || kind == ModelKind::kRgat || kind == ModelKind::kHgt) {
      o.num_relations = 3;  // the hyper_parameters say so
      o.num_node_types = 2;
    }
    auto m = MakeModel(o, 3);
    const std::string path = dir.Sub(StrCat(ModelKindName(kind), ".pt"));
    ASSERT_TRUE(WriteCheckpoint(path, Of(**m, 4)).ok());
    double sum = 0;
    for (const auto& [name, t] : (*m)->StateDict()) sum += t.sum().item<double>();
    sums.push_back(sum);
    paths += " " + path;
  }
  // One python for every file (each start imports torch).
  const std::string script = dir.Sub("read.py");
  std::ofstream(script) << "import sys, torch\n"
                        << "sys.path.insert(0, '" << FANOUT_SOURCE_DIR << "/python')\n"
                        << "from fanout.models import GNN, HeteroGNN\n"
                        << "for path in sys.argv[1:]:\n"
                        << "    c = torch.load(path)\n"
                        << "    h = c['hyper_parameters']\n"
                        << "    assert c['format'] == 'fanout.checkpoint' and c['epoch'] == 4, c\n"
                        << "    if h['model'] in ('rgat', 'hgt'):\n"
                        << "        m = HeteroGNN(h['model'], h['in_dim'], h['hidden'], h['num_classes'], h['num_layers'],"
                        << " h['dropout'], h['heads'], num_relations=h['num_relations'],"
                        << " num_node_types=h.get('num_node_types', 1))\n"
                        << "    else:\n"
                        << "        m = GNN(h['model'], h['in_dim'], h['hidden'], h['num_classes'], h['num_layers'],"
                        << " h['dropout'], h.get('heads', [4]), num_relations=h.get('num_relations', 1))\n"
                        << "    m.load_state_dict(c['state_dict'], strict=True)\n"
                        << "    print('%.6f' % sum(float(p.double().sum()) for p in m.state_dict().values()))\n";
  const std::string out = dir.Sub("out.txt");
  ASSERT_EQ(testing::Python(StrCat(script, paths), out), 0);
  std::ifstream in(out);
  for (size_t i = 0; i < kinds.size(); ++i) {
    double read = 0;
    ASSERT_TRUE(in >> read) << ModelKindName(kinds[i]);
    EXPECT_NEAR(read, sums[i], 1e-4) << ModelKindName(kinds[i]);
  }
}

}  // namespace
}  // namespace fanout::trainer

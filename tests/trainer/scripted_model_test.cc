// TorchScript models: the reference SAGE of python/fanout equals the built-in one, and a model
// written from scratch here (GIN) trains and checkpoints. Needs python3 with torch (Debian's
// python3-torch, which scripts/setup.sh installs); skipped without it.
#include "trainer/scripted_model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/_unique2.h>
#include <ATen/ops/allclose.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <torch/optim/adam.h>

#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <map>
#include <string>

#include "base/strings.h"
#include "tests/testing/testing.h"
#include "tests/trainer/python_testing.h"
#include "tests/trainer/test_batches.h"
#include "trainer/batch_tensors.h"
#include "trainer/checkpoint.h"
#include "trainer/model_kinds.h"
#include "trainer/models.h"

namespace fanout::trainer {
namespace {

using base::StrCat;


ModelOptions Options(ModelKind kind, int64_t in_dim, int64_t classes, int64_t layers) {
  ModelOptions o;
  o.model = kind;
  o.in_dim = in_dim;
  o.num_classes = classes;
  o.num_layers = layers;
  return o;
}

ModelOptions Scripted(const std::string& path, int64_t in_dim, int64_t classes, int64_t layers) {
  ModelOptions o = Options(ModelKind::kScripted, in_dim, classes, layers);
  o.script_path = path;
  return o;
}

BatchTensors RandomTensors(int64_t in_dim, int64_t classes, int64_t layers, uint64_t seed) {
  testing::RandomBatchSpec spec;
  spec.num_layers = layers;
  spec.in_dim = in_dim;
  spec.num_classes = classes;
  spec.num_seeds = 12;
  spec.seed = seed;
  auto t = ToTensors(testing::MakeRandomBatch(spec));
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// The built-in model's parameters into the script's: per layer l, the built-in's k-th parameter
// (in registration order) to the script's layers_<l>_<names[k]>.
void CopyLayerParameters(GnnModel& builtin, GnnModel& scripted, int64_t layers, const std::vector<std::string>& names) {
  const auto theirs = builtin.parameters();
  const auto mine = scripted.named_parameters();
  ASSERT_EQ(mine.size(), theirs.size());
  at::NoGradGuard no_grad;
  const size_t per_layer = names.size();
  for (int64_t l = 0; l < layers; ++l) {
    for (size_t k = 0; k < per_layer; ++k) {
      const at::Tensor* p = mine.find(StrCat("layers_", l, "_", names[k]));
      ASSERT_NE(p, nullptr) << names[k];
      p->copy_(theirs[per_layer * l + k]);
    }
  }
}

// Each model's logits on `t` in eval mode, after a backward pass of their squared sum.
std::vector<at::Tensor> ForwardAndBackward(const std::vector<std::shared_ptr<GnnModel>>& models, const BatchTensors& t) {
  std::vector<at::Tensor> out;
  for (const auto& m : models) {
    m->eval();
    m->zero_grad();
    const at::Tensor logits = m->Forward(t.blocks, t.features);
    logits.pow(2).sum().backward();
    out.push_back(logits.detach());
  }
  return out;
}

// Every TorchScript file the cases load, written by one python process for the whole suite (each
// python that imports torch costs about a second): the package's exports, tests/trainer/my_gin.py
// (a GIN written from scratch, not from python/fanout) and a script reading a block's edge data.
class ScriptedModelTest : public ::testing::Test {
 public:
  static constexpr int64_t kRelations = 3, kNodeTypes = 2;
  static std::string Path(const std::string& name) { return dir_->Sub(name); }

 protected:
  static void SetUpTestSuite() {
    if (!testing::HavePythonTorch()) return;
    dir_ = new fanout::testing::TempDir;
    std::vector<std::string> commands;
    for (const char* kernels : {"--fused", "--no-fused"}) {
      commands.push_back(StrCat("-m fanout.export sage --in-dim 5 --hidden 8 --classes 3 --layers 2 --dropout 0 ",
                                kernels, " -o ", Path(StrCat("sage", kernels, ".pt"))));
      for (const char* kind : {"rgcn", "rgat", "hgt"}) {
        commands.push_back(StrCat("-m fanout.export ", kind, " --relations ", kRelations, " --node-types ", kNodeTypes,
                                  " --in-dim 5 --hidden 8 --classes 3 --layers 2 --heads 2 --dropout 0 ", kernels, " -o ",
                                  Path(StrCat(kind, kernels, ".pt"))));
      }
      for (const char* kind : {"sage", "gcn", "gat", "gin"}) {
        commands.push_back(StrCat("-m fanout.export ", kind, " --in-dim 6 --hidden 8 --classes 4 --layers 3 --heads 2,3 --seed 5 ",
                                  kernels, " -o ", Path(StrCat("layers-", kind, kernels, ".pt"))));
      }
    }
    commands.push_back(StrCat(FANOUT_SOURCE_DIR, "/tests/trainer/my_gin.py ", Path("gin.pt"), " 5 3 2"));
    std::ofstream(Path("edges.py")) << "import sys, torch\n"
                                    << "from typing import Dict, List\n"
                                    << "from torch import Tensor\n"
                                    << "class M(torch.nn.Module):\n"
                                    << "    def __init__(self):\n"
                                    << "        super().__init__()\n"
                                    << "        self.scale = torch.nn.Parameter(torch.ones(1))\n"
                                    << "    def forward(self, blocks: List[Dict[str, Tensor]], x: Tensor) -> Tensor:\n"
                                    << "        b = blocks[0]\n"
                                    << "        out = torch.zeros(int(b['num_dst']), b['edge_feat'].size(1))\n"
                                    << "        out.index_add_(0, b['dst'], b['edge_feat'] * b['edge_weight'].unsqueeze(1))\n"
                                    << "        return out * self.scale\n"
                                    << "torch.jit.script(M()).save(sys.argv[1])\n";
    commands.push_back(StrCat(Path("edges.py"), " ", Path("edges.pt")));
    written_ = testing::PythonRuns(commands) == 0;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
      ASSERT_TRUE(written_) << "python could not write the suite's TorchScript files";
  }

 private:
  static fanout::testing::TempDir* dir_;
  static bool written_;
};
fanout::testing::TempDir* ScriptedModelTest::dir_ = nullptr;
bool ScriptedModelTest::written_ = false;

// The package's SAGE, on fanout's fused operators and on plain tensor ops, equals the built-in
// sage given the same parameters: outputs and gradients.
TEST_F(ScriptedModelTest, ReferenceSageFromPythonEqualsTheBuiltInSage) {
  const int64_t in = 5, hidden = 8, classes = 3, layers = 2;  // as exported
  for (const char* kernels : {"--fused", "--no-fused"}) {
    SCOPED_TRACE(kernels);
    const std::string path = Path(StrCat("sage", kernels, ".pt"));
    auto scripted = MakeModel(Scripted(path, in, classes, layers), 0);
    ASSERT_TRUE(scripted.ok()) << scripted.status();
    ModelOptions bo = Options(ModelKind::kSage, in, classes, layers);
    bo.hidden = hidden;
    bo.dropout = 0;
    auto builtin = MakeModel(bo, 7);
    ASSERT_TRUE(builtin.ok()) << builtin.status();
    // The built-in model's parameters, per layer fc_self, fc_neigh, bias, into the script's.
    const auto theirs = (*builtin)->parameters();
    const auto mine = (*scripted)->named_parameters();
    ASSERT_NO_FATAL_FAILURE(CopyLayerParameters(**builtin, **scripted, layers, {"fc_self_weight", "fc_neigh_weight", "bias"}));
    // Unweighted, then with edge weights (block["edge_weight"] in the script).
    BatchTensors t = RandomTensors(in, classes, layers, 3);
    at::Tensor unweighted;
    for (bool weighted : {false, true}) {
      SCOPED_TRACE(weighted ? "weighted" : "unweighted");
      if (weighted) {
        for (BlockTensors& b : t.blocks) b.fields.Set(sampler::kEdgeWeight, at::rand({b.num_edges()}) * 2);
      }
      const std::vector<at::Tensor> out = ForwardAndBackward({*builtin, *scripted}, t);
      EXPECT_TRUE(at::allclose(out[0], out[1], 1e-5, 1e-5)) << out[0] << out[1];
      for (int64_t l = 0; l < layers; ++l) {
        const at::Tensor& g = mine.find(StrCat("layers_", l, "_fc_neigh_weight"))->grad();
        EXPECT_TRUE(at::allclose(g, theirs[3 * l + 1].grad(), 1e-4, 1e-5)) << "layer " << l;
      }
      if (weighted) {
        EXPECT_FALSE(at::allclose(out[0], unweighted)) << "the weights changed nothing";
      } else {
        unweighted = out[0];
      }
    }
  }
}

// On a typed batch (each edge a relation, a destination's edges listed relation by relation as
// the sampler lists them, every relation present; node types alternating), the package's model
// of `kind` equals the built-in one given the same parameters, copied by their public names:
// outputs and every gradient, on fanout's fused operators and on plain tensor ops.
void ExpectTypedModelEqualsItsScript(ScriptedModelTest* t, ModelKind kind) {
  const int64_t in = 5, classes = 3, layers = 2;  // as exported
  const int64_t relations = ScriptedModelTest::kRelations;
  const std::string name(ModelKindName(kind));
  for (const char* kernels : {"--fused", "--no-fused"}) {
    SCOPED_TRACE(kernels);
    ModelOptions so = Scripted(t->Path(StrCat(name, kernels, ".pt")), in, classes, layers);
    so.num_relations = relations;  // the blocks' num_relations
    auto scripted = MakeModel(so, 0);
    ASSERT_TRUE(scripted.ok()) << scripted.status();
    ModelOptions bo = Options(kind, in, classes, layers);
    bo.hidden = 8;
    bo.heads = 2;
    bo.dropout = 0;
    bo.num_relations = relations;
    bo.num_node_types = ScriptedModelTest::kNodeTypes;
    auto builtin = MakeModel(bo, 7);
    ASSERT_TRUE(builtin.ok()) << builtin.status();
    const auto theirs = (*builtin)->StateDict();
    std::map<std::string, at::Tensor> mine;  // the script's tensors by name (its own order differs)
    for (const auto& [tensor_name, tensor] : (*scripted)->StateDict()) mine[tensor_name] = tensor;
    ASSERT_EQ(theirs.size(), mine.size());
    {
      at::NoGradGuard no_grad;
      for (const auto& [tensor_name, tensor] : theirs) {
        ASSERT_EQ(mine.count(tensor_name), 1u) << tensor_name;
        mine[tensor_name].copy_(tensor);
      }
    }
    BatchTensors batch = RandomTensors(in, classes, layers, 5);
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(11);
    for (BlockTensors& b : batch.blocks) {
      at::Tensor etype = at::randint(relations, {b.num_edges()}, gen, at::kLong);
      const at::Tensor order = std::get<1>((b.dst * relations + etype).sort(c10::optional<bool>(true), 0, false));
      b.src = b.src.index_select(0, order);
      b.fields.Set(sampler::kEdgeType, etype.index_select(0, order));
      ASSERT_EQ(std::get<0>(at::_unique2(b.etype())).size(0), relations);
      b.src_type = at::arange(b.num_src, at::kLong).remainder(ScriptedModelTest::kNodeTypes);  // the inputs' prefix
    }
    const std::vector<at::Tensor> out = ForwardAndBackward({*builtin, *scripted}, batch);
    EXPECT_TRUE(at::allclose(out[0], out[1], 1e-5, 1e-5)) << out[0] << out[1];
    for (const auto& [tensor_name, tensor] : theirs) {
      EXPECT_TRUE(at::allclose(mine[tensor_name].grad(), tensor.grad(), 1e-4, 1e-5)) << tensor_name;
    }
  }
}

// RelGraphConv layers (fanout.models.GNN) against the built-in rgcn.
TEST_F(ScriptedModelTest, ReferenceRgcnFromPythonEqualsTheBuiltInRgcn) {
  ExpectTypedModelEqualsItsScript(this, ModelKind::kRgcn);
}

// fanout.models.HeteroGNN's R-GAT (RelGATConv layers, 2 heads of 4, a classifier) against rgat.
TEST_F(ScriptedModelTest, ReferenceRgatFromPythonEqualsTheBuiltInRgat) {
  ExpectTypedModelEqualsItsScript(this, ModelKind::kRgat);
}

// fanout.models.HeteroGNN's HGT (HGTConv layers reading block["src_type"], a classifier) against hgt.
TEST_F(ScriptedModelTest, ReferenceHgtFromPythonEqualsTheBuiltInHgt) {
  ExpectTypedModelEqualsItsScript(this, ModelKind::kHgt);
}

// A Python model built without a dropout (fanout.models.build, python3 -m fanout.export) drops
// what fanout-train's model of that name drops by default: the two read one table each.
TEST_F(ScriptedModelTest, PythonDropoutDefaultsAreFanoutTrains) {
  SKIP_WITHOUT_PYTHON_TORCH();
  const std::vector<std::string> kinds = {"sage", "gcn", "gat", "rgcn", "rgat", "hgt"};
  const std::string out = Path("dropouts.txt");
  const std::string script = StrCat("from fanout.models import default_dropout\nfor k in \"", base::StrJoin(kinds, " "),
                                    "\".split(): print(k, default_dropout(k))");
  ASSERT_EQ(testing::Python(StrCat("-c '", script, "'"), out), 0);
  std::ifstream in(out);
  std::string kind;
  double dropout = -1;
  size_t n = 0;
  while (in >> kind >> dropout) {
    ASSERT_LT(n, kinds.size());
    EXPECT_EQ(kind, kinds[n]);
    auto parsed = ParseModelKind(kind);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(dropout, DefaultDropout(*parsed)) << kind;
    ++n;
  }
  EXPECT_EQ(n, kinds.size());
}

// A script sees the batch's edge data as block["edge_feat"] (float32 [num_edges, width]) and
// block["edge_weight"]: here it sums w_e * edge_feat[e] into each destination, which this test
// recomputes.
TEST_F(ScriptedModelTest, ScriptsSeeEdgeFeaturesAndWeights) {
  const std::string path = Path("edges.pt");
  auto model = MakeModel(Scripted(path, 5, 3, 1), 0);
  ASSERT_TRUE(model.ok()) << model.status();
  BatchTensors t = RandomTensors(5, 3, 1, 29);
  BlockTensors& b = t.blocks[0];
  const at::Tensor edge_feat = at::rand({b.num_edges(), 3});
  b.fields.Set(sampler::kEdgeFeat, edge_feat);
  b.fields.Set(sampler::kEdgeWeight, at::rand({b.num_edges()}));
  const at::Tensor want =
      at::zeros({b.num_dst, 3}).index_add_(0, b.dst, edge_feat * b.edge_weight().unsqueeze(1));
  const at::Tensor got = (*model)->Forward(t.blocks, t.features);
  EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-6)) << got << want;
}

// Every reference layer gives the same outputs and gradients on fanout's operators as on plain
// tensor ops (same export seed, so the same parameters; eval mode, so no dropout).
TEST_F(ScriptedModelTest, FusedOperatorsEqualPlainTensorOpsForEveryLayer) {
  const int64_t in = 6, classes = 4, layers = 3;  // as exported
  const BatchTensors t = RandomTensors(in, classes, layers, 17);
  const std::vector<std::string> kinds = {"sage", "gcn", "gat", "gin"}, fusings = {"--fused", "--no-fused"};
  for (const std::string& kind : kinds) {
    SCOPED_TRACE(kind);
    std::vector<at::Tensor> out, grad;
    for (const std::string& kernels : fusings) {
      const std::string path = Path(StrCat("layers-", kind, kernels, ".pt"));
      auto m = MakeModel(Scripted(path, in, classes, layers), 0);
      ASSERT_TRUE(m.ok()) << m.status();
      (*m)->eval();
      const at::Tensor logits = (*m)->Forward(t.blocks, t.features);
      logits.pow(2).sum().backward();
      out.push_back(logits.detach());
      std::vector<at::Tensor> g;
      for (const auto& p : (*m)->parameters()) g.push_back(p.grad().flatten());
      grad.push_back(at::cat(g));
    }
    EXPECT_TRUE(at::allclose(out[0], out[1], 1e-5, 1e-5)) << out[0] << out[1];
    EXPECT_TRUE(at::allclose(grad[0], grad[1], 1e-4, 1e-5));
  }
}

TEST_F(ScriptedModelTest, GinWrittenInTheTestTrainsAndCheckpoints) {
  fanout::testing::TempDir dir;
  const int64_t in = 5, classes = 3, layers = 2;  // as written
  const std::string path = Path("gin.pt");
  auto model = MakeModel(Scripted(path, in, classes, layers), 0);
  ASSERT_TRUE(model.ok()) << model.status();
  const BatchTensors t = RandomTensors(in, classes, layers, 11);
  torch::optim::Adam opt((*model)->parameters(), torch::optim::AdamOptions(0.01));
  (*model)->train();
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    at::Tensor loss = at::cross_entropy_loss((*model)->Forward(t.blocks, t.features), t.labels);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, 0.5 * first) << "the optimizer updates the tensors the script computes with";
  // A checkpoint of the trained model, loaded into a fresh copy of the file, gives its outputs.
  (*model)->eval();
  const at::Tensor want = (*model)->Forward(t.blocks, t.features).detach();
  Checkpoint c;
  c.info["hyper_parameters"] = HyperParameters((*model)->options());
  c.state_dict = (*model)->StateDict();
  // The script's own names, dots and all (they were registered with underscores).
  ASSERT_EQ(c.state_dict.front().first, "eps");
  EXPECT_EQ(c.state_dict[1].first, "mlps.0.0.weight");
  ASSERT_TRUE(WriteCheckpoint(dir.Sub("ckpt.pt"), c).ok());
  auto fresh = MakeModel(Scripted(path, in, classes, layers), 0);
  ASSERT_TRUE(fresh.ok());
  (*fresh)->eval();
  EXPECT_FALSE(at::allclose((*fresh)->Forward(t.blocks, t.features), want));
  auto read = ReadCheckpoint(dir.Sub("ckpt.pt"));
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(LoadStateDict(**fresh, *read, dir.Sub("ckpt.pt")).ok());
  EXPECT_TRUE(at::allclose((*fresh)->Forward(t.blocks, t.features), want));
  // my_gin.py has no forward_layer: layer-wise inference is not offered for it.
  EXPECT_FALSE((*fresh)->SupportsLayerwise());
}

TEST_F(ScriptedModelTest, MismatchesAndBadFilesAreRefusedNamingBothValues) {
  fanout::testing::TempDir dir;
  const std::string path = Path("gin.pt");
  auto m = MakeModel(Scripted(path, 6, 3, 2), 0);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), StrCat("model ", path, " has in_dim = 5 but the feature width of the graph is 6"));
  m = MakeModel(Scripted(path, 5, 3, 3), 0);
  EXPECT_NE(m.status().message().find("num_layers = 2 but the number of --fanouts is 3"), std::string::npos)
      << m.status();
  m = MakeModel(Scripted(path, 5, 4, 2), 0);
  EXPECT_NE(m.status().message().find("num_classes = 3"), std::string::npos) << m.status();
  const std::string junk = dir.Sub("junk.pt");
  std::ofstream(junk) << "not a model";
  m = MakeModel(Scripted(junk, 5, 3, 2), 0);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(StrCat("model ", junk, ": cannot load it as TorchScript")), std::string::npos)
      << m.status();
  EXPECT_EQ(ParseModelKind("gin").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseModelKind("x.pt"), ModelKind::kScripted);
}

}  // namespace
}  // namespace fanout::trainer

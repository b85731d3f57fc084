// Layer-wise full-graph inference against the plain mini-batch forward pass with every
// neighbour in every layer, on one partition read from its files (the exchange of rows between
// ranks is exercised by train_cli_test with two partitions).
#include "trainer/inference.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "base/strings.h"
#include "core/partition_config.h"
#include "sampler/minibatch_sampler.h"
#include "tests/testing/testing.h"
#include "tests/trainer/python_testing.h"
#include "trainer/batch_tensors.h"

namespace fanout::trainer {
namespace {

using base::StrCat;

class InferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = fanout::testing::PartitionRandom(dir_, {.num_nodes = 300, .num_edges = 2500}, 1);
    ASSERT_FALSE(path.empty());
    auto config = core::LoadPartitionConfig(path);
    ASSERT_TRUE(config.ok());
    sampler::DistGraphOptions o;
    auto g = sampler::DistGraph::Open(*config, o);
    ASSERT_TRUE(g.ok()) << g.status();
    graph_ = std::move(*g);
    comm_ = MakeSoloCommunicator(CommBackend::kGloo, c10::Device(c10::kCPU));
  }

  ModelOptions Options(ModelKind kind) const {
    ModelOptions m;
    m.model = kind;
    m.in_dim = 8;
    m.hidden = 16;
    m.num_classes = 5;
    m.num_layers = 3;
    m.layer_heads = {3, 2, 1};
    return m;
  }

  // A TorchScript model over this graph (8 features, 5 classes).
  static ModelOptions Scripted(const std::string& path, int64_t layers) {
    ModelOptions m;
    m.model = ModelKind::kScripted;
    m.script_path = path;
    m.in_dim = 8;
    m.num_classes = 5;
    m.num_layers = layers;
    return m;
  }

  // The model's output for nodes [0, N) from one mini-batch with all neighbours in every layer.
  at::Tensor MiniBatchForward(GnnModel& model) {
    sampler::SamplerOptions so;
    so.fanouts.assign(model.options().num_layers, -1);
    so.label_field = "";
    std::vector<int64_t> all(graph_->num_nodes());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
    so.batch_size = static_cast<int64_t>(all.size());
    so.shuffle = false;
    sampler::MiniBatchSampler s(graph_.get(), so, all);
    auto mb = s.Sample(0, 0);
    EXPECT_TRUE(mb.ok()) << mb.status();
    auto t = ToTensors(*mb);
    EXPECT_TRUE(t.ok()) << t.status();
    model.eval();
    at::NoGradGuard no_grad;
    return model.Forward(t->blocks, t->features);
  }

  fanout::testing::TempDir dir_;
  std::unique_ptr<sampler::DistGraph> graph_;
  std::unique_ptr<Communicator> comm_;
};

TEST_F(InferenceTest, LayerwiseEqualsTheMiniBatchForwardWithAllNeighbours) {
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    auto model = MakeModel(Options(kind), 5);
    ASSERT_TRUE(model.ok());
    InferenceOptions io;
    io.batch_size = 64;  // several batches per layer
    int64_t layers_done = 0;
    io.on_layer = [&](int64_t layer, int64_t layers, double) {
      EXPECT_EQ(layer, layers_done++);
      EXPECT_EQ(layers, 3);
    };
    auto r = InferAllNodes(**model, *graph_, *comm_, io);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->layerwise);
    EXPECT_EQ(layers_done, 3);
    EXPECT_EQ(r->nodes.begin, 0);
    EXPECT_EQ(r->nodes.end, 300);
    const at::Tensor want = MiniBatchForward(**model);
    ASSERT_EQ(r->output.sizes(), want.sizes());
    // Up to float32 rounding (the features are in the hundreds): batches differ in size.
    const double scale = want.abs().max().item<double>();
    EXPECT_LE((r->output - want).abs().max().item<double>(), 1e-5 * scale) << ModelKindName(kind);
  }
}

// python/fanout's GNN has forward_layer: a scripted model runs layer by layer too, and its GCN
// takes the whole-graph out-degrees the block carries. A script without forward_layer
// (tests/trainer/my_gin.py) uses full neighbourhoods in every layer instead. (One case: one
// python writes every script.)
TEST_F(InferenceTest, ScriptedModelsRunLayerByLayerWhenTheyHaveForwardLayer) {
  SKIP_WITHOUT_PYTHON_TORCH();
  const std::vector<std::string> kinds = {"sage", "gcn", "gat"};
  std::vector<std::string> commands = {StrCat(FANOUT_SOURCE_DIR, "/tests/trainer/my_gin.py ", dir_.Sub("gin.pt"), " 8 5 2")};
  for (const std::string& kind : kinds) {
    commands.push_back(
        StrCat("-m fanout.export ", kind, " --in-dim 8 --hidden 16 --classes 5 --layers 3 -o ", dir_.Sub(StrCat(kind, ".pt"))));
  }
  ASSERT_EQ(testing::PythonRuns(commands), 0);
  {
    auto model = MakeModel(Scripted(dir_.Sub("gin.pt"), 2), 0);
    ASSERT_TRUE(model.ok()) << model.status();
    InferenceOptions io;
    io.batch_size = 100;
    auto r = InferAllNodes(**model, *graph_, *comm_, io);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->layerwise);
    const at::Tensor want = MiniBatchForward(**model);
    EXPECT_LE((r->output - want).abs().max().item<double>(), 1e-5 * want.abs().max().item<double>());
  }
  for (const std::string& kind : kinds) {
    const std::string path = dir_.Sub(StrCat(kind, ".pt"));
    auto model = MakeModel(Scripted(path, 3), 0);
    ASSERT_TRUE(model.ok()) << model.status();
    InferenceOptions io;
    io.batch_size = 64;
    auto r = InferAllNodes(**model, *graph_, *comm_, io);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->layerwise) << kind;
    const at::Tensor want = MiniBatchForward(**model);
    // The features here are in the hundreds: PyTorch's initialisation of the scripted GAT puts its
    // attention logits in the thousands, where the softmax turns float32 rounding of differently
    // sized batches into a relative 1e-4 (the predicted classes agree).
    const double tolerance = std::string(kind) == "gat" ? 1e-3 : 1e-5;
    EXPECT_LE((r->output - want).abs().max().item<double>(), tolerance * want.abs().max().item<double>()) << kind;
    EXPECT_TRUE(at::equal(r->output.argmax(1), want.argmax(1))) << kind;
  }
}

TEST(RankNodesTest, SharesTilePartitionsInRankOrder) {
  auto book = core::RangePartitionBook::FromBounds({0, 10, 10, 17});
  ASSERT_TRUE(book.ok());
  std::vector<std::pair<int64_t, int64_t>> got;
  for (int r = 0; r < 6; ++r) {
    NodeShare s = RankNodes(*book, 2, r);
    got.emplace_back(s.begin, s.end);
  }
  EXPECT_EQ(got, (std::vector<std::pair<int64_t, int64_t>>{{0, 5}, {5, 10}, {10, 10}, {10, 10}, {10, 13}, {13, 17}}));
}

}  // namespace
}  // namespace fanout::trainer

// Each model's forward pass and gradients against a dense reference written independently in
// the test (adjacency matrices and per-destination loops in float64), on blocks with
// duplicate edges, self loops and destinations without in-edges.
#include "trainer/models.h"

#include <ATen/ATen.h>

#include <cmath>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "tests/trainer/test_batches.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {
namespace {

using Params = std::map<std::string, at::Tensor>;

// The model's parameters as float64 leaves that track gradients, by name.
Params DoubleParams(GnnModel& model) {
  Params out;
  for (const auto& item : model.named_parameters()) {
    out[item.key()] = item.value().detach().to(at::kDouble).requires_grad_(true);
  }
  return out;
}

// Dense [num_dst, num_src] edge-count matrix of a block (multi-edges count twice).
at::Tensor DenseAdjacency(const sampler::Block& b) {
  at::Tensor a = at::zeros({b.num_dst, b.num_src()}, at::kDouble);
  auto acc = a.accessor<double, 2>();
  for (int64_t j = 0; j < b.num_dst; ++j) {
    for (int64_t e = b.indptr[j]; e < b.indptr[j + 1]; ++e) acc[j][b.indices[e]] += 1.0;
  }
  return a;
}

at::Tensor RefSage(const sampler::Block& b, const at::Tensor& h, const Params& p,
                   const std::string& layer) {
  const at::Tensor a = DenseAdjacency(b);
  const at::Tensor mean = at::matmul(a, h) / a.sum(1, true).clamp_min(1);
  return at::matmul(h.narrow(0, 0, b.num_dst), p.at(layer + ".fc_self").t()) +
         at::matmul(mean, p.at(layer + ".fc_neigh").t()) + p.at(layer + ".bias");
}

at::Tensor RefGcn(const sampler::Block& b, const at::Tensor& h, const Params& p,
                  const std::string& layer) {
  const at::Tensor a = DenseAdjacency(b);
  const at::Tensor norm_src = a.sum(0).clamp_min(1).pow(-0.5);  // out-degrees in the block
  const at::Tensor norm_dst = a.sum(1).clamp_min(1).pow(-0.5);  // in-degrees in the block
  const at::Tensor normalised = norm_dst.unsqueeze(1) * a * norm_src.unsqueeze(0);
  return at::matmul(at::matmul(normalised, h), p.at(layer + ".weight").t()) + p.at(layer + ".bias");
}

// [num_dst, heads, out], one softmax per destination over its edge list.
at::Tensor RefGat(const sampler::Block& b, const at::Tensor& h, const Params& p,
                  const std::string& layer, int64_t heads) {
  const at::Tensor attn_l = p.at(layer + ".attn_l");
  const int64_t out = attn_l.size(1);
  const at::Tensor z = at::matmul(h, p.at(layer + ".fc").t()).view({-1, heads, out});
  const at::Tensor el = (z * attn_l).sum(-1);
  const at::Tensor er = (z * p.at(layer + ".attn_r")).sum(-1);
  const at::Tensor bias = p.at(layer + ".bias").view({heads, out});
  std::vector<at::Tensor> rows;
  for (int64_t v = 0; v < b.num_dst; ++v) {
    at::Tensor row = at::zeros({heads, out}, at::kDouble);
    if (b.indptr[v + 1] > b.indptr[v]) {
      std::vector<int64_t> sources(b.indices.begin() + b.indptr[v],
                                   b.indices.begin() + b.indptr[v + 1]);
      const at::Tensor u = at::tensor(sources, at::kLong);
      const at::Tensor logits = at::leaky_relu(el.index_select(0, u) + er[v], 0.2);  // [k, H]
      const at::Tensor attention = at::softmax(logits, 0);
      row = (attention.unsqueeze(-1) * z.index_select(0, u)).sum(0);
    }
    rows.push_back(row + bias);
  }
  return at::stack(rows);
}

// R-GAT's layer, [num_dst, heads, out]: per relation r, a dense attention over the relation's edge
// counts (a multi-edge counts twice in the softmax, as an edge list does), summed, plus the
// destination's own projection.
at::Tensor RefRgat(const sampler::Block& b, const at::Tensor& h, const Params& p, const std::string& layer,
                   int64_t heads, int64_t relations) {
  const at::Tensor attn_l = p.at(layer + ".attn_l"), attn_r = p.at(layer + ".attn_r");
  const int64_t out = attn_l.size(1), in = h.size(1);
  const at::Tensor h_dst = h.narrow(0, 0, b.num_dst);
  at::Tensor result = (at::matmul(h_dst, p.at(layer + ".fc_self").t()) + p.at(layer + ".bias")).view({-1, heads, out});
  const at::Tensor fc = p.at(layer + ".fc").view({relations, heads * out, in});
  for (int64_t r = 0; r < relations; ++r) {
    at::Tensor count = at::zeros({b.num_dst, b.num_src()}, at::kDouble);
    auto acc = count.accessor<double, 2>();
    for (int64_t j = 0; j < b.num_dst; ++j) {
      for (int64_t e = b.indptr[j]; e < b.indptr[j + 1]; ++e) {
        if ((b.etype().empty() ? 0 : b.etype()[e]) == r) acc[j][b.indices[e]] += 1.0;
      }
    }
    const at::Tensor z = at::matmul(h, fc[r].t()).view({-1, heads, out});                    // [S, H, out]
    const at::Tensor el = (z * attn_l.narrow(0, r * heads, heads)).sum(-1);                 // [S, H]
    const at::Tensor er = (z.narrow(0, 0, b.num_dst) * attn_r.narrow(0, r * heads, heads)).sum(-1);  // [D, H]
    const at::Tensor logits = at::leaky_relu(er.unsqueeze(1) + el.unsqueeze(0), 0.2);       // [D, S, H]
    // Softmax over each destination's edges: count-weighted exponentials of the shifted logits.
    const at::Tensor present = count.gt(0).unsqueeze(-1);
    const at::Tensor shift = logits.masked_fill(present.logical_not(), -1e300).amax(1, true).detach();
    const at::Tensor weight = count.unsqueeze(-1) * at::exp((logits - shift).masked_fill(present.logical_not(), 0));
    const at::Tensor attention = weight / weight.sum(1, true).clamp_min(1e-300);          // [D, S, H]
    result = result + at::einsum("dsh,sho->dho", {attention, z});
  }
  return result;
}

// HGT's layer, [num_dst, F] (PyG's HGTConv, docs/training.md): per-type k, q, v; per relation its
// transforms of k and v and its prior; one softmax per destination over all of its edges (the
// relations' dense edge-count matrices together), the GELU, the per-type output projection and
// the gated skip where the widths agree. `types`: each source's node type.
at::Tensor RefHgt(const sampler::Block& b, const at::Tensor& h, const Params& p, const std::string& layer,
                  int64_t heads, int64_t node_types, int64_t relations, const at::Tensor& types) {
  const int64_t f = p.at(layer + ".p_rel").size(1) * p.at(layer + ".k_rel").size(1), d = f / heads, in = h.size(1);
  const int64_t num_src = b.num_src(), num_dst = b.num_dst;
  const at::Tensor w = p.at(layer + ".kqv").view({node_types, 3 * f, in}).index_select(0, types);
  const at::Tensor kqv = at::bmm(w, h.unsqueeze(-1)).squeeze(-1) +
                         p.at(layer + ".kqv_bias").view({node_types, 3 * f}).index_select(0, types);
  const at::Tensor k = kqv.narrow(1, 0, f).view({num_src, heads, d});
  const at::Tensor q = kqv.narrow(1, f, f).narrow(0, 0, num_dst).view({num_dst, heads, d});
  const at::Tensor v = kqv.narrow(1, 2 * f, f).view({num_src, heads, d});
  std::vector<at::Tensor> logits, counts, messages;
  for (int64_t r = 0; r < relations; ++r) {
    at::Tensor count = at::zeros({num_dst, num_src}, at::kDouble);
    auto acc = count.accessor<double, 2>();
    for (int64_t j = 0; j < num_dst; ++j) {
      for (int64_t e = b.indptr[j]; e < b.indptr[j + 1]; ++e) {
        if ((b.etype().empty() ? 0 : b.etype()[e]) == r) acc[j][b.indices[e]] += 1.0;
      }
    }
    const at::Tensor key = at::einsum("shd,hde->she", {k, p.at(layer + ".k_rel").narrow(0, r * heads, heads)});
    messages.push_back(at::einsum("shd,hde->she", {v, p.at(layer + ".v_rel").narrow(0, r * heads, heads)}));
    logits.push_back(at::einsum("dhe,she->dsh", {q, key}) * p.at(layer + ".p_rel")[r] / std::sqrt(static_cast<double>(d)));
    counts.push_back(count.unsqueeze(-1));
  }
  const at::Tensor logit = at::stack(logits), count = at::stack(counts);  // [R, D, S, H], [R, D, S, 1]
  const at::Tensor absent = count.eq(0).expand_as(logit);
  const at::Tensor shift = logit.masked_fill(absent, -1e300).amax({0, 2}, true).detach();
  const at::Tensor weight = count * at::exp((logit - shift).masked_fill(absent, 0));
  const at::Tensor attention = weight / weight.sum(at::IntArrayRef{0, 2}, true).clamp_min(1e-300);
  const at::Tensor agg = at::einsum("rdsh,rshe->dhe", {attention, at::stack(messages)}).reshape({num_dst, f});
  const at::Tensor dst_types = types.narrow(0, 0, num_dst);
  const at::Tensor out_w = p.at(layer + ".out").view({node_types, f, f}).index_select(0, dst_types);
  at::Tensor out = at::bmm(out_w, at::gelu(agg).unsqueeze(-1)).squeeze(-1) +
                   p.at(layer + ".out_bias").view({node_types, f}).index_select(0, dst_types);
  if (in == f) {
    const at::Tensor gate = p.at(layer + ".skip").index_select(0, dst_types).sigmoid().unsqueeze(1);
    out = gate * out + (1 - gate) * h.narrow(0, 0, num_dst);
  }
  return out;
}

// The whole model, layer by layer, as docs/training.md defines it.
at::Tensor RefModel(const ModelOptions& o, const sampler::MiniBatch& batch, const Params& p) {
  at::Tensor h = at::from_blob(const_cast<float*>(batch.features.as<float>()),
                               {batch.features.rows, batch.features.cols}, at::kFloat)
                     .to(at::kDouble);
  for (int64_t l = 0; l < o.num_layers; ++l) {
    const std::string layer = "layer" + std::to_string(l);
    const bool last = l + 1 == o.num_layers;
    switch (o.model) {
      case ModelKind::kSage:
        h = RefSage(batch.blocks[l], h, p, layer);
        if (!last) h = at::relu(h);
        break;
      case ModelKind::kGcn:
        h = RefGcn(batch.blocks[l], h, p, layer);
        if (!last) h = at::relu(h);
        break;
      case ModelKind::kGat:
        h = RefGat(batch.blocks[l], h, p, layer, HeadsOf(o, l));
        h = last ? h.mean(1) : at::elu(h).flatten(1);
        break;
      case ModelKind::kRgat:
        h = at::elu(RefRgat(batch.blocks[l], h, p, layer, HeadsOf(o, l), o.num_relations).flatten(1));
        if (last) h = at::matmul(h, p.at("classifier.weight").t()) + p.at("classifier.bias");
        break;
      case ModelKind::kHgt: {
        const at::Tensor types =
            batch.input_types().empty()
                ? at::zeros({batch.blocks[l].num_src()}, at::kLong)
                : at::tensor(std::vector<int64_t>(
                      batch.input_types().begin(),
                      batch.input_types().begin() + batch.blocks[l].num_src()));
        h = RefHgt(batch.blocks[l], h, p, layer, HeadsOf(o, l), o.num_node_types, o.num_relations, types);
        if (last) h = at::matmul(h, p.at("classifier.weight").t()) + p.at("classifier.bias");
        break;
      }
      case ModelKind::kScripted:  // scripted_model_test.cc compares it with the built-in sage
      case ModelKind::kRgcn:      // typed_training_test.cc has its dense reference
        ADD_FAILURE() << "no dense reference here for model " << static_cast<int>(o.model);
        break;
    }
  }
  return h;
}

double MaxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

struct Case {
  ModelKind model;
  int64_t num_layers;
  int64_t in_dim, hidden, num_classes;
  bool hand_built;  // the one-block hand-built batch, or a random multi-layer one
  std::vector<int64_t> layer_heads = {};  // gat, rgat: per layer (--heads 8,1); empty: 3 in every layer
  int64_t relations = 1;  // rgat, hgt: edge e of block l gets relation (e + l) % relations (none with 1)
  int64_t node_types = 1;  // hgt: input node i has type i % node_types (none with 1)
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << ModelKindName(c.model) << " " << c.num_layers << " layers, " << c.in_dim << " -> "
      << c.hidden << " -> " << c.num_classes << (c.hand_built ? ", hand-built" : ", random");
}

class ModelVsReferenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(ModelVsReferenceTest, ForwardAndGradientsMatchDenseReference) {
  const Case c = GetParam();
  ModelOptions o;
  o.model = c.model;
  o.in_dim = c.in_dim;
  o.hidden = c.hidden;
  o.num_classes = c.num_classes;
  o.num_layers = c.num_layers;
  o.heads = 3;
  o.layer_heads = c.layer_heads;
  o.dropout = 0.5;  // eval() must switch it off
  testing::RandomBatchSpec spec;
  spec.num_layers = c.num_layers;
  spec.in_dim = c.in_dim;
  spec.num_classes = c.num_classes;
  spec.seed = 11;
  sampler::MiniBatch batch = c.hand_built ? testing::HandBuiltBatch(c.in_dim, c.num_classes)
                                          : testing::MakeRandomBatch(spec);
  o.num_relations = c.relations;
  o.num_node_types = c.node_types;
  if (c.node_types > 1) {
    const int64_t inputs = batch.blocks.front().num_src();
    sampler::Int32Array& types = batch.input_fields.Add<int32_t>(sampler::kInputTypes);
    for (int64_t i = 0; i < inputs; ++i) types.push_back(static_cast<int32_t>(i % c.node_types));
  }
  if (c.relations > 1) {
    for (size_t l = 0; l < batch.blocks.size(); ++l) {
      sampler::Block& b = batch.blocks[l];
      sampler::Int32Array& etype = b.fields.Add<int32_t>(sampler::kEdgeType);
      etype.resize(b.num_edges());
      for (int64_t e = 0; e < b.num_edges(); ++e)
        etype[e] = static_cast<int32_t>((e + l) % c.relations);
    }
  }
  absl::StatusOr<BatchTensors> t = ToTensors(batch);
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<std::shared_ptr<GnnModel>> model = MakeModel(o, /*init_seed=*/3);
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->eval();

  const at::Tensor logits = (*model)->Forward(t->blocks, t->features);
  const Params p = DoubleParams(**model);
  const at::Tensor ref = RefModel(o, batch, p);
  ASSERT_EQ(logits.sizes(), ref.sizes());
  EXPECT_EQ(logits.size(0), batch.blocks.back().num_dst);
  EXPECT_EQ(logits.size(1), c.num_classes);
  EXPECT_LE(MaxAbsDiff(logits, ref), 1e-5) << "logits " << logits << "\nreference " << ref;
  if (c.model == ModelKind::kRgat || c.model == ModelKind::kHgt) {  // the ATen composition (CUDA's) agrees
    ModelOptions plain = o;
    plain.fused = false;
    auto unfused = MakeModel(plain, /*init_seed=*/3);
    ASSERT_TRUE(unfused.ok()) << unfused.status();
    (*unfused)->eval();
    EXPECT_LE(MaxAbsDiff((*unfused)->Forward(t->blocks, t->features), logits), 1e-5);
  }

  // Gradients of the same scalar through both: checks the index_add / index_select backward
  // (and that the softmax's max shift carries no gradient).
  const at::Tensor weights =
      at::linspace(-1.0, 1.0, logits.numel(), at::kDouble).view(logits.sizes());
  (logits.to(at::kDouble) * weights).sum().backward();
  (ref * weights).sum().backward();
  for (const auto& item : (*model)->named_parameters()) {
    const at::Tensor& ref_grad = p.at(item.key()).grad();
    ASSERT_TRUE(item.value().grad().defined()) << item.key();
    ASSERT_TRUE(ref_grad.defined()) << item.key();
    EXPECT_LE(MaxAbsDiff(item.value().grad(), ref_grad), 1e-5) << item.key();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, ModelVsReferenceTest,
    ::testing::Values(
        // One hand-built block, in_dim above and below out_dim; across these cases
        // ProjectBeforeAggregating picks both orders.
        Case{ModelKind::kSage, 1, 6, 4, 3, true}, Case{ModelKind::kSage, 1, 2, 4, 3, true},
        Case{ModelKind::kGcn, 1, 6, 4, 3, true}, Case{ModelKind::kGcn, 1, 2, 4, 3, true},
        Case{ModelKind::kGat, 1, 6, 4, 3, true},
        // Random multi-layer batches.
        Case{ModelKind::kSage, 2, 5, 8, 3, false}, Case{ModelKind::kGcn, 2, 5, 8, 3, false},
        Case{ModelKind::kGat, 2, 5, 4, 3, false}, Case{ModelKind::kSage, 3, 5, 8, 4, false},
        Case{ModelKind::kGat, 3, 5, 4, 4, false}, Case{ModelKind::kGat, 2, 5, 4, 3, false, {8, 1}},
        Case{ModelKind::kGat, 3, 5, 4, 4, false, {2, 4, 1}},
        // R-GAT: one relation on a block without edge types, and 3 relations (one of them absent
        // from some destinations' edges).
        Case{ModelKind::kRgat, 1, 6, 6, 3, true}, Case{ModelKind::kRgat, 2, 5, 6, 3, false, {}, 3},
        Case{ModelKind::kRgat, 3, 5, 4, 4, false, {2, 4, 1}, 3},
        // HGT (hidden split into the heads): one type and relation on a block without types; 2
        // node types and 3 relations, with the gated skip where the input has the hidden width.
        Case{ModelKind::kHgt, 1, 6, 6, 3, true}, Case{ModelKind::kHgt, 2, 5, 6, 3, false, {}, 3, 2},
        Case{ModelKind::kHgt, 2, 6, 6, 4, false, {3, 1}, 3, 2}),
    [](const ::testing::TestParamInfo<Case>& info) {
      const Case& c = info.param;
      std::string heads;
      for (int64_t h : c.layer_heads) heads += "_" + std::to_string(h);
      return std::string(ModelKindName(c.model)) + "_" + std::to_string(c.num_layers) +
             "layers_in" + std::to_string(c.in_dim) + (c.hand_built ? "_hand" : "_random") +
             (heads.empty() ? "" : "_heads" + heads) + (c.relations > 1 ? "_rel" + std::to_string(c.relations) : "") +
             (c.node_types > 1 ? "_types" + std::to_string(c.node_types) : "");
    });

// A block from explicit sizes: every destination gets edges from sources 0, 1, 2, ... in turn.
BlockTensors UniformBlock(int64_t num_src, int64_t num_dst, int64_t num_edges) {
  BlockTensors b;
  b.num_src = num_src;
  b.num_dst = num_dst;
  b.indptr = at::arange(num_dst + 1, at::kLong) * (num_edges / num_dst);
  b.src = at::arange(num_edges, at::kLong).remainder(num_src);
  b.dst = at::arange(num_edges, at::kLong).div(num_edges / num_dst, "floor");
  b.in_degree = at::full({num_dst}, num_edges / num_dst, at::kLong);
  return b;
}

// Sizes no machine holds are refused before LibTorch is asked for them (it would throw c10::Error
// out of the constructor: "can't allocate 43980465111040 bytes"), naming --hidden and both sizes.
TEST(ModelTest, AModelThatCannotFitIsRefusedUpFront) {
  ModelOptions o;
  o.in_dim = 100;
  o.num_classes = 47;
  o.num_layers = 3;
  o.hidden = 256;
  EXPECT_TRUE(CheckModelFits(o, int64_t{1} << 30).ok());
  // sage, 3 layers: 2 x (100 x 256 + 256 x 256 + 256 x 47) weights x 4 copies x 4 bytes = 1.47 MiB.
  EXPECT_FALSE(CheckModelFits(o, 1 << 20).ok());
  o.hidden = 99999999999;
  o.num_layers = 2;  // (3 layers would overflow the count: 10^22 weights in hidden x hidden)
  absl::Status s = CheckModelFits(o, int64_t{1} << 40);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("--hidden 99999999999"), std::string::npos) << s;
  EXPECT_NE(std::string(s.message()).find("MiB, more than this machine's 1048576 MiB"), std::string::npos) << s;
  o.hidden = int64_t{1} << 40;  // the count itself overflows (hidden x hidden)
  o.num_layers = 3;
  s = CheckModelFits(o, int64_t{1} << 40);
  EXPECT_NE(std::string(s.message()).find("more bytes than an int64 counts"), std::string::npos) << s;
  o.model = ModelKind::kGat;
  o.hidden = 64;
  o.heads = 8;
  EXPECT_TRUE(CheckModelFits(o, int64_t{1} << 30).ok());
  EXPECT_FALSE(MakeModel([] {
                 ModelOptions big;
                 big.in_dim = 16;
                 big.num_classes = 3;
                 big.hidden = 99999999999;
                 return big;
               }(),
               0)
                   .ok());
}

TEST(ModelTest, ProjectBeforeAggregatingComparesTheTwoCosts) {
  // Many sources, few edges (a sampled block): projecting every source costs more.
  EXPECT_FALSE(ProjectBeforeAggregating(UniformBlock(1000, 10, 20), 100, 16));
  // Few sources, many edges, a narrow output: aggregating narrow messages wins.
  EXPECT_TRUE(ProjectBeforeAggregating(UniformBlock(10, 10, 1000), 100, 4));
  // DGL's rule (in > out) would say "project first" for both.
}

// A `layers`-layer model of `kind` (7 -> 12 -> ... -> 4, 2 heads for gat), and a random batch
// for it drawn from `seed`.
ModelOptions SmallModel(ModelKind kind, int64_t layers) {
  ModelOptions o;
  o.model = kind;
  o.in_dim = 7;
  o.hidden = 12;
  o.num_classes = 4;
  o.num_layers = layers;
  o.heads = 2;
  return o;
}
absl::StatusOr<BatchTensors> SmallBatch(int64_t layers, uint64_t seed) {
  testing::RandomBatchSpec spec;
  spec.num_layers = layers;
  spec.in_dim = 7;
  spec.num_classes = 4;
  spec.seed = seed;
  return ToTensors(testing::MakeRandomBatch(spec));
}

// The fused kernels and the ATen composition give the same model, in training mode too
// (same dropout draws), forward and backward.
TEST(ModelTest, FusedAndCompositionModelsAgree) {
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    SCOPED_TRACE(std::string(ModelKindName(kind)));
    ModelOptions o = SmallModel(kind, 3);
    auto t = SmallBatch(3, 21);
    ASSERT_TRUE(t.ok()) << t.status();
    std::vector<at::Tensor> logits, grads;
    for (bool fused : {true, false}) {
      o.fused = fused;
      auto model = MakeModel(o, 4);
      ASSERT_TRUE(model.ok()) << model.status();
      (*model)->train();
      SeedTorch(8);
      const at::Tensor out = (*model)->Forward(t->blocks, t->features);
      out.pow(2).sum().backward();
      logits.push_back(out.detach());
      std::vector<at::Tensor> g;
      for (const auto& p : (*model)->parameters()) g.push_back(p.grad().flatten());
      grads.push_back(at::cat(g));
    }
    EXPECT_LE(MaxAbsDiff(logits[0], logits[1]), 1e-5);
    EXPECT_LE(MaxAbsDiff(grads[0], grads[1]), 1e-4 * (1 + grads[1].abs().max().item<double>()));
  }
}

// Infer (evaluation: the model gets the last reference to its input, and GraphSAGE's layer lets
// go of it once read) gives Forward's output bit for bit, fused or not, and the input is really
// let go: a weak reference to it is expired afterwards.
TEST(ModelTest, InferGivesForwardsOutputAndLetsGoOfTheInput) {
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    for (bool fused : {true, false}) {
      SCOPED_TRACE(::testing::Message() << ModelKindName(kind) << (fused ? " fused" : " composed"));
      ModelOptions o = SmallModel(kind, 3);
      o.fused = fused;
      auto t = SmallBatch(3, 21);
      ASSERT_TRUE(t.ok()) << t.status();
      auto model = MakeModel(o, 4);
      ASSERT_TRUE(model.ok()) << model.status();
      (*model)->eval();
      torch::NoGradGuard no_grad;
      const at::Tensor want = (*model)->Forward(t->blocks, t->features);
      at::Tensor x = t->features.clone();
      const c10::weak_intrusive_ptr<c10::StorageImpl> storage(x.storage().getWeakStorageImpl());
      t->features = at::Tensor();
      const at::Tensor got = (*model)->Infer(t->blocks, std::move(x));
      EXPECT_TRUE(got.equal(want));
      EXPECT_TRUE(storage.expired());
    }
  }
}

// Edge weights (DGL's edge_weight): the fused kernels and the composition agree with random
// weights, forward and backward (gradients reach the weights too); weights of 1 change nothing;
// weights of 0 silence every neighbour, as a block without edges.
TEST(ModelTest, EdgeWeightsScaleMessagesInEveryModel) {
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    SCOPED_TRACE(std::string(ModelKindName(kind)));
    ModelOptions o = SmallModel(kind, 2);
    o.dropout = 0;
    auto t = SmallBatch(2, 23);
    ASSERT_TRUE(t.ok()) << t.status();
    auto forward = [&](bool fused, const std::vector<BlockTensors>& blocks) {
      o.fused = fused;
      auto model = MakeModel(o, 4);
      EXPECT_TRUE(model.ok()) << model.status();
      (*model)->eval();
      return (*model)->Forward(blocks, t->features);
    };
    const at::Tensor plain = forward(true, t->blocks).detach();
    std::vector<BlockTensors> weighted = t->blocks, ones = t->blocks, zeros = t->blocks, edgeless = t->blocks;
    std::vector<at::Tensor> weights;
    for (size_t l = 0; l < weighted.size(); ++l) {
      weights.push_back(at::rand({weighted[l].num_edges()}).mul_(2).requires_grad_(true));
      weighted[l].fields.Set(sampler::kEdgeWeight, weights.back());
      ones[l].fields.Set(sampler::kEdgeWeight, at::ones({ones[l].num_edges()}));
      zeros[l].fields.Set(sampler::kEdgeWeight, at::zeros({zeros[l].num_edges()}));
    }
    // Fused against composition, with gradients into the weights.
    std::vector<at::Tensor> outs, grads;
    for (bool fused : {true, false}) {
      for (const at::Tensor& w : weights) w.mutable_grad() = at::Tensor();
      const at::Tensor out = forward(fused, weighted);
      out.pow(2).sum().backward();
      outs.push_back(out.detach());
      grads.push_back(weights[0].grad().clone());
    }
    EXPECT_LE(MaxAbsDiff(outs[0], outs[1]), 1e-5);
    EXPECT_LE(MaxAbsDiff(grads[0], grads[1]), 1e-4 * (1 + grads[1].abs().max().item<double>()));
    EXPECT_GT(MaxAbsDiff(outs[0], plain), 1e-3) << "the weights changed nothing";
    for (bool fused : {true, false}) EXPECT_LE(MaxAbsDiff(forward(fused, ones).detach(), plain), 1e-5);
    // Zero weights in the output layer: only the destination itself (SAGE) or the bias remains.
    BlockTensors& top = edgeless.back();
    top.indptr = at::zeros({top.num_dst + 1}, at::kLong);
    top.src = top.dst = at::empty({0}, at::kLong);
    top.in_degree = at::zeros({top.num_dst}, at::kLong);
    zeros.front().fields.Set(sampler::kEdgeWeight, at::Tensor());
    for (bool fused : {true, false}) {
      EXPECT_LE(MaxAbsDiff(forward(fused, zeros).detach(), forward(fused, edgeless).detach()), 1e-5);
    }
  }
}

// Logits in the thousands overflow exp() unless each destination's softmax is shifted by its max.
TEST(ModelTest, GatAttentionIsStableForLargeLogits) {
  ModelOptions o;
  o.model = ModelKind::kGat;
  o.in_dim = 5;
  o.hidden = 4;
  o.num_classes = 3;
  o.num_layers = 1;
  o.heads = 2;
  sampler::MiniBatch batch = testing::HandBuiltBatch(o.in_dim, o.num_classes);
  std::vector<float> scaled(batch.features.as<float>(), batch.features.as<float>() + 7 * o.in_dim);
  for (float& f : scaled) f *= 1e4f;
  batch.features = testing::OwnedRows(std::move(scaled), o.in_dim);
  auto t = ToTensors(batch);
  auto model = MakeModel(o, 1);
  ASSERT_TRUE(t.ok() && model.ok());
  (*model)->eval();
  const at::Tensor logits = (*model)->Forward(t->blocks, t->features);
  EXPECT_TRUE(at::isfinite(logits).all().item<bool>()) << logits;
  const at::Tensor ref = RefModel(o, batch, DoubleParams(**model));
  EXPECT_TRUE(at::allclose(logits.to(at::kDouble), ref, 1e-4, 1e-2)) << logits << ref;
}

TEST(ModelTest, ParametersAreDeterministicInOrderAndValue) {
  ModelOptions o;
  o.model = ModelKind::kGat;
  o.in_dim = 5;
  o.hidden = 4;
  o.num_classes = 3;
  o.heads = 2;
  auto a = MakeModel(o, 1), b = MakeModel(o, 1), c = MakeModel(o, 2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  std::vector<std::string> names;
  for (const auto& item : (*a)->named_parameters()) names.push_back(item.key());
  EXPECT_EQ(names, (std::vector<std::string>{"layer0.fc", "layer0.attn_l", "layer0.attn_r",
                                             "layer0.bias", "layer1.fc", "layer1.attn_l",
                                             "layer1.attn_r", "layer1.bias"}));
  const auto pa = (*a)->parameters(), pb = (*b)->parameters(), pc = (*c)->parameters();
  EXPECT_EQ(pa[0].sizes(), (at::IntArrayRef{8, 5}));  // heads * hidden x in
  EXPECT_EQ(pa[4].sizes(), (at::IntArrayRef{6, 8}));  // heads * classes x heads * hidden
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(at::equal(pa[i], pb[i])) << names[i];
  }
  EXPECT_FALSE(at::equal(pa[0], pc[0]));
}

TEST(ModelTest, DropoutActsOnlyInTrainingMode) {
  ModelOptions o;
  o.in_dim = 5;
  o.hidden = 16;
  o.num_classes = 3;
  o.dropout = 0.5;
  auto model = MakeModel(o, 1);
  ASSERT_TRUE(model.ok());
  auto t = ToTensors(testing::MakeRandomBatch({}));
  ASSERT_TRUE(t.ok());
  (*model)->eval();
  const at::Tensor e1 = (*model)->Forward(t->blocks, t->features);
  const at::Tensor e2 = (*model)->Forward(t->blocks, t->features);
  EXPECT_TRUE(at::equal(e1, e2));
  (*model)->train();
  SeedTorch(5);
  const at::Tensor t1 = (*model)->Forward(t->blocks, t->features);
  SeedTorch(5);
  const at::Tensor t2 = (*model)->Forward(t->blocks, t->features);
  EXPECT_TRUE(at::equal(t1, t2));   // dropout follows SeedTorch
  EXPECT_FALSE(at::equal(t1, e1));  // and is on
}

TEST(ModelTest, MismatchedInputIsAnInvalidArgumentStatus) {
  ModelOptions o;
  o.in_dim = 5;
  o.num_classes = 3;
  o.num_layers = 3;
  auto model = MakeModel(o, 1);
  ASSERT_TRUE(model.ok());
  auto t = ToTensors(testing::MakeRandomBatch({}));  // 2 blocks
  ASSERT_TRUE(t.ok());
  absl::StatusOr<at::Tensor> out =
      CatchTorch("forward", [&] { return (*model)->Forward(t->blocks, t->features); });
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("model has 3 layers but the mini-batch has 2 blocks"),
            std::string::npos)
      << out.status();
}

TEST(ModelTest, OptionsAreValidated) {
  EXPECT_EQ(ParseModelKind("gat").value(), ModelKind::kGat);
  EXPECT_EQ(ParseModelKind("GraphSAGE").status().code(), absl::StatusCode::kInvalidArgument);
  ModelOptions o;
  o.in_dim = 5;
  o.num_classes = 3;
  EXPECT_TRUE(ValidateModelOptions(o).ok());
  o.dropout = 1.0;
  EXPECT_NE(MakeModel(o, 1).status().message().find("dropout"), std::string::npos);
  o.dropout = 0.1;
  o.in_dim = 0;
  EXPECT_NE(MakeModel(o, 1).status().message().find("in_dim"), std::string::npos);
  // hgt (and rgat) split --hidden into their heads: a width the heads do not divide is refused.
  EXPECT_EQ(ParseModelKind("hgt").value(), ModelKind::kHgt);
  EXPECT_EQ(ParseModelKind("rgat").value(), ModelKind::kRgat);
  o.in_dim = 5;
  o.model = ModelKind::kHgt;
  o.hidden = 30;
  o.layer_heads = {3, 4};
  EXPECT_EQ(MakeModel(o, 1).status().message(),
            "model option hidden = 30: hgt splits it into heads: it must be a multiple of layer 1's 4 heads (--heads)");
  o.layer_heads = {3, 5};
  EXPECT_TRUE(MakeModel(o, 1).ok());
  o.num_node_types = 0;
  EXPECT_NE(MakeModel(o, 1).status().message().find("num_node_types"), std::string::npos);
}

}  // namespace
}  // namespace fanout::trainer

// Issue 40, compact partitions: stored node and edge IDs are int32 where the graph's IDs fit
// (fanout-partition --id-width auto, the default), int64 otherwise or on request. Every width
// must give the same graph: byte-identical node and link batches for the same (seed, epoch,
// step), plain and typed, with edge data; and the out-edge index is mapped only by a caller that
// needs it.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/partition_store.h"
#include "core/sampling.h"
#include "gtest/gtest.h"
#include "sampler/dist_graph.h"
#include "sampler/link_sampler.h"
#include "sampler/minibatch_sampler.h"
#include "tests/sampler/sampler_truth.h"
#include "tests/testing/testing.h"

namespace fanout::sampler {
namespace {

using core::DType;
using partition::IdWidth;

struct Widths {
  const char* name;
  IdWidth width;
  int64_t int32_limit;  // PartitionOptions::int32_id_limit: lowered, a small graph "does not fit"
  DType node, edge;     // what the config must then say
};

// The partition of `d` into 2 with `w`, opened as local sources of machine 0.
struct Opened {
  core::PartitionConfig config;
  std::vector<std::shared_ptr<core::PartitionStore>> stores;
  std::unique_ptr<DistGraph> graph;
};

void Open(const std::string& config_path, Opened* out) {
  auto config = core::LoadPartitionConfig(config_path);
  ASSERT_TRUE(config.ok()) << config.status();
  out->config = *config;
  std::vector<std::shared_ptr<core::GraphSource>> sources;
  for (int k = 0; k < out->config.num_parts; ++k) {
    auto store = core::PartitionStore::Open(out->config, k);
    ASSERT_TRUE(store.ok()) << store.status();
    out->stores.push_back(std::move(*store));
    sources.push_back(std::make_shared<core::LocalGraphSource>(out->stores.back()));
  }
  auto g = DistGraph::FromSources(out->config, 0, std::move(sources));
  ASSERT_TRUE(g.ok()) << g.status();
  out->graph = std::move(*g);
}

void PartitionWith(const testing::TempDir& dir, const partition::Dataset& d, const Widths& w, Opened* out) {
  partition::PartitionOptions o;
  o.out_dir = dir.Sub(w.name);
  o.num_parts = 2;
  o.add_reverse_edges = true;
  o.quiet = true;
  o.id_width = w.width;
  o.int32_id_limit = w.int32_limit;
  auto s = partition::PartitionDataset(d, o);
  ASSERT_TRUE(s.ok()) << s.status();
  if (!d.typed()) {
    ASSERT_NO_FATAL_FAILURE(testing::ExpectValidPartition(d, o, s->config_path));
  }
  ASSERT_NO_FATAL_FAILURE(Open(s->config_path, out));
  EXPECT_EQ(out->config.node_id_dtype, w.node) << w.name;
  EXPECT_EQ(out->config.edge_id_dtype, w.edge) << w.name;
}

// The widths tried on a graph of `nodes` nodes and `edges` stored edges: int32 both (auto),
// int64 both (forced), int64 by the limit (a graph "too large" for int32), and the mixed case of
// int32 nodes with int64 edges (papers100M's shape: 111M nodes, 3.2G stored edges).
std::vector<Widths> AllWidths(int64_t nodes, int64_t edges) {
  return {{"auto", IdWidth::kAuto, std::numeric_limits<int32_t>::max(), DType::kInt32, DType::kInt32},
          {"forced64", IdWidth::k64, std::numeric_limits<int32_t>::max(), DType::kInt64, DType::kInt64},
          {"over_limit", IdWidth::kAuto, nodes - 1, DType::kInt64, DType::kInt64},
          {"mixed", IdWidth::kAuto, (nodes + edges) / 2, DType::kInt32, DType::kInt64}};
}

void ExpectSameLinkBatch(const LinkMiniBatch& a, const LinkMiniBatch& b) {
  EXPECT_EQ(a.pos_src, b.pos_src);
  EXPECT_EQ(a.pos_dst, b.pos_dst);
  EXPECT_EQ(a.neg_src, b.neg_src);
  EXPECT_EQ(a.neg_dst, b.neg_dst);
  EXPECT_EQ(a.eids, b.eids);
  testing::ExpectSameBatch(a.nodes, b.nodes);
}

// Node batches (edge weights and edge features fetched), link batches (seed edges excluded),
// and the store's own answers (in- and out-neighbour samples, degrees, edge endpoints) of every
// width equal the int64 partition's.
void ExpectSameGraph(const partition::Dataset& d, const std::string& weight, const std::string& edge_feat) {
  testing::TempDir dir;
  Opened wide;
  ASSERT_NO_FATAL_FAILURE(PartitionWith(dir, d, {"wide", IdWidth::k64, std::numeric_limits<int32_t>::max(), DType::kInt64, DType::kInt64}, &wide));
  const int64_t nodes = wide.config.num_nodes, edges = wide.config.num_edges;
  for (const Widths& w : AllWidths(nodes, edges)) {
    SCOPED_TRACE(w.name);
    Opened got;
    ASSERT_NO_FATAL_FAILURE(PartitionWith(dir, d, w, &got));
    ASSERT_EQ(got.config.edge_bounds, wide.config.edge_bounds);
    SamplerOptions so;
    so.fanouts = {4, 3};
    so.batch_size = 32;
    so.seed = 11;
    so.edge.weight_field = weight;
    so.edge.feature_field = edge_feat;
    if (d.typed()) so.label_field = "";  // seeds of every type
    std::vector<int64_t> seeds;
    for (int64_t v = got.stores[0]->node_start(); v < got.stores[0]->node_end(); v += 3) seeds.push_back(v);
    MiniBatchSampler a(got.graph.get(), so, seeds), b(wide.graph.get(), so, seeds);
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      for (int64_t step = 0; step < a.steps_per_epoch(); ++step) {
        auto x = a.Sample(epoch, step), y = b.Sample(epoch, step);
        ASSERT_TRUE(x.ok() && y.ok()) << x.status() << " " << y.status();
        ASSERT_NO_FATAL_FAILURE(testing::ExpectSameBatch(*x, *y));
      }
    }
    LinkSamplerOptions lo;
    lo.sampling = so;
    lo.draw.negatives = 2;
    auto la = LinkBatchSampler::Create(got.graph.get(), lo, RankEdgeSeeds(got.config, 1, 0));
    auto lb = LinkBatchSampler::Create(wide.graph.get(), lo, RankEdgeSeeds(wide.config, 1, 0));
    ASSERT_TRUE(la.ok() && lb.ok()) << la.status() << " " << lb.status();
    for (int64_t step = 0; step < std::min<int64_t>(3, (*la)->steps_per_epoch()); ++step) {
      auto x = (*la)->Sample(1, step), y = (*lb)->Sample(1, step);
      ASSERT_TRUE(x.ok() && y.ok()) << x.status() << " " << y.status();
      ASSERT_NO_FATAL_FAILURE(ExpectSameLinkBatch(*x, *y));
    }
    for (int k = 0; k < 2; ++k) {
      const core::PartitionStore &s = *got.stores[k], &t = *wide.stores[k];
      std::vector<int64_t> mine;
      for (int64_t v = s.node_start(); v < s.node_end(); ++v) mine.push_back(v);
      std::vector<core::EdgeDir> dirs = {core::EdgeDir::kIn};
      if (!d.typed()) dirs.push_back(core::EdgeDir::kOut);  // typed graphs sample in-edges only
      for (core::EdgeDir dir : dirs) {
        core::SampledEdges e, f;
        ASSERT_TRUE(core::SampleNeighbors(s, mine, {.fanout = 3, .dir = dir, .seed = 2}, &e).ok());
        ASSERT_TRUE(core::SampleNeighbors(t, mine, {.fanout = 3, .dir = dir, .seed = 2}, &f).ok());
        EXPECT_EQ(e.src, f.src);
        EXPECT_EQ(e.dst, f.dst);
        EXPECT_EQ(e.eid, f.eid);
        EXPECT_EQ(e.etype, f.etype);
        std::vector<int64_t> dn(mine.size()), dw(mine.size());
        ASSERT_TRUE(s.Degrees(mine, dir, dn.data()).ok());
        ASSERT_TRUE(t.Degrees(mine, dir, dw.data()).ok());
        EXPECT_EQ(dn, dw);
      }
      std::vector<int64_t> eids;
      for (int64_t e = s.edge_start(); e < s.edge_end(); e += 5) eids.push_back(e);
      std::vector<int64_t> src(eids.size()), dst(eids.size()), src64(eids.size()), dst64(eids.size());
      ASSERT_TRUE(s.FindEdges(eids, src.data(), dst.data()).ok());
      ASSERT_TRUE(t.FindEdges(eids, src64.data(), dst64.data()).ok());
      EXPECT_EQ(src, src64);
      EXPECT_EQ(dst, dst64);
    }
  }
}

TEST(CompactIdsTest, EveryIdWidthGivesTheSameBatchesOnAPlainGraph) {
  partition::Dataset d = testing::MakeRandomDataset({.num_nodes = 700, .num_edges = 5000});
  std::vector<float> w(d.num_edges());
  for (int64_t i = 0; i < d.num_edges(); ++i) w[i] = i % 3 == 0 ? 0.0f : 1.0f + i % 4;
  d.edge_fields.push_back({"w", core::NpyArray::Adopt(std::move(w), {d.num_edges()})});
  ExpectSameGraph(d, "w", "weight");
}

TEST(CompactIdsTest, EveryIdWidthGivesTheSameBatchesOnATypedGraph) {
  ExpectSameGraph(testing::MakeTypedDataset(4, 300, 200, 6), "", "");
}

// A job that samples in-edges never maps the out-edge index; out-degrees and out-neighbour
// sampling map it on first use, once.
TEST(CompactIdsTest, TheOutEdgeIndexIsMappedOnlyWhenNeeded) {
  testing::TempDir dir;
  Opened p;
  ASSERT_NO_FATAL_FAILURE(Open(testing::PartitionRandom(dir, {.num_nodes = 300, .num_edges = 2000}, 2), &p));
  SamplerOptions so;
  so.fanouts = {5, 5};
  so.batch_size = 16;
  std::vector<int64_t> seeds = {0, 1, 2, 3, 150, 151, 299};
  MiniBatchSampler s(p.graph.get(), so, seeds);
  ASSERT_TRUE(s.Sample(0, 0).ok());
  for (const auto& st : p.stores) EXPECT_FALSE(st->out_edges_loaded()) << "a node batch mapped the out-edges";
  const core::PartitionStore& st = *p.stores[1];
  std::vector<int64_t> mine = {st.node_start(), st.node_end() - 1};
  std::vector<int64_t> deg(2);
  ASSERT_TRUE(st.Degrees(mine, core::EdgeDir::kIn, deg.data()).ok());
  EXPECT_FALSE(st.out_edges_loaded());
  ASSERT_TRUE(st.Degrees(mine, core::EdgeDir::kOut, deg.data()).ok());
  EXPECT_TRUE(st.out_edges_loaded());
  EXPECT_FALSE(p.stores[0]->out_edges_loaded());
  core::SampledEdges e;
  const std::vector<int64_t> first = {p.stores[0]->node_start()};
  ASSERT_TRUE(core::SampleNeighbors(*p.stores[0], first, {.dir = core::EdgeDir::kOut}, &e).ok());
  EXPECT_TRUE(p.stores[0]->out_edges_loaded());
}

// A damaged out-edge file is found when a partition opens (missing) or when the index is first
// mapped (the wrong width), by name; the in-edge answers of the same store still work.
TEST(CompactIdsTest, ABrokenOutEdgeFileIsNamedWhenItIsNeeded) {
  testing::TempDir dir;
  const std::string path = testing::PartitionRandom(dir, {.num_nodes = 200, .num_edges = 1200}, 2);
  auto config = core::LoadPartitionConfig(path);
  ASSERT_TRUE(config.ok());
  const std::string out_eids = config->PartPath(1, core::PartFiles::kOutEids);
  auto eids = core::NpyArray::Map(out_eids);
  ASSERT_TRUE(eids.ok());
  ASSERT_EQ(eids->dtype(), DType::kInt32);
  std::vector<int64_t> wide(eids->num_elements());
  core::ConvertElements(DType::kInt32, eids->data(), wide.size(), wide.data());
  *eids = core::NpyArray();
  ASSERT_TRUE(core::WriteNpy(out_eids, wide).ok());  // int64 where the config says int32
  auto st = core::PartitionStore::Open(*config, 1);
  ASSERT_TRUE(st.ok()) << st.status();
  std::vector<int64_t> one = {(*st)->node_start()}, deg(1);
  EXPECT_TRUE((*st)->Degrees(one, core::EdgeDir::kIn, deg.data()).ok());
  absl::Status s = (*st)->Degrees(one, core::EdgeDir::kOut, deg.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(out_eids), std::string::npos) << s;
  EXPECT_NE(s.message().find("expected int32"), std::string::npos) << s;
  EXPECT_EQ((*st)->LoadOutEdges(), s) << "the first answer stays";

  std::filesystem::remove(config->PartPath(0, core::PartFiles::kOutIndices));
  auto gone = core::PartitionStore::Open(*config, 0);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find("out_indices.npy"), std::string::npos) << gone.status();
}

// Partitions written before the ID widths (format_version 1: no width keys, every ID array
// int64) still load and answer as a format-2 int64 partition does; a config that claims int32
// for a graph whose IDs do not fit, or names another width, or comes from a newer format, is
// refused by name.
TEST(CompactIdsTest, FormatOnePartitionsLoadAndBadWidthsAreRefused) {
  testing::TempDir dir;
  partition::Dataset d = testing::MakeRandomDataset({.num_nodes = 300, .num_edges = 2000});
  Opened wide;
  ASSERT_NO_FATAL_FAILURE(PartitionWith(dir, d, {"v1", IdWidth::k64, std::numeric_limits<int32_t>::max(), DType::kInt64, DType::kInt64}, &wide));
  const std::string path = dir.Sub("v1") + "/" + wide.config.graph_name + ".json";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string v2 = ss.str();
  auto rewrite = [&](const std::string& from, const std::string& to, const std::string& text) {
    std::string s = text;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
  };
  std::string v1 = rewrite("\"format_version\": 2", "\"format_version\": 1", v2);
  v1 = rewrite("  \"node_id_dtype\": \"int64\",\n", "", v1);
  v1 = rewrite("  \"edge_id_dtype\": \"int64\",\n", "", v1);
  testing::WriteText(path, v1);
  Opened old;
  ASSERT_NO_FATAL_FAILURE(Open(path, &old));
  EXPECT_EQ(old.config.format_version, 1);
  EXPECT_EQ(old.config.node_id_dtype, DType::kInt64);
  SamplerOptions so;
  so.fanouts = {5, 5};
  so.batch_size = 20;
  std::vector<int64_t> seeds = {0, 7, 100, 299};
  MiniBatchSampler a(old.graph.get(), so, seeds), b(wide.graph.get(), so, seeds);
  auto x = a.Sample(0, 0), y = b.Sample(0, 0);
  ASSERT_TRUE(x.ok() && y.ok());
  testing::ExpectSameBatch(*x, *y);

  auto refused = [&](const std::string& text, const std::string& says) {
    testing::WriteText(path, text);
    auto c = core::LoadPartitionConfig(path);
    ASSERT_FALSE(c.ok()) << says;
    EXPECT_NE(c.status().message().find(path), std::string::npos) << c.status();
    EXPECT_NE(c.status().message().find(says), std::string::npos) << c.status();
  };
  refused(rewrite("\"node_id_dtype\": \"int64\"", "\"node_id_dtype\": \"int16\"", v2), "node_id_dtype is 'int16'");
  refused(rewrite("\"format_version\": 2", "\"format_version\": 3", v2), "a newer fanout wrote it");
  refused(rewrite("\"num_nodes\": 300", "\"num_nodes\": 3000000000",
                  rewrite("\"node_id_dtype\": \"int64\"", "\"node_id_dtype\": \"int32\"", v2)),
          "node_id_dtype is int32 but the graph has 3000000000 nodes");
}

// --id-width 32 on a graph whose IDs do not fit is an error naming the count, before any output.
TEST(CompactIdsTest, ForcedNarrowIdsThatDoNotFitAreRefused) {
  testing::TempDir dir;
  partition::Dataset d = testing::MakeRandomDataset({.num_nodes = 200, .num_edges = 1000});
  partition::PartitionOptions o;
  o.out_dir = dir.Sub("parts");
  o.num_parts = 2;
  o.quiet = true;
  o.id_width = IdWidth::k32;
  o.int32_id_limit = 100;
  auto s = partition::PartitionDataset(d, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--id-width 32: the graph has 200 nodes"), std::string::npos) << s.status();
  EXPECT_FALSE(std::filesystem::exists(o.out_dir));
}

}  // namespace
}  // namespace fanout::sampler

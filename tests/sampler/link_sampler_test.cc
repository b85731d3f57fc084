// Edge mini-batches for link prediction on a real two-partition graph read from its files (one
// LocalGraphSource per partition, no servers).
#include "sampler/link_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>

#include "base/strings.h"
#include "core/graph_source.h"
#include "core/partition_store.h"
#include "partition/partitioner.h"
#include "tests/testing/testing.h"

namespace fanout::sampler {
namespace {

using base::StrCat;

// Counts the feature rows a source was asked for (the fetch counter).
class CountingSource final : public core::ForwardingGraphSource {
 public:
  using ForwardingGraphSource::ForwardingGraphSource;
  void GatherRows(const core::FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                  std::span<const int64_t> positions, char* out, core::Done done) override {
    rows += static_cast<int64_t>(ids.size());
    ForwardingGraphSource::GatherRows(field, row_bytes, ids, positions, out, std::move(done));
  }
  std::atomic<int64_t> rows{0};
};

class LinkSamplerTest : public ::testing::Test {
 protected:
  int64_t RowsFetched() const { return counters_[0]->rows + counters_[1]->rows; }

  void SetUp() override {
    const std::string path = fanout::testing::PartitionRandom(dir_, {.num_nodes = 400, .num_edges = 3000}, 2);
    ASSERT_FALSE(path.empty());
    auto config = core::LoadPartitionConfig(path);
    ASSERT_TRUE(config.ok());
    config_ = *config;
    std::vector<std::shared_ptr<core::GraphSource>> sources;
    for (int k = 0; k < 2; ++k) {
      auto store = core::PartitionStore::Open(config_, k);
      ASSERT_TRUE(store.ok()) << store.status();
      counters_[k] = std::make_shared<CountingSource>(std::make_shared<core::LocalGraphSource>(std::move(*store)));
      sources.push_back(counters_[k]);
    }
    auto g = DistGraph::FromSources(config_, 0, std::move(sources));
    ASSERT_TRUE(g.ok()) << g.status();
    graph_ = std::move(*g);
  }

  LinkSamplerOptions Options() const {
    LinkSamplerOptions o;
    o.sampling.fanouts = {5, 5};
    o.sampling.batch_size = 64;
    o.draw.negatives = 3;
    o.sampling.seed = 9;
    return o;
  }

  fanout::testing::TempDir dir_;
  core::PartitionConfig config_;
  std::shared_ptr<CountingSource> counters_[2];
  std::unique_ptr<DistGraph> graph_;
};

// A seed pair is dropped in both directions; on typed edges, only in the relations marked (a
// typed link relation and its reverse), not in another relation joining the same nodes.
TEST(DropExcludedTest, DropsSeedPairsInBothDirectionsOfTheMarkedRelationsOnly) {
  core::SampledEdges e;
  e.src = {1, 2, 1, 3, 2};
  e.dst = {2, 1, 2, 1, 3};
  e.eid = {10, 11, 12, 13, 14};
  e.etype = {0, 1, 2, 0, 0};
  const std::vector<std::pair<int64_t, int64_t>> exclude = {{1, 2}};
  core::SampledEdges all = e;
  DropExcluded(exclude, &all);
  EXPECT_EQ(all.eid, (std::vector<int64_t>{13, 14}));
  const std::vector<char> relations = {1, 1, 0};  // REL and rev_REL; relation 2 joins 1 and 2 too
  DropExcluded(exclude, &e, &relations);
  EXPECT_EQ(e.eid, (std::vector<int64_t>{12, 13, 14}));
  EXPECT_EQ(e.etype, (std::vector<int32_t>{2, 0, 0}));
  EXPECT_EQ(e.src, (std::vector<int64_t>{1, 3, 2}));
}

// `d` partitioned into `parts` parts with reverse edges for link prediction on `relations`
// (and `hard_field` as hard negatives), then a DistGraph over its files as machine 0.
struct TypedLinkGraph {
  core::PartitionConfig config;
  std::unique_ptr<DistGraph> graph;
};
void OpenTypedLinkGraph(const fanout::testing::TempDir& dir, const partition::Dataset& d,
                        std::vector<std::string> relations, int parts, const std::string& hard_field,
                        TypedLinkGraph* out) {
  partition::PartitionOptions po;
  po.out_dir = dir.Sub("parts");
  po.num_parts = parts;
  po.add_reverse_edges = true;
  po.quiet = true;
  po.hard_negative_field = hard_field;
  po.edge_split = {.valid = 0.1, .test = 0.1, .relations = std::move(relations)};
  auto summary = partition::PartitionDataset(d, po);
  ASSERT_TRUE(summary.ok()) << summary.status();
  auto config = core::LoadPartitionConfig(summary->config_path);
  ASSERT_TRUE(config.ok()) << config.status();
  std::vector<std::shared_ptr<core::GraphSource>> sources;
  for (int k = 0; k < parts; ++k) {
    auto store = core::PartitionStore::Open(*config, k);
    ASSERT_TRUE(store.ok()) << store.status();
    sources.push_back(std::make_shared<core::LocalGraphSource>(std::move(*store)));
  }
  auto graph = DistGraph::FromSources(*config, 0, std::move(sources));
  ASSERT_TRUE(graph.ok()) << graph.status();
  out->config = *std::move(config);
  out->graph = std::move(*graph);
}

// A typed graph partitioned for link prediction on author:writes:paper (config link_etypes): the
// ranks' positives are exactly the stored writes edges, negatives are papers (uniform or by
// degree), and a seed pair's writes / rev_writes edges stay out of the blocks while the blocks
// still hold other relations.
TEST(TypedLinkSamplerTest, PositivesAreTheRelationsEdgesAndNegativesItsDestinationType) {
  fanout::testing::TempDir dir;
  TypedLinkGraph t;
  ASSERT_NO_FATAL_FAILURE(OpenTypedLinkGraph(dir, fanout::testing::MakeTypedDataset(4, 300, 200, 10), {"writes"}, 2, "", &t));
  const core::PartitionConfig* config = &t.config;
  const std::unique_ptr<DistGraph>* graph = &t.graph;
  const int writes = LinkRelations(*config).at(0);
  ASSERT_GE(writes, 0);
  const core::TypeMap& ntypes = (*graph)->node_types();
  auto etypes = config->EdgeTypes();
  ASSERT_TRUE(etypes.ok());
  const int author = *ntypes.TypeId("author"), paper = *ntypes.TypeId("paper");
  int rev_writes = -1;
  for (size_t r = 0; r < config->edge_types.size(); ++r) {
    if (config->edge_types[r].rel == "rev_writes") rev_writes = static_cast<int>(r);
  }
  // Both ranks' seeds: every stored writes edge once, nothing else.
  std::set<int64_t> seeds;
  for (int rank = 0; rank < 2; ++rank) {
    for (int64_t e : RankEdgeSeeds(*config, 1, rank).ToVector()) {
      EXPECT_EQ(etypes->ToTypeWise(e).first, writes) << "edge " << e;
      EXPECT_TRUE(seeds.insert(e).second);
    }
  }
  EXPECT_EQ(static_cast<int64_t>(seeds.size()), etypes->count(writes));
  // Every kind of negative is a paper; local ones are machine 0's papers.
  for (NegativeSampling mode : {NegativeSampling::kUniform, NegativeSampling::kDegreePow75, NegativeSampling::kJoint,
                                NegativeSampling::kInBatch, NegativeSampling::kLocal}) {
    LinkSamplerOptions o;
    o.sampling.fanouts = {4, 4};
    o.sampling.batch_size = 32;
    o.draw.negatives = 4;
    o.draw.negative_sampling = mode;
    auto s = LinkBatchSampler::Create(graph->get(), o, RankEdgeSeeds(*config, 1, 0));
    ASSERT_TRUE(s.ok()) << s.status();
    for (int64_t step = 0; step < 3; ++step) {
      auto b = (*s)->SampleBlocks(0, step);
      ASSERT_TRUE(b.ok()) << b.status();
      const std::vector<int64_t>& nodes = b->nodes.seeds;
      std::set<std::pair<int64_t, int64_t>> positive_pairs;
      for (size_t i = 0; i < b->pos_src.size(); ++i) {
        const int64_t u = nodes[b->pos_src[i]], v = nodes[b->pos_dst[i]];
        EXPECT_EQ(ntypes.ToTypeWise(u).first, author);
        EXPECT_EQ(ntypes.ToTypeWise(v).first, paper);
        positive_pairs.insert({std::min(u, v), std::max(u, v)});
      }
      for (int64_t j : b->neg_dst) {
        EXPECT_EQ(ntypes.ToTypeWise(nodes[j]).first, paper) << "negative " << nodes[j];
        if (mode == NegativeSampling::kLocal) {
          EXPECT_EQ((*graph)->node_book().PartOf(nodes[j]), 0) << nodes[j];
        }
      }
      EXPECT_FALSE(b->neg_dst.empty());
      int64_t other_relations = 0;
      for (const Block& block : b->nodes.blocks) {
        for (int64_t v = 0; v < block.num_dst; ++v) {
          for (int64_t e = block.indptr[v]; e < block.indptr[v + 1]; ++e) {
            const int64_t a = block.src_nodes[block.indices[e]], c = block.src_nodes[v];
            if (block.etype()[e] == writes || block.etype()[e] == rev_writes) {
              EXPECT_FALSE(positive_pairs.count({std::min(a, c), std::max(a, c)})) << a << " -> " << c;
            } else {
              ++other_relations;
            }
          }
        }
      }
      EXPECT_GT(other_relations, 0);
    }
  }
}

// Two link relations ending in different node types (writes: author -> paper, in: paper ->
// venue): the ranks' positives are every stored edge of both, each positive's negatives are of
// its own relation's destination type (per positive, by degree, joint per type, local), in-batch
// negatives are refused, and evaluation's drawn negatives follow each pair's relation.
TEST(TypedLinkSamplerTest, SeveralRelationsDrawEachPositivesNegativesFromItsDestinationType) {
  fanout::testing::TempDir dir;
  TypedLinkGraph t;
  ASSERT_NO_FATAL_FAILURE(
      OpenTypedLinkGraph(dir, fanout::testing::MakeTypedDataset(4, 300, 200, 10), {"writes", "in"}, 2, "", &t));
  const core::PartitionConfig* config = &t.config;
  const std::unique_ptr<DistGraph>* graph = &t.graph;
  const std::vector<int> relations = LinkRelations(*config);
  ASSERT_EQ(relations.size(), 2u);
  EXPECT_EQ(LinkNegativeTypes(*config).size(), 2u);
  EXPECT_FALSE(RankEdgeRange(*config, 1, 0).ok());  // two ranges, not one
  const core::TypeMap& ntypes = (*graph)->node_types();
  auto etypes = config->EdgeTypes();
  ASSERT_TRUE(etypes.ok());
  const int paper = *ntypes.TypeId("paper"), venue = *ntypes.TypeId("venue");
  // Both ranks' seeds: every stored edge of both relations once, nothing else; each knows its relation.
  std::set<int64_t> seeds;
  for (int rank = 0; rank < 2; ++rank) {
    for (int64_t e : RankEdgeSeeds(*config, 1, rank).ToVector()) {
      const int type = etypes->ToTypeWise(e).first;
      EXPECT_TRUE(type == relations[0] || type == relations[1]) << "edge " << e;
      EXPECT_EQ(relations[LinkRelationOf(*config, relations, e)], type) << "edge " << e;
      EXPECT_TRUE(seeds.insert(e).second);
    }
  }
  EXPECT_EQ(static_cast<int64_t>(seeds.size()), etypes->count(relations[0]) + etypes->count(relations[1]));
  for (NegativeSampling mode : {NegativeSampling::kUniform, NegativeSampling::kDegreePow75, NegativeSampling::kJoint,
                                NegativeSampling::kLocal}) {
    LinkSamplerOptions o;
    o.sampling.fanouts = {4, 4};
    o.sampling.batch_size = 64;
    o.draw.negatives = 3;
    o.draw.negative_sampling = mode;
    auto s = LinkBatchSampler::Create(graph->get(), o, RankEdgeSeeds(*config, 1, 0));
    ASSERT_TRUE(s.ok()) << s.status();
    int seen[2] = {0, 0};
    for (int64_t step = 0; step < (*s)->steps_per_epoch(); ++step) {
      auto b = (*s)->SampleBlocks(0, step);
      ASSERT_TRUE(b.ok()) << b.status();
      const std::vector<int64_t>& nodes = b->nodes.seeds;
      ASSERT_EQ(b->neg_dst.size(), b->eids.size() * 3);
      for (size_t i = 0; i < b->eids.size(); ++i) {
        const int r = LinkRelationOf(*config, relations, b->eids[i]);
        ASSERT_GE(r, 0);
        ++seen[r];
        const int want = r == 0 ? paper : venue;
        EXPECT_EQ(ntypes.ToTypeWise(nodes[b->pos_dst[i]]).first, want);
        for (size_t j = 3 * i; j < 3 * i + 3; ++j) {
          EXPECT_EQ(ntypes.ToTypeWise(nodes[b->neg_dst[j]]).first, want) << NegativeSamplingName(mode);
          EXPECT_EQ(b->neg_src[j], b->pos_src[i]);
          if (mode == NegativeSampling::kLocal) {
            EXPECT_EQ((*graph)->node_book().PartOf(nodes[b->neg_dst[j]]), 0);
          }
        }
      }
      if (mode == NegativeSampling::kJoint) {  // one shared set per relation in the batch
        std::map<int, std::vector<int64_t>> shared;
        for (size_t i = 0; i < b->eids.size(); ++i) {
          std::vector<int64_t> mine(b->neg_dst.begin() + 3 * i, b->neg_dst.begin() + 3 * i + 3);
          auto [it, fresh] = shared.emplace(LinkRelationOf(*config, relations, b->eids[i]), mine);
          if (!fresh) {
            EXPECT_EQ(it->second, mine);
          }
        }
      }
    }
    EXPECT_GT(seen[0], 0);
    EXPECT_GT(seen[1], 0);
  }
  LinkSamplerOptions in_batch;
  in_batch.sampling.fanouts = {4};
  in_batch.sampling.batch_size = 8;
  in_batch.draw.negative_sampling = NegativeSampling::kInBatch;
  auto refused = LinkBatchSampler::Create(graph->get(), in_batch, RankEdgeSeeds(*config, 1, 0));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("end in different node types"), std::string::npos) << refused.status();
  // Evaluation's drawn negatives: of each pair's relation's destination type; relation 0's the
  // same as with one relation (its stream is unchanged); joint: 3 per relation.
  const std::vector<int64_t> pairs = {ntypes.ToHomogeneous(*ntypes.TypeId("author"), 1), ntypes.ToHomogeneous(paper, 2),
                                      ntypes.ToHomogeneous(paper, 5), ntypes.ToHomogeneous(venue, 1)};
  const std::vector<int64_t> rel = {0, 1};
  const std::vector<int64_t> drawn = DrawEvalNegatives(**graph, pairs, rel, 0, 4, false, 7, 1);
  ASSERT_EQ(drawn.size(), 8u);
  for (int j = 0; j < 8; ++j) EXPECT_EQ(ntypes.ToTypeWise(drawn[j]).first, j < 4 ? paper : venue) << j;
  const std::vector<int64_t> joint = DrawEvalNegatives(**graph, pairs, rel, 0, 3, true, 7, 1);
  ASSERT_EQ(joint.size(), 6u);
  for (int j = 0; j < 6; ++j) EXPECT_EQ(ntypes.ToTypeWise(joint[j]).first, j < 3 ? paper : venue) << j;
}

TEST_F(LinkSamplerTest, RanksGetDisjointEdgeSetsCoveringEveryEdge) {
  constexpr int kTpm = 2;
  std::set<int64_t> seen;
  std::vector<size_t> sizes;
  for (int rank = 0; rank < 2 * kTpm; ++rank) {
    const std::vector<int64_t> mine = RankEdgeSeeds(config_, kTpm, rank).ToVector();
    sizes.push_back(mine.size());
    for (int64_t e : mine) {
      EXPECT_TRUE(seen.insert(e).second) << "edge " << e << " given to two ranks";
    }
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), config_.edge_bounds.back());
  // Every rank runs the same number of steps: each uses the smallest share per epoch.
  const int64_t per_epoch = *std::min_element(sizes.begin(), sizes.end());
  for (int rank = 0; rank < 2 * kTpm; ++rank) {
    LinkSamplerOptions o = Options();
    o.sampling.rank = rank;
    o.draw.edges_per_epoch = per_epoch;
    auto s = LinkBatchSampler::Create(graph_.get(), o, RankEdgeSeeds(config_, kTpm, rank));
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ((*s)->steps_per_epoch(), (per_epoch + 63) / 64);
  }
}

TEST_F(LinkSamplerTest, BatchesHoldRealPositivesTrueNegativesAndNoSeedEdge) {
  for (NegativeSampling mode : {NegativeSampling::kUniform, NegativeSampling::kDegreePow75}) {
    LinkSamplerOptions o = Options();
    o.draw.negative_sampling = mode;
    auto s = LinkBatchSampler::Create(graph_.get(), o, RankEdgeSeeds(config_, 1, 0));
    ASSERT_TRUE(s.ok()) << s.status();
    for (int64_t step = 0; step < 3; ++step) {
      auto b = (*s)->Sample(1, step);
      ASSERT_TRUE(b.ok()) << b.status();
      const std::vector<int64_t>& nodes = b->nodes.seeds;
      ASSERT_EQ(b->pos_src.size(), 64u);
      ASSERT_EQ(b->neg_src.size(), 3 * 64u);
      // Positives are the edges their IDs name.
      std::vector<int64_t> src(b->eids.size()), dst(b->eids.size());
      ASSERT_TRUE(graph_->FindEdges(b->eids, src.data(), dst.data()).ok());
      std::set<std::pair<int64_t, int64_t>> positive_pairs;
      for (size_t i = 0; i < b->eids.size(); ++i) {
        EXPECT_EQ(nodes[b->pos_src[i]], src[i]);
        EXPECT_EQ(nodes[b->pos_dst[i]], dst[i]);
        positive_pairs.insert({std::min(src[i], dst[i]), std::max(src[i], dst[i])});
      }
      // Negatives share the positive's source and are neither of its endpoints.
      for (size_t j = 0; j < b->neg_src.size(); ++j) {
        const size_t i = j / 3;
        EXPECT_EQ(b->neg_src[j], b->pos_src[i]);
        EXPECT_NE(nodes[b->neg_dst[j]], src[i]);
        EXPECT_NE(nodes[b->neg_dst[j]], dst[i]);
      }
      // Seeds are distinct, the output block's destinations, and no block holds an edge between
      // a positive pair in either direction.
      EXPECT_EQ(std::set<int64_t>(nodes.begin(), nodes.end()).size(), nodes.size());
      ASSERT_EQ(b->nodes.blocks.size(), 2u);
      EXPECT_EQ(b->nodes.blocks.back().num_dst, static_cast<int64_t>(nodes.size()));
      for (const Block& block : b->nodes.blocks) {
        for (int64_t v = 0; v < block.num_dst; ++v) {
          for (int64_t e = block.indptr[v]; e < block.indptr[v + 1]; ++e) {
            const int64_t a = block.src_nodes[block.indices[e]], c = block.src_nodes[v];
            EXPECT_FALSE(positive_pairs.count({std::min(a, c), std::max(a, c)}))
                << "block edge " << a << " -> " << c << " is a seed edge or its reverse";
          }
        }
      }
      EXPECT_EQ(b->nodes.features.rows, static_cast<int64_t>(b->nodes.input_nodes().size()));
      EXPECT_EQ(b->nodes.features.cols, 8);
    }
  }
}

// Without the exclusion the same batches do contain seed edges: the check above is not vacuous.
TEST_F(LinkSamplerTest, WithoutExclusionSeedEdgesAppearInTheBlocks) {
  LinkSamplerOptions o = Options();
  o.exclude_seed_edges = false;
  auto s = LinkBatchSampler::Create(graph_.get(), o, RankEdgeSeeds(config_, 1, 0));
  ASSERT_TRUE(s.ok());
  auto b = (*s)->Sample(1, 0);
  ASSERT_TRUE(b.ok());
  std::set<std::pair<int64_t, int64_t>> positive_pairs;
  for (size_t i = 0; i < b->pos_src.size(); ++i) {
    const int64_t u = b->nodes.seeds[b->pos_src[i]], v = b->nodes.seeds[b->pos_dst[i]];
    positive_pairs.insert({std::min(u, v), std::max(u, v)});
  }
  int64_t hits = 0;
  const Block& top = b->nodes.blocks.back();
  for (int64_t v = 0; v < top.num_dst; ++v) {
    for (int64_t e = top.indptr[v]; e < top.indptr[v + 1]; ++e) {
      const int64_t a = top.src_nodes[top.indices[e]], c = top.src_nodes[v];
      hits += positive_pairs.count({std::min(a, c), std::max(a, c)});
    }
  }
  EXPECT_GT(hits, 0);
}

TEST_F(LinkSamplerTest, BatchesAreAFunctionOfEpochStepAndRank) {
  auto a = LinkBatchSampler::Create(graph_.get(), Options(), RankEdgeSeeds(config_, 1, 0));
  auto b = LinkBatchSampler::Create(graph_.get(), Options(), RankEdgeSeeds(config_, 1, 0));
  ASSERT_TRUE(a.ok() && b.ok());
  auto x = (*a)->Sample(2, 1), y = (*b)->Sample(2, 1), z = (*a)->Sample(3, 1);
  ASSERT_TRUE(x.ok() && y.ok() && z.ok());
  EXPECT_EQ(x->eids, y->eids);
  EXPECT_EQ(x->nodes.seeds, y->nodes.seeds);
  EXPECT_EQ(x->nodes.blocks[0].indices, y->nodes.blocks[0].indices);
  EXPECT_NE(x->eids, z->eids) << "another epoch reshuffles";
  LinkSamplerOptions other = Options();
  other.sampling.rank = 1;
  auto c = LinkBatchSampler::Create(graph_.get(), other, RankEdgeSeeds(config_, 1, 0));
  EXPECT_NE((*c)->Sample(2, 1)->neg_dst, x->neg_dst) << "another rank draws other negatives";
  EXPECT_EQ((*a)->Sample(2, 99).status().code(), absl::StatusCode::kOutOfRange);
}

// The positives' endpoints of a batch, as global IDs.
std::set<int64_t> Endpoints(const LinkMiniBatch& b) {
  std::set<int64_t> out;
  for (size_t i = 0; i < b.pos_src.size(); ++i) out.insert({b.nodes.seeds[b.pos_src[i]], b.nodes.seeds[b.pos_dst[i]]});
  return out;
}

// In-batch negatives are the other positives' destinations (positive i takes those of i+1, i+2,
// ... wrapping), so the batch embeds and fetches no node beyond the positives': its seeds are
// exactly their endpoints and it gathers fewer rows than the uniform batch of the same positives.
TEST_F(LinkSamplerTest, InBatchNegativesAreThePositivesOwnDestinations) {
  LinkSamplerOptions o = Options();
  o.draw.negatives = 5;
  auto uniform = LinkBatchSampler::Create(graph_.get(), o, RankEdgeSeeds(config_, 1, 0));
  o.draw.negative_sampling = NegativeSampling::kInBatch;
  auto in_batch = LinkBatchSampler::Create(graph_.get(), o, RankEdgeSeeds(config_, 1, 0));
  ASSERT_TRUE(uniform.ok() && in_batch.ok());
  int64_t before = RowsFetched();
  auto u = (*uniform)->Sample(0, 1);
  ASSERT_TRUE(u.ok()) << u.status();
  const int64_t uniform_rows = RowsFetched() - before;
  before = RowsFetched();
  auto b = (*in_batch)->Sample(0, 1);
  ASSERT_TRUE(b.ok()) << b.status();
  const int64_t in_batch_rows = RowsFetched() - before;
  ASSERT_EQ(b->eids, u->eids) << "the same positives";
  const std::vector<int64_t>& seeds = b->nodes.seeds;
  EXPECT_EQ(std::set<int64_t>(seeds.begin(), seeds.end()), Endpoints(*b)) << "no node beyond the positives'";
  EXPECT_EQ(in_batch_rows, static_cast<int64_t>(b->nodes.input_nodes().size()));
  EXPECT_LT(in_batch_rows, uniform_rows);
  const size_t n = b->pos_src.size();
  ASSERT_EQ(b->neg_dst.size(), 5 * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < 5; ++j) {
      EXPECT_EQ(b->neg_src[i * 5 + j], b->pos_src[i]);
      EXPECT_EQ(b->neg_dst[i * 5 + j], b->pos_dst[(i + 1 + j) % n]) << "positive " << i << ", negative " << j;
    }
  }
  // A batch smaller than the negatives asked for gives each positive the others, n - 1.
  o.sampling.batch_size = 4;
  auto small = LinkBatchSampler::Create(graph_.get(), o, RankEdgeSeeds(config_, 1, 0));
  ASSERT_TRUE(small.ok());
  auto s = (*small)->SampleBlocks(0, 0);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->neg_dst.size(), 4u * 3u);
}

// Joint negatives: `negatives` nodes drawn once per batch, shared by every positive (row i *k + j
// is the same node for every i), and the batch embeds only them beyond the positives' endpoints.
TEST_F(LinkSamplerTest, JointNegativesAreSharedByTheBatch) {
  LinkSamplerOptions o = Options();
  o.draw.negatives = 6;
  o.draw.negative_sampling = NegativeSampling::kJoint;
  auto s = LinkBatchSampler::Create(graph_.get(), o, RankEdgeSeeds(config_, 1, 0));
  ASSERT_TRUE(s.ok()) << s.status();
  const int64_t before = RowsFetched();
  auto b = (*s)->Sample(0, 2);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(RowsFetched() - before, static_cast<int64_t>(b->nodes.input_nodes().size()));
  const size_t n = b->pos_src.size();
  ASSERT_EQ(b->neg_dst.size(), 6 * n);
  std::set<int64_t> shared;
  for (size_t j = 0; j < 6; ++j) shared.insert(b->nodes.seeds[b->neg_dst[j]]);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < 6; ++j) {
      EXPECT_EQ(b->neg_dst[i * 6 + j], b->neg_dst[j]) << "positive " << i;
      EXPECT_EQ(b->neg_src[i * 6 + j], b->pos_src[i]);
    }
  }
  std::set<int64_t> expected = Endpoints(*b);
  expected.insert(shared.begin(), shared.end());
  EXPECT_EQ(std::set<int64_t>(b->nodes.seeds.begin(), b->nodes.seeds.end()), expected);
  EXPECT_LE(b->nodes.seeds.size(), 2 * n + 6);
  auto again = (*s)->Sample(0, 3);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->nodes.seeds[again->neg_dst[0]], b->nodes.seeds[b->neg_dst[0]]) << "each batch draws its own";
}

// Local negatives come from the machine's own partition (machine 0 here), so no negative's rows
// are remote; the positives' own endpoints are wherever they are.
TEST_F(LinkSamplerTest, LocalNegativesAreTheMachinesOwnNodes) {
  LinkSamplerOptions o = Options();
  o.draw.negative_sampling = NegativeSampling::kLocal;
  auto s = LinkBatchSampler::Create(graph_.get(), o, RankEdgeSeeds(config_, 1, 1));
  ASSERT_TRUE(s.ok()) << s.status();
  std::map<int, int64_t> owners;
  for (int64_t step = 0; step < 3; ++step) {
    auto b = (*s)->SampleBlocks(0, step);
    ASSERT_TRUE(b.ok()) << b.status();
    for (size_t j = 0; j < b->neg_dst.size(); ++j) {
      const int64_t v = b->nodes.seeds[b->neg_dst[j]];
      ++owners[graph_->node_book().PartOf(v)];
      const size_t i = j / 3;
      EXPECT_NE(v, b->nodes.seeds[b->pos_src[i]]);
      EXPECT_NE(v, b->nodes.seeds[b->pos_dst[i]]);
    }
  }
  EXPECT_EQ(owners.size(), 1u);
  EXPECT_GT(owners[0], 0);
  // A process without a machine has no partition to draw from.
  auto none = DistGraph::FromSources(config_, -1, {counters_[0], counters_[1]});
  ASSERT_TRUE(none.ok());
  auto refused = LinkBatchSampler::Create(none->get(), o, RankEdgeSeeds(config_, 1, 0));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("this process has no machine"), std::string::npos) << refused.status();
}

// A typed graph's edge fields are per relation (edge_data/SRC___REL___DST/NAME.npy; Field's
// edge_type): stored for that relation's edges, read by edge ID as "SRC:REL:DST/NAME", refused
// for another relation's edges. Hard negatives on a typed graph: the field of a link relation
// holds type-wise IDs of its destination type; its positives take them first (in new IDs), the
// positives of a link relation without the field get drawn ones only.
TEST(HardNegativesTest, TypedGraphsKeepEdgeFieldsPerRelationAndTheirHardNegatives) {
  fanout::testing::TempDir dir;
  partition::Dataset d = fanout::testing::MakeTypedDataset(4, 300, 200, 10);
  const int64_t papers = 300;
  const int64_t w0 = d.edge_type_offsets[0], nw = d.edge_type_offsets[1] - w0;  // writes
  const int64_t c0 = d.edge_type_offsets[1], nc = d.edge_type_offsets[2] - c0;  // cites
  std::vector<int64_t> hard(2 * nw);
  for (int64_t r = 0; r < nw; ++r) {
    hard[2 * r] = (r * 13) % papers;
    hard[2 * r + 1] = r % 4 == 0 ? -1 : (r * 7 + 1) % papers;
  }
  std::vector<float> weight(nc);
  for (int64_t r = 0; r < nc; ++r) weight[r] = 0.5f + static_cast<float>(r);
  d.edge_fields.push_back({.name = "hard", .data = core::NpyArray::Adopt(std::vector<int64_t>(hard), {nw, 2}),
                           .edge_type = "author:writes:paper"});
  d.edge_fields.push_back({.name = "w", .data = core::NpyArray::Adopt(std::vector<float>(weight), {nc}),
                           .edge_type = "paper:cites:paper"});
  TypedLinkGraph t;
  ASSERT_NO_FATAL_FAILURE(OpenTypedLinkGraph(dir, d, {"writes", "cites"}, 1, "hard", &t));
  const core::PartitionConfig* config = &t.config;
  const std::unique_ptr<DistGraph>* graph = &t.graph;
  ASSERT_EQ(config->edge_fields.size(), 2u);
  EXPECT_EQ(config->edge_fields[0].key(), "author:writes:paper/hard");
  EXPECT_EQ(config->edge_fields[1].key(), "paper:cites:paper/w");
  const core::TypeMap& ntypes = (*graph)->node_types();
  auto etypes = config->EdgeTypes();
  ASSERT_TRUE(etypes.ok());
  auto orig_nids = core::NpyArray::Map(dir.Sub("parts") + "/part0/" + core::PartFiles::kOrigNids);
  auto orig_eids = core::NpyArray::Map(dir.Sub("parts") + "/part0/" + core::PartFiles::kOrigEids);
  ASSERT_TRUE(orig_nids.ok() && orig_eids.ok());
  // Type-wise input paper -> new ID (typed orig_nids are type-wise).
  const int paper = *ntypes.TypeId("paper");
  std::vector<int64_t> new_paper(papers, -1);
  for (int64_t v = 0; v < config->num_nodes; ++v) {
    if (ntypes.ToTypeWise(v).first == paper) new_paper[orig_nids->data_as<int64_t>()[v]] = v;
  }
  // The cites field by edge ID: each stored cites edge's input row's value.
  const int cites = *etypes->TypeId("paper:cites:paper"), writes = *etypes->TypeId("author:writes:paper");
  std::vector<int64_t> cites_eids;
  for (int64_t e = config->edge_type_ranges[cites][0].first; e < config->edge_type_ranges[cites][0].second; ++e) {
    cites_eids.push_back(e);
  }
  ASSERT_FALSE(cites_eids.empty());
  std::vector<float> got(cites_eids.size());
  ASSERT_TRUE((*graph)->PullEdgeRows("paper:cites:paper/w", cites_eids, reinterpret_cast<char*>(got.data())).ok());
  for (size_t i = 0; i < cites_eids.size(); ++i) {
    EXPECT_EQ(got[i], weight[orig_eids->data_as<int64_t>()[cites_eids[i]]]) << "edge " << cites_eids[i];
  }
  const int64_t a_writes_edge = config->edge_type_ranges[writes][0].first;
  absl::Status wrong = (*graph)->PullEdgeRows("paper:cites:paper/w", std::vector<int64_t>{a_writes_edge}, reinterpret_cast<char*>(got.data()));
  EXPECT_NE(wrong.message().find("is of type author:writes:paper; field 'paper:cites:paper/w' holds paper:cites:paper"),
            std::string::npos)
      << wrong;

  LinkSamplerOptions o;
  o.sampling.fanouts = {3};
  o.sampling.batch_size = 64;
  o.draw.negatives = 3;
  o.draw.hard_negative_field = "hard";
  auto s = LinkBatchSampler::Create(graph->get(), o, RankEdgeSeeds(*config, 1, 0));
  ASSERT_TRUE(s.ok()) << s.status();
  const std::vector<int> relations = LinkRelations(*config);
  int64_t hard_seen = 0, writes_positives = 0, cites_positives = 0;
  for (int64_t step = 0; step < (*s)->steps_per_epoch(); ++step) {
    auto b = (*s)->SampleBlocks(0, step);
    ASSERT_TRUE(b.ok()) << b.status();
    for (size_t i = 0; i < b->eids.size(); ++i) {
      const int64_t u = b->nodes.seeds[b->pos_src[i]], v = b->nodes.seeds[b->pos_dst[i]];
      if (relations[LinkRelationOf(*config, relations, b->eids[i])] != writes) {
        ++cites_positives;
        continue;
      }
      ++writes_positives;
      const int64_t row = orig_eids->data_as<int64_t>()[b->eids[i]];  // among writes' input rows
      std::vector<int64_t> want;
      for (int j = 0; j < 2; ++j) {
        const int64_t x = hard[2 * row + j];
        if (x >= 0 && new_paper[x] != u && new_paper[x] != v) want.push_back(new_paper[x]);
      }
      for (size_t j = 0; j < want.size(); ++j) {
        EXPECT_EQ(b->nodes.seeds[b->neg_dst[i * 3 + j]], want[j]) << "edge " << b->eids[i] << ", negative " << j;
        ++hard_seen;
      }
    }
  }
  EXPECT_GT(writes_positives, 0);
  EXPECT_GT(cites_positives, 0);
  EXPECT_GT(hard_seen, writes_positives * 3 / 2);  // three rows in four have two, the fourth one

  // The field on no link relation is refused, naming it; a bad type-wise ID is refused by the
  // partitioner naming the file and row.
  o.draw.hard_negative_field = "w2";
  auto missing = LinkBatchSampler::Create(graph->get(), o, RankEdgeSeeds(*config, 1, 0));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("none of the link relations"), std::string::npos) << missing.status();
  hard[2 * 9 + 1] = papers;
  d.edge_fields[0].data = core::NpyArray::Adopt(std::vector<int64_t>(hard), {nw, 2});
  partition::PartitionOptions po;
  po.num_parts = 1;
  po.quiet = true;
  po.hard_negative_field = "hard";
  po.edge_split = {.valid = 0.1, .test = 0.1, .relations = {"writes", "cites"}};
  po.out_dir = dir.Sub("bad");
  auto bad = partition::PartitionDataset(d, po);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(StrCat("row 9: hard negative ", papers, " is not a type-wise ID of paper")),
            std::string::npos)
      << bad.status();
  // A typed graph's edge field must name its relation.
  d.edge_fields[0].edge_type = "";
  po.out_dir = dir.Sub("bad2");
  auto untyped = partition::PartitionDataset(d, po);
  ASSERT_FALSE(untyped.ok());
  EXPECT_NE(untyped.status().message().find("must say its relation"), std::string::npos) << untyped.status();
}

// Hard negatives (fanout-partition --hard-negative-field, then LinkSamplerOptions'): an input
// edge's hard negatives, in new IDs, are its positive's first negatives (at most
// hard_negatives, skipping -1 and the endpoints), the rest drawn; a reverse edge has none. Bad
// values are refused by the partitioner naming the file and row.
TEST(HardNegativesTest, AppearFirstInTheirStatedNumberAndTheRestAreDrawn) {
  fanout::testing::TempDir dir;
  partition::Dataset d = fanout::testing::MakeRandomDataset({.num_nodes = 300, .num_edges = 2000, .feat_dim = 4});
  const int64_t n = d.num_nodes, e = d.num_edges();
  std::vector<int64_t> hard(3 * e);
  for (int64_t r = 0; r < e; ++r) {
    hard[3 * r] = (r * 13) % n;
    hard[3 * r + 1] = r % 5 == 0 ? -1 : (r * 7 + 1) % n;
    hard[3 * r + 2] = (r * 29 + 2) % n;
  }
  // int32 in the input (the partitioner stores int64 new IDs).
  d.edge_fields.push_back({"hard", core::NpyArray::Adopt(std::vector<int32_t>(hard.begin(), hard.end()), {e, 3})});
  partition::PartitionOptions po;
  po.out_dir = dir.Sub("parts");
  po.num_parts = 1;
  po.add_reverse_edges = true;
  po.quiet = true;
  po.hard_negative_field = "hard";
  auto summary = partition::PartitionDataset(d, po);
  ASSERT_TRUE(summary.ok()) << summary.status();
  auto config = core::LoadPartitionConfig(summary->config_path);
  ASSERT_TRUE(config.ok());
  auto store = core::PartitionStore::Open(*config, 0);
  ASSERT_TRUE(store.ok()) << store.status();
  auto graph = DistGraph::FromSources(*config, 0, {std::make_shared<core::LocalGraphSource>(std::move(*store))});
  ASSERT_TRUE(graph.ok());
  auto orig_nids = core::NpyArray::Map(dir.Sub("parts") + "/part0/" + core::PartFiles::kOrigNids);
  auto orig_eids = core::NpyArray::Map(dir.Sub("parts") + "/part0/" + core::PartFiles::kOrigEids);
  ASSERT_TRUE(orig_nids.ok() && orig_eids.ok());
  std::vector<int64_t> new_id(n);
  for (int64_t v = 0; v < n; ++v) new_id[orig_nids->data_as<int64_t>()[v]] = v;

  LinkSamplerOptions o;
  o.sampling.fanouts = {3};
  o.sampling.batch_size = 50;
  o.draw.negatives = 4;
  o.draw.hard_negative_field = "hard";
  o.draw.hard_negatives = 2;
  auto s = LinkBatchSampler::Create(graph->get(), o, RankEdgeSeeds(*config, 1, 0));
  ASSERT_TRUE(s.ok()) << s.status();
  int64_t hard_seen = 0, hard_expected = 0, forward = 0, reverse = 0;
  for (int64_t step = 0; step < 4; ++step) {
    auto b = (*s)->SampleBlocks(0, step);
    ASSERT_TRUE(b.ok()) << b.status();
    for (size_t i = 0; i < b->eids.size(); ++i) {
      const int64_t u = b->nodes.seeds[b->pos_src[i]], v = b->nodes.seeds[b->pos_dst[i]];
      const int64_t origin = orig_eids->data_as<int64_t>()[b->eids[i]];
      std::vector<int64_t> want;  // the edge's valid hard negatives, new IDs, at most 2
      if (origin < e) {
        ++forward;
        for (int j = 0; j < 3 && want.size() < 2; ++j) {
          const int64_t x = hard[3 * origin + j];
          if (x >= 0 && new_id[x] != u && new_id[x] != v) want.push_back(new_id[x]);
        }
      } else {
        ++reverse;
      }
      hard_expected += static_cast<int64_t>(want.size());
      for (size_t j = 0; j < want.size(); ++j) {
        EXPECT_EQ(b->nodes.seeds[b->neg_dst[i * 4 + j]], want[j]) << "edge " << b->eids[i] << ", negative " << j;
        ++hard_seen;
      }
      for (size_t j = 0; j < 4; ++j) {
        const int64_t w = b->nodes.seeds[b->neg_dst[i * 4 + j]];
        EXPECT_TRUE(w != u && w != v) << "edge " << b->eids[i];
      }
    }
  }
  EXPECT_GT(forward, 0);
  EXPECT_GT(reverse, 0);
  // Every input edge has 2 or 3 valid hard negatives (a -1 in every fifth row), so nearly every
  // forward positive takes its 2: about half of their negatives are hard.
  EXPECT_EQ(hard_seen, hard_expected);
  EXPECT_GT(hard_seen, forward * 3 / 2);

  // Refused: joint negatives with hard ones, and more hard negatives than negatives.
  o.draw.negative_sampling = NegativeSampling::kJoint;
  EXPECT_FALSE(LinkBatchSampler::Create(graph->get(), o, RankEdgeSeeds(*config, 1, 0)).ok());
  o.draw.negative_sampling = NegativeSampling::kUniform;
  o.draw.hard_negatives = 5;
  EXPECT_FALSE(LinkBatchSampler::Create(graph->get(), o, RankEdgeSeeds(*config, 1, 0)).ok());

  // The partitioner refuses a value that is no node, naming the row.
  hard[3 * 17 + 2] = n + 4;
  d.edge_fields.back() = {"hard", core::NpyArray::Adopt(std::vector<int32_t>(hard.begin(), hard.end()), {e, 3})};
  po.out_dir = dir.Sub("bad");
  auto bad = partition::PartitionDataset(d, po);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(StrCat("row 17: hard negative ", n + 4, " is not a node ID")),
            std::string::npos)
      << bad.status();
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("bad"))) << "refused before anything is written";
}

// Evaluation's drawn negatives depend on (seed, stream, positive index, j) only: a slice drawn
// alone equals the same rows of the whole, so every number of ranks ranks against the same ones;
// another seed or split (stream) draws others; joint draws one set for all.
TEST_F(LinkSamplerTest, EvalNegativesAreAFunctionOfTheSeedAndThePositive) {
  std::vector<int64_t> pairs;
  for (int64_t i = 0; i < 40; ++i) pairs.insert(pairs.end(), {i, (i * 7 + 3) % 400});
  const std::vector<int64_t> all = DrawEvalNegatives(*graph_, pairs, {}, 0, 10, false, 5, 0);
  ASSERT_EQ(all.size(), 400u);
  const std::vector<int64_t> tail =
      DrawEvalNegatives(*graph_, {pairs.data() + 30, pairs.size() - 30}, {}, 15, 10, false, 5, 0);
  EXPECT_EQ(tail, std::vector<int64_t>(all.begin() + 150, all.end()));
  for (size_t i = 0; i < 40; ++i) {
    for (size_t j = 0; j < 10; ++j) {
      const int64_t v = all[i * 10 + j];
      EXPECT_TRUE(v >= 0 && v < 400 && v != pairs[2 * i] && v != pairs[2 * i + 1]) << v;
    }
  }
  EXPECT_NE(DrawEvalNegatives(*graph_, pairs, {}, 0, 10, false, 6, 0), all);
  EXPECT_NE(DrawEvalNegatives(*graph_, pairs, {}, 0, 10, false, 5, 1), all);
  const std::vector<int64_t> joint = DrawEvalNegatives(*graph_, pairs, {}, 0, 10, true, 5, 0);
  EXPECT_EQ(joint.size(), 10u);
  EXPECT_EQ(DrawEvalNegatives(*graph_, {pairs.data(), 2}, {}, 17, 10, true, 5, 0), joint);
}

// The loader's threads hand out exactly the batches one sampler makes, in order, then stop.
TEST_F(LinkSamplerTest, LoaderHandsOutTheSamplersBatchesInOrder) {
  LinkSamplerOptions o = Options();
  o.draw.negative_sampling = NegativeSampling::kDegreePow75;
  auto loader = LinkBatchLoader::Create(graph_.get(), o, RankEdgeSeeds(config_, 1, 0), 3, 2, 1, 2);
  ASSERT_TRUE(loader.ok()) << loader.status();
  auto one = LinkBatchSampler::Create(graph_.get(), o, RankEdgeSeeds(config_, 1, 0));
  ASSERT_TRUE(one.ok());
  const int64_t steps = (*loader)->steps_per_epoch();
  for (int64_t epoch = 1; epoch <= 2; ++epoch) {
    for (int64_t step = 0; step < steps; ++step) {
      auto got = (*loader)->Next();
      ASSERT_TRUE(got.ok()) << got.status();
      auto want = (*one)->Sample(epoch, step);
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(got->epoch, epoch);
      EXPECT_EQ(got->step, step);
      EXPECT_EQ(got->eids, want->eids);
      EXPECT_EQ(got->neg_dst, want->neg_dst);
      EXPECT_EQ(got->nodes.blocks[0].indices, want->nodes.blocks[0].indices);
    }
  }
  EXPECT_EQ((*loader)->Next().status().code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace fanout::sampler

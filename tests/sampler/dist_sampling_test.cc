// Distributed sampling against real graph servers on loopback: 1, 2 and 4 partitions, local
// partition read from files and the others over gRPC; the training split; identical batches
// whether made by threads or by fanout-sampler processes; clear errors when a server is gone.
#include <sys/mman.h>

#include <chrono>
#include <numeric>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "base/strings.h"
#include "gtest/gtest.h"
#include "sampler/cache_choice.h"
#include "sampler/dist_graph.h"
#include "sampler/link_sampler.h"
#include "sampler/loader.h"
#include "sampler/machine_rows.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/seed_split.h"
#include "tests/sampler/sampler_truth.h"
#include "server/graph_server.h"
#include "tests/testing/fake_graph_source.h"
#include "tests/testing/server_cluster.h"
#include "tests/testing/testing.h"

namespace fanout::sampler {
namespace {

// A dataset partitioned into K with reverse edges, and a server per partition.
struct Job {
  testing::TempDir dir;
  partition::Dataset d;
  std::string config_path;
  core::PartitionConfig config;
  testing::ServerCluster cluster;

  void Start(int parts, int64_t nodes = 1500, int64_t edges = 9000) {
    d = testing::MakeRandomDataset({.num_nodes = nodes, .num_edges = edges, .feat_dim = 5});
    // An edge field 3 wide, "ef": row r holds r, r + 0.25, r + 0.5 (edge features).
    std::vector<float> ef(3 * d.num_edges());
    for (size_t i = 0; i < ef.size(); ++i) ef[i] = static_cast<float>(i / 3) + 0.25f * static_cast<float>(i % 3);
    d.edge_fields.push_back({"ef", core::NpyArray::Adopt(std::move(ef), {d.num_edges(), 3})});
    partition::PartitionOptions o;
    o.out_dir = dir.Sub("parts");
    o.num_parts = parts;
    o.add_reverse_edges = true;
    o.quiet = true;
    auto s = partition::PartitionDataset(d, o);
    ASSERT_TRUE(s.ok()) << s.status();
    config_path = s->config_path;
    config = *core::LoadPartitionConfig(config_path);
    cluster.Start(config_path);
  }
  DistGraphOptions GraphOptions(int machine, bool local_files = true) const {
    DistGraphOptions go;
    go.machine_id = machine;
    go.read_local_files = local_files;
    go.servers = *ParseServerList(cluster.ServerList(), config.num_parts);
    go.client.deadline_seconds = 10;
    go.connect_timeout_seconds = 10;
    return go;
  }
};

class DistSamplingTest : public ::testing::TestWithParam<int> {};

TEST_P(DistSamplingTest, EveryTrainersBatchesMatchTheDataset) {
  const int parts = GetParam();
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(parts));
  testing::BatchTruth truth(job.d, true, job.config_path);
  const std::vector<int64_t> fanouts = {4, 3, 2};
  std::vector<int64_t> train;
  std::vector<std::vector<int64_t>> split;
  std::set<int64_t> union_epoch0;
  int64_t per_epoch = 0;
  for (int rank = 0; rank < parts; ++rank) {  // one trainer per machine
    SCOPED_TRACE("rank " + std::to_string(rank));
    auto g = DistGraph::Open(job.config, job.GraphOptions(rank));
    ASSERT_TRUE(g.ok()) << g.status();
    if (rank == 0) {
      auto mask = (*g)->PullWholeNodeField("train_mask");
      ASSERT_TRUE(mask.ok()) << mask.status();
      train = MaskToIds(*mask);
      ASSERT_EQ(train.size(), job.d.train_idx.size());
      split = SplitSeeds(train, (*g)->node_book(), 1);
      per_epoch = SeedsPerEpoch(static_cast<int64_t>(train.size()), parts);
    }
    SamplerOptions so;
    so.fanouts = fanouts;
    so.batch_size = 50;
    so.seed = 5;
    so.rank = rank;
    so.seeds_per_epoch = per_epoch;
    MiniBatchSampler s(g->get(), so, split[rank]);
    EXPECT_EQ(s.seeds_per_epoch(), per_epoch) << "every trainer uses the same number of seeds";
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      int64_t count = 0;
      for (int64_t step = 0; step < s.steps_per_epoch(); ++step) {
        auto mb = s.Sample(epoch, step);
        ASSERT_TRUE(mb.ok()) << mb.status();
        ASSERT_NO_FATAL_FAILURE(truth.Check(*mb, fanouts, false));
        count += static_cast<int64_t>(mb->seeds.size());
        if (epoch == 0) union_epoch0.insert(mb->seeds.begin(), mb->seeds.end());
      }
      EXPECT_EQ(count, per_epoch);
    }
  }
  EXPECT_EQ(static_cast<int64_t>(union_epoch0.size()), per_epoch * parts) << "no seed used by two trainers";
}

INSTANTIATE_TEST_SUITE_P(Partitions, DistSamplingTest, ::testing::Values(1, 2, 4));

TEST(DistSamplingTest, LocalFilesAndRpcGiveTheSameBatches) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  auto direct = DistGraph::Open(job.config, job.GraphOptions(1, true));
  auto rpc = DistGraph::Open(job.config, job.GraphOptions(1, false));
  ASSERT_TRUE(direct.ok() && rpc.ok());
  EXPECT_TRUE((*direct)->is_local(1));
  EXPECT_FALSE((*rpc)->is_local(1));
  std::vector<int64_t> seeds(300);
  std::iota(seeds.begin(), seeds.end(), 600);
  SamplerOptions so;
  so.fanouts = {-1, 6};
  so.batch_size = 64;
  MiniBatchSampler a(direct->get(), so, seeds), b(rpc->get(), so, seeds);
  for (int64_t step = 0; step < a.steps_per_epoch(); ++step) {
    auto x = a.Sample(0, step), y = b.Sample(0, step);
    ASSERT_TRUE(x.ok() && y.ok());
    testing::ExpectSameBatch(*x, *y);
  }
}

// Every batch of a loader, in order.
std::vector<MiniBatch> Drain(BatchLoader& l) {
  std::vector<MiniBatch> out;
  while (true) {
    auto mb = l.Next();
    if (mb.status().code() == absl::StatusCode::kOutOfRange) break;
    EXPECT_TRUE(mb.ok()) << mb.status();
    if (!mb.ok()) break;
    out.push_back(std::move(*mb));
  }
  return out;
}

// One epoch of `job`'s graph, sampler processes (when asked for) started from the built binary.
LoaderOptions OneEpoch(const Job& job) {
  LoaderOptions lo;
  lo.num_epochs = 1;
  lo.sampler_binary = FANOUT_SAMPLER_BIN;
  lo.part_config_path = job.config_path;
  return lo;
}

// Every batch a loader over `g` makes with these settings (empty, and the test failed, when the
// loader cannot be made).
std::vector<MiniBatch> LoadAll(DistGraph* g, const DistGraphOptions& go, const SamplerOptions& so,
                               const std::vector<int64_t>& seeds, const LoaderOptions& lo) {
  auto l = MakeBatchLoader(g, go, so, seeds, lo);
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() ? Drain(**l) : std::vector<MiniBatch>{};
}

// Machine 0's share of the training nodes, with one trainer per machine.
std::vector<int64_t> TrainShareOfMachine0(const DistGraph& g) {
  auto mask = g.PullWholeNodeField("train_mask");
  EXPECT_TRUE(mask.ok()) << mask.status();
  if (!mask.ok()) return {};
  return SplitSeeds(MaskToIds(*mask), g.node_book(), 1)[0];
}

// Two layers of small fanouts, 40 seeds a batch.
SamplerOptions SmallBatches(uint64_t seed) {
  SamplerOptions so;
  so.fanouts = {5, 3};
  so.batch_size = 40;
  so.seed = seed;
  return so;
}

TEST(BatchLoaderTest, ThreadsAndSamplerProcessesMakeIdenticalBatches) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  testing::BatchTruth truth(job.d, true, job.config_path);
  const DistGraphOptions go = job.GraphOptions(0);
  auto g = DistGraph::Open(job.config, go);
  ASSERT_TRUE(g.ok()) << g.status();
  const std::vector<int64_t> seeds = TrainShareOfMachine0(**g);
  ASSERT_FALSE(seeds.empty());
  const SamplerOptions so = SmallBatches(99);
  LoaderOptions lo;
  lo.num_epochs = 2;
  lo.first_epoch = 1;
  lo.sampler_binary = FANOUT_SAMPLER_BIN;
  lo.part_config_path = job.config_path;
  std::vector<std::vector<MiniBatch>> runs;
  for (auto [samplers, threads] : std::vector<std::pair<int, int>>{{0, 1}, {0, 3}, {2, 1}, {1, 1}}) {
    lo.num_samplers = samplers;
    lo.num_threads = threads;
    auto l = MakeBatchLoader(g->get(), go, so, seeds, lo);
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ((*l)->feature_dim(), 5);
    runs.push_back(Drain(**l));
    ASSERT_EQ(static_cast<int64_t>(runs.back().size()), 2 * (*l)->steps_per_epoch());
  }
  // Blocks made ahead and features fetched when a batch is taken (evaluation's loader): the
  // same batches.
  for (int threads : {1, 3}) {
    LoaderOptions just_in_time = lo;
    just_in_time.num_samplers = 0;
    just_in_time.num_threads = threads;
    just_in_time.features_ahead = false;
    auto l = MakeBatchLoader(g->get(), go, so, seeds, just_in_time);
    ASSERT_TRUE(l.ok()) << l.status();
    runs.push_back(Drain(**l));
    ASSERT_EQ(runs.back().size(), runs[0].size());
  }
  for (size_t i = 0; i < runs[0].size(); ++i) {
    SCOPED_TRACE("batch " + std::to_string(i));
    EXPECT_EQ(runs[0][i].epoch, 1 + static_cast<int64_t>(i) / (runs[0].size() / 2));
    truth.Check(runs[0][i], so.fanouts, false);
    for (size_t r = 1; r < runs.size(); ++r) testing::ExpectSameBatch(runs[0][i], runs[r][i]);
  }
  // Starting inside the first epoch (a job resumed from a checkpoint at a step): the same batches
  // from that step on, whichever process would make them.
  const int64_t steps = static_cast<int64_t>(runs[0].size()) / 2;
  ASSERT_GE(steps, 2);
  lo.first_step = std::min<int64_t>(3, steps - 1);
  for (auto [samplers, threads] : std::vector<std::pair<int, int>>{{0, 2}, {2, 1}, {3, 1}}) {
    SCOPED_TRACE(::testing::Message() << samplers << " sampler process(es), " << threads << " thread(s)");
    lo.num_samplers = samplers;
    lo.num_threads = threads;
    auto l = MakeBatchLoader(g->get(), go, so, seeds, lo);
    ASSERT_TRUE(l.ok()) << l.status();
    const std::vector<MiniBatch> late = Drain(**l);
    ASSERT_EQ(static_cast<int64_t>(late.size()), 2 * steps - lo.first_step);
    EXPECT_EQ(late[0].epoch, 1);
    EXPECT_EQ(late[0].step, lo.first_step);
    for (size_t i = 0; i < late.size(); ++i) testing::ExpectSameBatch(runs[0][i + lo.first_step], late[i]);
  }
}

// LoaderOptions::fetch_features and BatchLoader::FetchFeatures: batches made while off carry no
// feature rows and are otherwise the same batches; a switch reaches every batch made after it
// (threads, threads fetching when a batch is taken, sampler processes with and without their
// machine's rows left out), so that a batch taken a few batches after it is as with rows
// throughout.
TEST(BatchLoaderTest, FeatureRowsComeAndGoWhenTheConsumerSaysSo) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  const DistGraphOptions go = job.GraphOptions(0);
  auto g = DistGraph::Open(job.config, go);
  ASSERT_TRUE(g.ok()) << g.status();
  const std::vector<int64_t> seeds = TrainShareOfMachine0(**g);
  const SamplerOptions so = SmallBatches(5);
  LoaderOptions lo = OneEpoch(job);
  lo.num_epochs = 4;
  const std::vector<MiniBatch> truth = LoadAll(g->get(), go, so, seeds, lo);
  ASSERT_GE(truth.size(), 16u);
  const size_t n = truth.size(), lag = 4;  // batches made ahead of the switch: prefetch and the one in hand
  struct Case {
    int samplers, threads;
    bool ahead, machine_rows;
  };
  for (const Case c : {Case{0, 1, true, false}, Case{0, 2, false, false}, Case{1, 1, true, false},
                       Case{2, 1, true, true}}) {
    SCOPED_TRACE(::testing::Message() << c.samplers << " sampler process(es), " << c.threads << " thread(s)"
                                      << (c.ahead ? "" : ", fetched when taken")
                                      << (c.machine_rows ? ", machine rows" : ""));
    LoaderOptions off = lo;
    off.num_samplers = c.samplers;
    off.num_threads = c.threads;
    off.features_ahead = c.ahead;
    off.machine_rows = c.machine_rows;
    off.fetch_features = false;
    auto l = MakeBatchLoader(g->get(), go, so, seeds, off);
    ASSERT_TRUE(l.ok()) << l.status();
    // Off for the first quarter, on for the second, off for the third, on for the last.
    for (size_t i = 0; i < n; ++i) {
      SCOPED_TRACE("batch " + std::to_string(i));
      const size_t quarter = i * 4 / n;
      if (i > 0 && quarter != (i - 1) * 4 / n) (*l)->FetchFeatures(quarter % 2 == 1);
      auto mb = (*l)->Next();
      ASSERT_TRUE(mb.ok()) << mb.status();
      const size_t since = i - quarter * n / 4;  // batches since the last switch
      const bool settled = quarter == 0 || since >= lag;
      if (settled && quarter % 2 == 1) {
        testing::ExpectSameBatch(truth[i], *mb);
      } else {
        if (settled) EXPECT_EQ(mb->features.cols, 0);
        EXPECT_TRUE(mb->features.cols == 0 || mb->features.rows == truth[i].features.rows);
        EXPECT_EQ(mb->seeds, truth[i].seeds);
        EXPECT_EQ(mb->labels, truth[i].labels);
        EXPECT_EQ(mb->input_nodes().size(), truth[i].input_nodes().size());
      }
    }
  }
}

// --edge-weight and --edge-feature: every sampled edge carries its own values of the edge fields
// (read here from the owning partition's files), the same from threads and from sampler processes
// (through the shared-memory batch); a missing field is refused naming the fields there are.
TEST(BatchLoaderTest, EdgeWeightsArriveWithTheirEdgesFromThreadsAndSamplerProcesses) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  std::vector<std::unique_ptr<core::PartitionStore>> stores;
  for (int k = 0; k < 2; ++k) stores.push_back(std::move(*core::PartitionStore::Open(job.config, k)));
  const core::RangePartitionBook edges = *job.config.EdgeBook();
  const DistGraphOptions go = job.GraphOptions(0);
  auto g = DistGraph::Open(job.config, go);
  ASSERT_TRUE(g.ok()) << g.status();
  const std::vector<int64_t> seeds = TrainShareOfMachine0(**g);
  SamplerOptions so = SmallBatches(7);
  so.edge.weight_field = "weight";
  so.edge.feature_field = "ef";
  LoaderOptions lo = OneEpoch(job);
  std::vector<std::vector<MiniBatch>> runs;
  for (int samplers : {0, 1}) {
    lo.num_samplers = samplers;
    runs.push_back(LoadAll(g->get(), go, so, seeds, lo));
  }
  int64_t checked = 0;
  for (size_t i = 0; i < runs[0].size(); ++i) {
    for (const Block& b : runs[0][i].blocks) {
      const FloatArray& weight = b.edge_weight();
      const sampler::Field* feat = b.fields.Find(sampler::kEdgeFeat);
      ASSERT_NE(feat, nullptr);
      ASSERT_EQ(weight.size(), b.eids.size());
      for (size_t e = 0; e < b.eids.size(); ++e, ++checked) {
        std::string raw;
        const int64_t eid = b.eids[e];
        ASSERT_TRUE(stores[edges.PartOf(eid)]->GatherEdgeRows("weight", {&eid, 1}, &raw).ok());
        int64_t want = 0;
        std::memcpy(&want, raw.data(), sizeof(want));
        ASSERT_EQ(weight[e], static_cast<float>(want)) << "edge " << eid;
        raw.clear();
        ASSERT_TRUE(stores[edges.PartOf(eid)]->GatherEdgeRows("ef", {&eid, 1}, &raw).ok());
        ASSERT_EQ(feat->width, 3);
        ASSERT_EQ(std::memcmp(raw.data(), b.fields.Get<float>(sampler::kEdgeFeat).data() + 3 * e,
                              3 * sizeof(float)),
                  0)
            << "edge " << eid;
      }
    }
    testing::ExpectSameBatch(runs[0][i], runs[1][i]);
  }
  EXPECT_GT(checked, 0);
  so.edge.weight_field = "nope";
  auto bad = MakeBatchLoader(g->get(), go, so, seeds, lo);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no edge field 'nope'; edge fields: weight, ef"), std::string::npos)
      << bad.status();
}

// Link batches from sampler processes (--task link --num-samplers N) equal the ones a
// LinkBatchSampler makes in this process: pairs, positive edge IDs, blocks with edge weights,
// features; degree^0.75 negatives, whose table each process reads for itself.
TEST(LinkProcessLoaderTest, SamplerProcessesMakeTheLinkBatchesThisProcessMakes) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  const DistGraphOptions go = job.GraphOptions(0);
  auto g = DistGraph::Open(job.config, go);
  ASSERT_TRUE(g.ok()) << g.status();
  LinkSamplerOptions o;
  o.sampling.fanouts = {4, 3};
  o.sampling.batch_size = 500;
  o.draw.negatives = 2;
  o.draw.negative_sampling = NegativeSampling::kDegreePow75;
  o.sampling.seed = 3;
  o.sampling.feature_field = "feat";
  o.sampling.edge.weight_field = "weight";
  o.sampling.edge.feature_field = "ef";
  // The processes get the rank's edges as a range (in their spec, no list); this process's
  // sampler gets them as a list: the same batches.
  const SeedArray edges = RankEdgeSeeds(job.config, 1, 0);
  ASSERT_TRUE(edges.is_range());
  LoaderOptions lo;
  lo.num_samplers = 2;
  lo.prefetch = 2;
  lo.first_epoch = 1;
  lo.num_epochs = 2;
  lo.sampler_binary = FANOUT_SAMPLER_BIN;
  lo.part_config_path = job.config_path;
  auto loader = MakeLinkProcessLoader(g->get(), go, o, edges, lo);
  ASSERT_TRUE(loader.ok()) << loader.status();
  auto one = LinkBatchSampler::Create(g->get(), o, SeedArray(edges.ToVector()));
  ASSERT_TRUE(one.ok()) << one.status();
  const int64_t steps = (*loader)->steps_per_epoch();
  ASSERT_EQ(steps, (*one)->steps_per_epoch());
  ASSERT_GE(steps, 2);
  for (int64_t epoch = 1; epoch <= 2; ++epoch) {
    for (int64_t step = 0; step < steps; ++step) {
      SCOPED_TRACE(::testing::Message() << "epoch " << epoch << " step " << step);
      auto got = (*loader)->Next();
      ASSERT_TRUE(got.ok()) << got.status();
      auto want = (*one)->Sample(epoch, step);
      ASSERT_TRUE(want.ok()) << want.status();
      EXPECT_EQ(got->epoch, epoch);
      EXPECT_EQ(got->step, step);
      EXPECT_EQ(got->pos_src, want->pos_src);
      EXPECT_EQ(got->pos_dst, want->pos_dst);
      EXPECT_EQ(got->neg_src, want->neg_src);
      EXPECT_EQ(got->neg_dst, want->neg_dst);
      EXPECT_EQ(got->eids, want->eids);
      EXPECT_FALSE(got->nodes.blocks[0].edge_weight().empty());
      testing::ExpectSameBatch(got->nodes, want->nodes);
    }
  }
  EXPECT_EQ((*loader)->Next().status().code(), absl::StatusCode::kOutOfRange);
  // Leaving the local partition's rows for this process to copy in (LoaderOptions::machine_rows):
  // the same link batches.
  lo.machine_rows = true;
  lo.num_epochs = 1;
  auto leaving = MakeLinkProcessLoader(g->get(), go, o, edges, lo);
  ASSERT_TRUE(leaving.ok()) << leaving.status();
  for (int64_t step = 0; step < steps; ++step) {
    auto got = (*leaving)->Next();
    ASSERT_TRUE(got.ok()) << got.status();
    auto want = (*one)->Sample(1, step);
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_EQ(got->pos_src, want->pos_src);
    EXPECT_EQ(got->neg_dst, want->neg_dst);
    EXPECT_TRUE(got->nodes.feature_slots.empty());
    testing::ExpectSameBatch(got->nodes, want->nodes);
  }
  lo.machine_rows = false;
  lo.num_epochs = 2;
  // Refused in this process, before any sampler starts.
  o.draw.negatives = 0;
  auto bad = MakeLinkProcessLoader(g->get(), go, o, edges, lo);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--negatives must be >= 1"), std::string::npos) << bad.status();
}

TEST(HaloCacheTest, SameBatchesWithFewerRemoteRowsFromThreadsAndSamplerProcesses) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  testing::BatchTruth truth(job.d, true, job.config_path);
  const DistGraphOptions plain = job.GraphOptions(0);
  DistGraphOptions cached = plain;
  cached.cache_field = "feat";
  cached.cache_max_bytes = 1 << 30;
  auto g = DistGraph::Open(job.config, plain);
  auto c = DistGraph::Open(job.config, cached);
  ASSERT_TRUE(g.ok() && c.ok()) << g.status() << c.status();
  EXPECT_EQ((*g)->row_cache(), nullptr);
  const RowCache* cache = (*c)->row_cache();
  ASSERT_NE(cache, nullptr);
  // The whole halo of partition 0, as the partitioner wrote it.
  auto halo = core::NpyArray::Map(job.config.PartPath(0, core::PartFiles::kHaloNids));
  ASSERT_TRUE(halo.ok());
  ASSERT_GT(halo->shape()[0], 0);
  EXPECT_EQ(static_cast<int64_t>(cache->size()), halo->shape()[0]);
  // Pulling the halo itself: every row from the cache, byte-identical to the servers' rows.
  const std::vector<int64_t> ids(cache->ids().begin(), cache->ids().end());
  std::string want(ids.size() * 20, '\0'), got(ids.size() * 20, '\0');
  ASSERT_TRUE((*g)->PullNodeRows("feat", ids, want.data()).ok());
  ASSERT_TRUE((*c)->PullNodeRows("feat", ids, got.data()).ok());
  EXPECT_EQ(want, got);
  EXPECT_EQ((*c)->cache_hits(), static_cast<int64_t>(ids.size()));
  EXPECT_EQ((*c)->cache_misses(), 0);

  const std::vector<int64_t> seeds = TrainShareOfMachine0(**g);
  ASSERT_FALSE(seeds.empty());
  const SamplerOptions so = SmallBatches(7);
  LoaderOptions lo = OneEpoch(job);
  const std::vector<MiniBatch> want_batches = LoadAll(g->get(), plain, so, seeds, lo);
  ASSERT_FALSE(want_batches.empty());
  for (int samplers : {0, 1}) {  // the cache settings reach sampler processes too
    SCOPED_TRACE(std::to_string(samplers) + " sampler processes");
    lo.num_samplers = samplers;
    const std::vector<MiniBatch> batches = LoadAll(c->get(), cached, so, seeds, lo);
    ASSERT_EQ(batches.size(), want_batches.size());
    for (size_t i = 0; i < batches.size(); ++i) {
      truth.Check(batches[i], so.fanouts, false);
      testing::ExpectSameBatch(batches[i], want_batches[i]);
    }
  }
  EXPECT_GT((*c)->cache_hits(), static_cast<int64_t>(ids.size()));  // the thread loader's hits
}

// Issue 40: a trainer's halo cache in shared memory is mapped by its sampler processes, not
// pulled by each: a row changed in the shared memory shows in their batches; the batches are
// otherwise those of a process without a cache; a process that would choose other rows refuses
// the mapping.
TEST(HaloCacheTest, SamplerProcessesMapTheTrainersCacheInSharedMemory) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  const DistGraphOptions plain = job.GraphOptions(0);
  DistGraphOptions cached = plain;
  cached.cache_field = "feat";
  cached.cache_max_bytes = 1 << 30;
  cached.cache_in_shared_memory = true;
  auto g = DistGraph::Open(job.config, plain);
  auto c = DistGraph::Open(job.config, cached);
  ASSERT_TRUE(g.ok() && c.ok()) << g.status() << c.status();
  const RowCache* cache = (*c)->row_cache();
  ASSERT_NE(cache, nullptr);
  const int fd = (*c)->shared_cache_fd();
  ASSERT_GE(fd, 0);

  const std::vector<int64_t> seeds = TrainShareOfMachine0(**g);
  const SamplerOptions so = SmallBatches(7);
  LoaderOptions lo = OneEpoch(job);
  const std::vector<MiniBatch> want = LoadAll(g->get(), plain, so, seeds, lo);
  ASSERT_FALSE(want.empty());
  lo.num_samplers = 2;
  {
    const std::vector<MiniBatch> got = LoadAll(c->get(), cached, so, seeds, lo);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) testing::ExpectSameBatch(got[i], want[i]);
  }
  // Every cached row set to 1e6 through a second mapping of the memfd: the samplers' input
  // features of cached nodes read it, so they map the trainer's rows.
  const size_t rb = cache->row_bytes();
  char* shared = static_cast<char*>(mmap(nullptr, cache->bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(shared, MAP_FAILED);
  for (size_t i = 0; i < cache->bytes() / sizeof(float); ++i) reinterpret_cast<float*>(shared)[i] = 1e6f;
  const std::vector<MiniBatch> got = LoadAll(c->get(), cached, so, seeds, lo);
  int64_t marked = 0;
  for (const MiniBatch& mb : got) {
    const auto& in = mb.blocks[0].src_nodes;
    for (size_t r = 0; r < in.size(); ++r) {
      const float first = *reinterpret_cast<const float*>(static_cast<const char*>(mb.features.data) + r * rb);
      EXPECT_EQ(first == 1e6f, cache->Find(in[r]) >= 0) << "input node " << in[r];
      marked += first == 1e6f;
    }
  }
  EXPECT_GT(marked, 0);
  munmap(shared, cache->bytes());

  std::vector<int64_t> other(cache->ids().begin(), cache->ids().end() - 1);
  auto refused = RowCache::MapShared({"feat"}, rb, other, fd);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  std::vector<int64_t> same_count(cache->ids().begin(), cache->ids().end());
  same_count.back() = 0;  // a node of this partition: not in the cache
  auto wrong = RowCache::MapShared({"feat"}, rb, same_count, fd);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("other nodes' rows"), std::string::npos) << wrong.status();
}

// Issue 66: --feature-cache-rows presample. The cache keeps the remote rows this process's own
// batches take most, beyond the halo too: with room for all of them, the epoch presampled asks
// the servers for no row at all; with less, no uncached remote node was taken more often than a
// cached one. Sampler processes map the trainer's choice (they cannot presample the same way)
// and make the same batches; a process of another partition refuses it. With the local features
// on disk, the local rows taken are kept too.
TEST(HaloCacheTest, PresampledCountsKeepTheRemoteRowsBatchesTakeMostBeyondTheHalo) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2, 3000, 6000));  // sparse: remote nodes two hops out are not halo
  const DistGraphOptions plain = job.GraphOptions(0);
  auto g = DistGraph::Open(job.config, plain);
  ASSERT_TRUE(g.ok()) << g.status();
  const std::vector<int64_t> seeds = TrainShareOfMachine0(**g);
  ASSERT_FALSE(seeds.empty());
  SamplerOptions so = SmallBatches(11);
  so.feature_field = "feat";
  LoaderOptions lo = OneEpoch(job);
  const std::vector<MiniBatch> want = LoadAll(g->get(), plain, so, seeds, lo);
  ASSERT_FALSE(want.empty());
  auto halo_file = core::NpyArray::Map(job.config.PartPath(0, core::PartFiles::kHaloNids));
  ASSERT_TRUE(halo_file.ok());
  const std::set<int64_t> halo(halo_file->data_as<int64_t>(), halo_file->data_as<int64_t>() + halo_file->rows());

  auto presample = [&](DistGraph* graph) {
    auto counts = PresampleSeeds(graph, so, seeds, StepsPerEpoch(so, static_cast<int64_t>(seeds.size())));
    EXPECT_TRUE(counts.ok()) << counts.status();
    return counts.ok() ? *counts : std::vector<int64_t>{};
  };
  auto remote = [&](int64_t v) { return (*g)->node_book().PartOf(v) != 0; };

  DistGraphOptions big = plain;
  big.cache_field = "feat";
  big.cache_max_bytes = 1 << 30;
  big.cache_from_counts = true;
  big.cache_in_shared_memory = true;
  auto c = DistGraph::Open(job.config, big);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->row_cache(), nullptr);  // built once presampled
  const std::vector<int64_t> counts = presample(c->get());
  ASSERT_EQ(static_cast<int64_t>(counts.size()), job.config.num_nodes);
  EXPECT_EQ((*c)->BuildCacheFromCounts(std::vector<int64_t>(3)).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*c)->BuildCacheFromCounts(counts).ok());
  EXPECT_EQ((*c)->BuildCacheFromCounts(counts).code(), absl::StatusCode::kFailedPrecondition);  // once
  const RowCache* cache = (*c)->row_cache();
  ASSERT_NE(cache, nullptr);
  int64_t beyond = 0, taken_remote = 0;
  for (int64_t v = 0; v < job.config.num_nodes; ++v) {
    if (!remote(v)) {
      EXPECT_LT(cache->Find(v), 0) << "local node " << v;
      continue;
    }
    const bool want_cached = counts[v] > 0 || halo.count(v) > 0;
    EXPECT_EQ(cache->Find(v) >= 0, want_cached) << "remote node " << v;
    beyond += counts[v] > 0 && halo.count(v) == 0;
    taken_remote += counts[v] > 0;
  }
  EXPECT_GT(beyond, 0) << "the batches take no remote node beyond the halo: the test graph is too dense";
  {
    const std::vector<MiniBatch> got = LoadAll(c->get(), big, so, seeds, lo);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) testing::ExpectSameBatch(got[i], want[i]);
    EXPECT_EQ((*c)->cache_misses(), 0) << "the epoch presampled fetched remote rows";
    EXPECT_GT((*c)->cache_hits(), 0);
  }
  lo.num_samplers = 2;
  {
    const std::vector<MiniBatch> got = LoadAll(c->get(), big, so, seeds, lo);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) testing::ExpectSameBatch(got[i], want[i]);
  }
  // Partition 1's process given partition 0's cache: it holds partition 1's own nodes.
  DistGraphOptions other = job.GraphOptions(1);
  other.cache_field = "feat";
  other.cache_max_bytes = 1 << 30;
  other.cache_from_counts = true;
  other.shared_cache_fd = (*c)->shared_cache_fd();
  auto refused = DistGraph::Open(job.config, other);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("cannot hold (is it the same partition?)"), std::string::npos)
      << refused.status();
  // Not whole rows with their IDs: refused too.
  EXPECT_EQ(RowCache::MapSharedAsWritten({"feat"}, 24, (*c)->shared_cache_fd()).status().code(),
            absl::StatusCode::kFailedPrecondition);

  // A budget below what the batches take: the most taken remote rows, first.
  DistGraphOptions small = big;
  small.cache_in_shared_memory = false;
  const int64_t rows = taken_remote / 2;
  small.cache_max_bytes = rows * 20;  // rows of 5 float32
  auto s = DistGraph::Open(job.config, small);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)->BuildCacheFromCounts(counts).ok());
  const RowCache* part = (*s)->row_cache();
  ASSERT_NE(part, nullptr);
  ASSERT_EQ(static_cast<int64_t>(part->size()), rows);
  int64_t least_cached = std::numeric_limits<int64_t>::max(), most_left = 0;
  for (int64_t v = 0; v < job.config.num_nodes; ++v) {
    if (!remote(v)) continue;
    if (part->Find(v) >= 0) {
      least_cached = std::min(least_cached, counts[v]);
    } else {
      most_left = std::max(most_left, counts[v]);
    }
  }
  EXPECT_GE(least_cached, most_left);
  // A graph opened without cache_from_counts builds its cache itself.
  EXPECT_EQ((*g)->BuildCacheFromCounts(counts).code(), absl::StatusCode::kFailedPrecondition);

  // With the local features on disk the local rows the batches take compete too (a local row
  // not cached is a read from disk): every node taken is then held, local or remote, and the
  // epoch presampled reads neither a server nor the disk for its rows.
  DistGraphOptions disk = big;
  disk.local_row_cache_bytes = 0;
  auto d = DistGraph::Open(job.config, disk);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE((*d)->BuildCacheFromCounts(counts).ok());
  ASSERT_NE((*d)->row_cache(), nullptr);
  int64_t local_taken = 0;
  for (int64_t v = 0; v < job.config.num_nodes; ++v) {
    if (counts[v] > 0) EXPECT_GE((*d)->row_cache()->Find(v), 0) << "node " << v << " was taken";
    local_taken += counts[v] > 0 && !remote(v) ? 1 : 0;
  }
  EXPECT_EQ((*d)->cached_local_rows() > 0, local_taken > 0);
  lo.num_samplers = 0;
  const std::vector<MiniBatch> from_disk = LoadAll(d->get(), disk, so, seeds, lo);
  ASSERT_EQ(from_disk.size(), want.size());
  for (size_t i = 0; i < from_disk.size(); ++i) testing::ExpectSameBatch(from_disk[i], want[i]);
  EXPECT_EQ((*d)->cache_misses(), 0);
  EXPECT_EQ((*d)->local_cache_misses(), 0);
}

// Issue 40: with the local partition's features read from disk, the cache's budget goes to the
// rows sampling reads most, local or remote: the local nodes it keeps are read from memory, not
// from disk, by this process and by sampler processes mapping its cache; the batches are those of
// a process that maps every feature.
TEST(HaloCacheTest, WithLocalFeaturesOnDiskItKeepsTheMostReadLocalRowsToo) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  const DistGraphOptions plain = job.GraphOptions(0);
  DistGraphOptions cached = plain;
  cached.local_row_cache_bytes = 0;  // every local row not in the halo cache is a read from disk
  cached.cache_field = "feat";
  cached.cache_max_bytes = 300 * 20;  // 300 rows of 5 float32: fewer than the halo and the local nodes
  cached.cache_in_shared_memory = true;
  auto g = DistGraph::Open(job.config, plain);
  auto c = DistGraph::Open(job.config, cached);
  ASSERT_TRUE(g.ok() && c.ok()) << g.status() << c.status();
  const RowCache* cache = (*c)->row_cache();
  ASSERT_NE(cache, nullptr);
  ASSERT_EQ(cache->size(), 300u);
  const core::PartitionStore& local = *(*g)->local_store();
  const core::RowCacheStats filled = (*c)->local_store()->row_cache_stats();  // the kept local rows, read once
  // How often sampling reaches each node from partition 0: its edges into the partition.
  std::map<int64_t, int64_t> edges_in;
  for (int64_t v = local.node_start(); v < local.node_end(); ++v) {
    edges_in.emplace(v, 0);
    const core::PartitionStore::Adjacency a = local.Neighbors(v, core::EdgeDir::kIn);
    for (int64_t i = 0; i < a.degree; ++i) ++edges_in[a.nbr(i)];
  }
  std::vector<int64_t> local_ids, remote_ids;
  int64_t least_kept = std::numeric_limits<int64_t>::max();
  for (int64_t id : cache->ids()) {
    (id >= local.node_start() && id < local.node_end() ? local_ids : remote_ids).push_back(id);
    least_kept = std::min(least_kept, edges_in.at(id));
  }
  EXPECT_FALSE(local_ids.empty());
  EXPECT_FALSE(remote_ids.empty());
  const std::set<int64_t> kept(cache->ids().begin(), cache->ids().end());
  for (const auto& [id, n] : edges_in) {
    if (kept.count(id) == 0) {
      EXPECT_LE(n, least_kept) << "node " << id << " left out";
    }
  }
  // The kept local rows come from the cache, byte-identical, with nothing read from disk.
  std::string want(local_ids.size() * 20, '\0'), got(local_ids.size() * 20, '\0');
  ASSERT_TRUE((*g)->PullNodeRows("feat", local_ids, want.data()).ok());
  ASSERT_TRUE((*c)->PullNodeRows("feat", local_ids, got.data()).ok());
  EXPECT_EQ(want, got);
  EXPECT_EQ(filled.misses, static_cast<int64_t>(local_ids.size()));
  EXPECT_EQ((*c)->local_store()->row_cache_stats().misses, filled.misses) << "a kept row went to the disk";
  EXPECT_NE((*c)->HaloCacheReport().find(base::StrCat(local_ids.size(), " of ", local_ids.size(), " local rows (100.0 %) from its ",
                                                      local_ids.size(), " most-read local rows of 'feat'")),
            std::string::npos)
      << (*c)->HaloCacheReport();

  const std::vector<int64_t> seeds = TrainShareOfMachine0(**g);
  const SamplerOptions so = SmallBatches(7);
  LoaderOptions lo = OneEpoch(job);
  const std::vector<MiniBatch> want_batches = LoadAll(g->get(), plain, so, seeds, lo);
  ASSERT_FALSE(want_batches.empty());
  for (int samplers : {0, 2}) {  // sampler processes map this process's cache
    SCOPED_TRACE(std::to_string(samplers) + " sampler processes");
    lo.num_samplers = samplers;
    const std::vector<MiniBatch> batches = LoadAll(c->get(), cached, so, seeds, lo);
    ASSERT_EQ(batches.size(), want_batches.size());
    for (size_t i = 0; i < batches.size(); ++i) testing::ExpectSameBatch(batches[i], want_batches[i]);
  }
  // The thread loader's local rows: the cache's misses, and only those, went to the disk (with
  // the seeds' labels, a field of the local partition too).
  EXPECT_GT((*c)->local_cache_hits(), static_cast<int64_t>(local_ids.size()));
  const core::RowCacheStats after = (*c)->local_store()->row_cache_stats();
  EXPECT_EQ(after.misses - filled.misses, (*c)->local_cache_misses() + static_cast<int64_t>(seeds.size()));
}

// Issue 40: sampler processes leave out of their batch files the rows the trainer reads in place
// (its partition's mapped rows, the halo cache it shares with them), and the loader copies them
// in: the batches are those of a loader without any of it, with the local features mapped or
// read from disk, with a halo cache or without.
TEST(MachineRowsTest, SamplerProcessesLeaveTheRowsTheTrainerReadsInPlace) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  const DistGraphOptions plain = job.GraphOptions(0);
  auto g = DistGraph::Open(job.config, plain);
  ASSERT_TRUE(g.ok()) << g.status();
  const std::vector<int64_t> seeds = TrainShareOfMachine0(**g);
  const SamplerOptions so = SmallBatches(11);
  LoaderOptions lo = OneEpoch(job);
  const std::vector<MiniBatch> want = LoadAll(g->get(), plain, so, seeds, lo);
  ASSERT_FALSE(want.empty());

  DistGraphOptions halo = plain;  // a trainer's: the halo cache in shared memory
  halo.cache_field = "feat";
  halo.cache_max_bytes = 1 << 30;
  halo.cache_in_shared_memory = true;
  DistGraphOptions disk = halo;  // local rows from disk, the most read of them in the cache
  disk.local_row_cache_bytes = 0;
  disk.cache_max_bytes = 300 * 20;
  struct Case {
    const char* name;
    DistGraphOptions options;
  };
  for (const Case& c : {Case{"mapped, no cache", plain}, Case{"mapped, halo cache", halo}, Case{"from disk", disk}}) {
    SCOPED_TRACE(c.name);
    auto graph = DistGraph::Open(job.config, c.options);
    ASSERT_TRUE(graph.ok()) << graph.status();
    const std::shared_ptr<const MachineRows> rows = MachineRows::Of(**graph, "feat", /*with_cache=*/true);
    ASSERT_NE(rows, nullptr);
    const core::PartitionStore& local = *(*graph)->local_store();
    const RowCache* cache = (*graph)->row_cache();
    EXPECT_EQ(rows->local_rows(), c.options.local_row_cache_bytes < 0 ? local.num_inner_nodes() : 0);
    EXPECT_EQ(rows->num_slots(), rows->local_rows() + (cache != nullptr ? static_cast<int64_t>(cache->size()) : 0));

    // In this process: the request leaves out exactly the rows held here, and Complete puts
    // the batch back together byte for byte.
    MiniBatchSampler s(graph->get(), so, seeds);
    s.LeaveMachineRows(rows);
    const int64_t hits_before = (*graph)->cache_hits() + (*graph)->local_cache_hits();
    int64_t held_in_cache = 0;
    for (int64_t step = 0; step < s.steps_per_epoch(); ++step) {
      auto mb = s.SampleBlocks(0, step);
      ASSERT_TRUE(mb.ok()) << mb.status();
      const std::span<const int64_t> request = s.FeatureRequest(&*mb);
      const std::vector<int64_t> wanted(request.begin(), request.end());
      const Int64Array& in = mb->input_nodes();
      ASSERT_EQ(mb->feature_slots.size(), in.size());
      std::vector<int64_t> expect_wanted;
      for (size_t i = 0; i < in.size(); ++i) {
        const bool mapped = rows->local_rows() > 0 && in[i] >= local.node_start() && in[i] < local.node_end();
        const bool cached = cache != nullptr && cache->Find(in[i]) >= 0;
        EXPECT_EQ(mb->feature_slots[i] >= 0, mapped || cached) << "input " << in[i];
        if (mb->feature_slots[i] < 0) expect_wanted.push_back(in[i]);
        held_in_cache += !mapped && cached ? 1 : 0;
      }
      EXPECT_EQ(wanted, expect_wanted);
      auto gathered = s.GatherFeatures(wanted, nullptr);
      ASSERT_TRUE(gathered.ok()) << gathered.status();
      mb->features = std::move(*gathered);
      BufferPool pool(1);
      ASSERT_TRUE(rows->Complete(&*mb, &pool).ok());
      EXPECT_TRUE(mb->feature_slots.empty());
      testing::ExpectSameBatch(*mb, want[step]);
    }
    // The rows held in the cache count as its hits (GatherFeatures asked it for none).
    EXPECT_EQ((*graph)->cache_hits() + (*graph)->local_cache_hits() - hits_before, held_in_cache);
    if (c.options.cache_max_bytes > 0) EXPECT_GT(held_in_cache, 0);

    // Sampler processes, one and two.
    LoaderOptions leave = lo;
    leave.machine_rows = true;
    for (int samplers : {1, 2}) {
      leave.num_samplers = samplers;
      const std::vector<MiniBatch> got = LoadAll(graph->get(), c.options, so, seeds, leave);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(got[i].feature_slots.empty());
        testing::ExpectSameBatch(got[i], want[i]);
      }
    }
  }
}

// The rows left out really come from this process: its own (copy-on-write) mapping of the
// partition is changed, which its sampler processes' mappings do not see, and the batches show
// the change exactly on the local inputs with machine_rows, nowhere without it.
TEST(MachineRowsTest, TheLoaderFillsTheLocalRowsFromItsOwnMapping) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  const DistGraphOptions go = job.GraphOptions(0);
  auto g = DistGraph::Open(job.config, go);
  ASSERT_TRUE(g.ok()) << g.status();
  auto* local = const_cast<core::PartitionStore*>((*g)->local_store());  // created writable: a test's liberty
  std::vector<int64_t> own(static_cast<size_t>(local->num_inner_nodes()));
  std::iota(own.begin(), own.end(), local->node_start());
  const std::vector<float> marked(own.size() * 5, 1e6f);
  ASSERT_TRUE(local->PushNodeRows("feat", own, marked.data(), marked.size() * sizeof(float), core::PushOp::kAssign).ok());
  const std::vector<int64_t> seeds = TrainShareOfMachine0(**g);
  LoaderOptions lo = OneEpoch(job);
  lo.num_samplers = 1;
  for (bool machine_rows : {false, true}) {
    SCOPED_TRACE(machine_rows ? "machine rows" : "every row in the batch");
    lo.machine_rows = machine_rows;
    const std::vector<MiniBatch> got = LoadAll(g->get(), go, SmallBatches(5), seeds, lo);
    ASSERT_FALSE(got.empty());
    int64_t local_inputs = 0;
    for (const MiniBatch& mb : got) {
      const Int64Array& in = mb.input_nodes();
      for (size_t r = 0; r < in.size(); ++r) {
        const bool is_local = in[r] >= local->node_start() && in[r] < local->node_end();
        const float first = static_cast<const float*>(mb.features.data)[r * 5];
        EXPECT_EQ(first == 1e6f, machine_rows && is_local) << "input node " << in[r];
        local_inputs += is_local ? 1 : 0;
      }
    }
    EXPECT_GT(local_inputs, 0);
  }
}

TEST(MachineRowsTest, CompleteRefusesSlotsThatDoNotFitAndLeavesTheBatch) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  auto g = DistGraph::Open(job.config, job.GraphOptions(0));
  ASSERT_TRUE(g.ok()) << g.status();
  const std::shared_ptr<const MachineRows> rows = MachineRows::Of(**g, "feat", false);
  ASSERT_NE(rows, nullptr);
  EXPECT_EQ(MachineRows::Of(**g, "no_such_field", false), nullptr);
  MiniBatchSampler s(g->get(), SmallBatches(3), TrainShareOfMachine0(**g));
  s.LeaveMachineRows(rows);
  auto mb = s.SampleBlocks(0, 0);
  ASSERT_TRUE(mb.ok()) << mb.status();
  const std::span<const int64_t> request = s.FeatureRequest(&*mb);
  const std::vector<int64_t> wanted(request.begin(), request.end());
  ASSERT_FALSE(wanted.empty()) << "machine 0's batches reach partition 1";
  auto gathered = s.GatherFeatures(wanted, nullptr);
  ASSERT_TRUE(gathered.ok()) << gathered.status();
  mb->features = std::move(*gathered);
  BufferPool pool(1);
  const void* fetched = mb->features.data;
  {
    MiniBatch bad = *mb;  // one fetched row too few
    bad.features.rows -= 1;
    const absl::Status st = rows->Complete(&bad, &pool);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("carries"), std::string::npos) << st;
    EXPECT_EQ(bad.features.data, fetched);
    EXPECT_FALSE(bad.feature_slots.empty());
  }
  {
    MiniBatch bad = *mb;  // a slot past the machine's rows
    std::vector<int64_t> slots(bad.feature_slots.begin(), bad.feature_slots.end());
    for (int64_t& v : slots) {
      if (v >= 0) {
        v = rows->num_slots();
        break;
      }
    }
    bad.feature_slots = std::move(slots);
    const absl::Status st = rows->Complete(&bad, &pool);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("outside [-1, "), std::string::npos) << st;
  }
  ASSERT_TRUE(rows->Complete(&*mb, &pool).ok());
}

TEST(HaloCacheTest, BudgetKeepsTheHaloNodesWithTheMostEdgesIntoThePartition) {
  // Halo 10, 20, 30 with 1, 2 and 3 edges into the partition; ties go to the smaller ID.
  EXPECT_EQ(ChooseCachedRows({10, 20, 30}, {}, {1, 2, 3}, 2), (std::vector<int64_t>{20, 30}));
  EXPECT_EQ(ChooseCachedRows({10, 20, 30}, {}, {2, 2, 1}, 1), (std::vector<int64_t>{10}));
  EXPECT_EQ(ChooseCachedRows({30, 10, 20}, {}, {}, 3), (std::vector<int64_t>{10, 20, 30}));
  EXPECT_TRUE(ChooseCachedRows({10, 20, 30}, {}, {1, 1, 1}, 0).empty());
  // Presampled counts come first, edges break their ties, then the ID: 40 (taken 5) beats the
  // halo's 30 (taken 2, 3 edges), which beats 10 (taken 2, 1 edge).
  EXPECT_EQ(ChooseCachedRows({10, 20, 30, 40}, {2, 0, 2, 5}, {1, 2, 3, 0}, 2), (std::vector<int64_t>{30, 40}));
  EXPECT_EQ(ChooseCachedRows({10, 20, 30, 40}, {2, 0, 2, 5}, {1, 2, 3, 0}, 3), (std::vector<int64_t>{10, 30, 40}));
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2));
  DistGraphOptions go = job.GraphOptions(1);
  go.cache_field = "feat";
  go.cache_max_bytes = 7 * 20;  // 7 rows of 5 float32
  auto c = DistGraph::Open(job.config, go);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_NE((*c)->row_cache(), nullptr);
  EXPECT_EQ((*c)->row_cache()->size(), 7u);
}

// A typed graph's fields are named TYPE/NAME; asking for a field no type has, a typed field
// for nodes of another type, or labels for seeds of two types is an error that names them.
TEST(DistGraphErrorsTest, TypedFieldsAreNamedByTypeAndRefusedForOtherTypes) {
  testing::TempDir dir;
  partition::Dataset d = testing::MakeTypedDataset(1);
  auto s = partition::PartitionDataset(d, {.out_dir = dir.Sub("out"), .num_parts = 1, .quiet = true});
  ASSERT_TRUE(s.ok()) << s.status();
  auto cfg = core::LoadPartitionConfig(s->config_path);
  ASSERT_TRUE(cfg.ok());
  auto g = DistGraph::Open(*cfg, DistGraphOptions{});
  ASSERT_TRUE(g.ok()) << g.status();
  SamplerOptions so;
  so.feature_field = "embedding";
  absl::Status bad = ValidateSamplerOptions(so, **g);
  EXPECT_EQ(bad.code(), absl::StatusCode::kNotFound) << bad;
  EXPECT_NE(bad.message().find("no node type of graph 'typed' has a feature field 'embedding' (TYPE/embedding); "
                               "node fields: paper/feat"),
            std::string::npos)
      << bad;
  // Node 130 is an author (papers are 0..119 in the one partition).
  std::vector<float> row(3);
  absl::Status other = (*g)->PullNodeRows("paper/feat", std::vector<int64_t>{130}, reinterpret_cast<char*>(row.data()));
  EXPECT_EQ(other.code(), absl::StatusCode::kInvalidArgument) << other;
  EXPECT_NE(other.message().find("node 130 is of type author; field 'paper/feat' holds paper nodes only"),
            std::string::npos)
      << other;
  // --relation-fanout names a relation by its name or its canonical type, once, per layer.
  const std::vector<int64_t> two = {5, 5};
  for (const auto& [spec, want] : std::vector<std::pair<std::string, std::string>>{
           {"wrote=1,1", "no edge type 'wrote' (the graph has author:writes:paper, paper:cites:paper, paper:in:venue)"},
           {"writes=1", "1 fanouts for 2 layers (--fanouts)"},
           {"writes=1,-2", "fanout '-2' is not -1 (all) or a count >= 0"},
           {"cites", "expected REL=F0,F1,..."}}) {
    auto r = ResolveRelationFanouts(*cfg, two, {spec});
    EXPECT_NE(r.status().message().find(want), std::string::npos) << spec << ": " << r.status();
  }
  auto twice = ResolveRelationFanouts(*cfg, two, {"writes=1,1", "author:writes:paper=2,2"});
  EXPECT_NE(twice.status().message().find("edge type author:writes:paper is given twice"), std::string::npos)
      << twice.status();
  so.feature_field = "feat";
  MiniBatchSampler sampler(g->get(), so, {});
  std::vector<int64_t> labels;
  absl::Status mixed = sampler.FetchLabels(std::vector<int64_t>{3, 130}, &labels);
  EXPECT_NE(mixed.message().find("a batch's seeds mix node types paper and author"), std::string::npos) << mixed;
}

TEST(DistGraphErrorsTest, UnreachableServerNamesPartitionAndAddressWithinTheTimeout) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2, 200, 800));
  DistGraphOptions go = job.GraphOptions(0);
  go.servers.addresses[1] = {"127.0.0.1:1"};  // nothing listens on port 1
  go.connect_timeout_seconds = 2;
  const auto t0 = std::chrono::steady_clock::now();
  auto g = DistGraph::Open(job.config, go);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(g.status().message().find("partition 1 server 127.0.0.1:1"), std::string::npos) << g.status();
  EXPECT_LT(s, 10);

  go = job.GraphOptions(0);
  go.servers.addresses[1].clear();
  g = DistGraph::Open(job.config, go);
  EXPECT_NE(g.status().message().find("no server address for partition 1"), std::string::npos) << g.status();

  // A server of another partition in the slot of partition 1.
  go = job.GraphOptions(0, false);
  std::swap(go.servers.addresses[0], go.servers.addresses[1]);
  g = DistGraph::Open(job.config, go);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(g.status().message().find("expected graph"), std::string::npos) << g.status();
}

TEST(DistGraphErrorsTest, ServerGoneMidRunFailsTheLoaderNamingIt) {
  for (int samplers : {0, 2}) {
    SCOPED_TRACE("samplers " + std::to_string(samplers));
    Job job;
    ASSERT_NO_FATAL_FAILURE(job.Start(2, 400, 2000));
    DistGraphOptions go = job.GraphOptions(0);
    go.client.deadline_seconds = 3;
    go.connect_timeout_seconds = 3;  // a sampler process may start after the server is gone
    auto g = DistGraph::Open(job.config, go);
    ASSERT_TRUE(g.ok()) << g.status();
    std::vector<int64_t> seeds(400);
    std::iota(seeds.begin(), seeds.end(), 0);  // both partitions' nodes
    SamplerOptions so;
    so.fanouts = {3, 3};
    so.batch_size = 20;
    LoaderOptions lo;
    lo.num_samplers = samplers;
    lo.num_epochs = 3;
    lo.prefetch = 1;
    lo.sampler_binary = FANOUT_SAMPLER_BIN;
    lo.part_config_path = job.config_path;
    auto l = MakeBatchLoader(g->get(), go, so, seeds, lo);
    ASSERT_TRUE(l.ok()) << l.status();
    ASSERT_TRUE((*l)->Next().ok());
    job.cluster.Stop(1);
    const auto t0 = std::chrono::steady_clock::now();
    absl::Status err;
    for (int i = 0; i < 100 && err.ok(); ++i) err = (*l)->Next().status();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(err.ok());
    EXPECT_NE(err.message().find("partition 1"), std::string::npos) << err;
    EXPECT_NE(err.message().find("127.0.0.1:"), std::string::npos) << err;
    if (samplers > 0) {
      EXPECT_NE(err.message().find("sampler process"), std::string::npos) << err;
    }
    EXPECT_LT(s, 20) << "bounded by the call deadline, never a hang";
  }
}

TEST(BatchLoaderTest, ClientSettingsReachSamplerProcesses) {
  // A message limit too small for a feature pull must fail a sampler process's pulls exactly
  // as it fails the trainer's own: the process gets the trainer's client settings (the retry
  // count, message size and connection setting once never reached it).
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(2, 400, 2000));
  DistGraphOptions go = job.GraphOptions(0);
  go.read_local_files = false;  // every pull goes through a server
  go.client.max_message_bytes = 512;
  auto g = DistGraph::Open(job.config, go);
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<int64_t> seeds(400);
  std::iota(seeds.begin(), seeds.end(), 0);
  for (int samplers : {0, 1}) {
    SCOPED_TRACE(std::to_string(samplers) + " sampler processes");
    LoaderOptions lo;
    lo.num_samplers = samplers;
    lo.sampler_binary = FANOUT_SAMPLER_BIN;
    lo.part_config_path = job.config_path;
    auto l = MakeBatchLoader(g->get(), go, SmallBatches(3), seeds, lo);
    ASSERT_TRUE(l.ok()) << l.status();
    absl::Status err = (*l)->Next().status();
    EXPECT_EQ(err.code(), absl::StatusCode::kResourceExhausted) << err;
  }
}

TEST(BatchLoaderTest, MissingSamplerBinaryIsAClearError) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(1, 100, 300));
  DistGraphOptions go = job.GraphOptions(0);
  auto g = DistGraph::Open(job.config, go);
  ASSERT_TRUE(g.ok());
  LoaderOptions lo;
  lo.num_samplers = 1;
  lo.sampler_binary = "/nonexistent/fanout-sampler";
  SamplerOptions so;
  so.fanouts = {2};
  auto l = MakeBatchLoader(g->get(), go, so, {1, 2, 3}, lo);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("/nonexistent/fanout-sampler"), std::string::npos);
}

// Issue 11: prefetch 0 let no batch be made ahead of the consumer, so the first Next() waited
// forever. It is refused when the loader is made, for threads and sampler processes alike.
TEST(BatchLoaderTest, ZeroPrefetchOrThreadsIsRefusedNotAHang) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.Start(1, 100, 300));
  DistGraphOptions go = job.GraphOptions(0);
  auto g = DistGraph::Open(job.config, go);
  ASSERT_TRUE(g.ok());
  SamplerOptions so;
  so.fanouts = {2};
  for (int samplers : {0, 1}) {
    LoaderOptions lo;
    lo.num_samplers = samplers;
    lo.sampler_binary = FANOUT_SAMPLER_BIN;
    lo.prefetch = 0;
    auto l = MakeBatchLoader(g->get(), go, so, {1, 2, 3}, lo);
    ASSERT_FALSE(l.ok());
    EXPECT_NE(l.status().message().find("--prefetch must be >= 1"), std::string::npos)
        << l.status();
  }
  LoaderOptions lo;
  lo.num_threads = 0;
  auto l = MakeBatchLoader(g->get(), go, so, {1, 2, 3}, lo);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("--sampler-threads"), std::string::npos) << l.status();
}


// Any GraphSource can be served (server::GraphServer::Serve): here two fakes that answer late from
// threads of their own, behind real gRPC servers, read by a router that has no local files. The
// metadata check, the wire codec and the merge see nothing different from fanout-server.
TEST(ServedSourceTest, FakeSourcesBehindGrpcServersAnswerTheRouter) {
  core::PartitionConfig config = testing::FakeConfig({0, 3, 6}, {0, 6, 12}, {"feat"});
  std::vector<std::unique_ptr<server::GraphServer>> servers;
  ServerMap map;
  map.addresses.resize(2);
  for (int p = 0; p < 2; ++p) {
    auto fake = std::make_shared<testing::FakeGraphSource>(p, 3 * p, 3 * p + 3, 6 * p);
    for (int64_t v = 3 * p; v < 3 * p + 3; ++v) {
      fake->AddEdge((v + 1) % 6, v);
      fake->AddEdge((v + 3) % 6, v);
    }
    fake->SetNodeField("feat", [](int64_t v) { return 10.0f + static_cast<float>(v); });
    fake->AnswerFromOtherThread();
    server::ServerOptions so;
    so.host = "127.0.0.1";
    so.num_threads = 2;
    auto server = server::GraphServer::Serve(fake, config, p, so);
    ASSERT_TRUE(server.ok()) << server.status();
    map.addresses[p].push_back((*server)->address());
    servers.push_back(std::move(*server));
  }
  DistGraphOptions go;
  go.machine_id = 0;
  go.read_local_files = false;
  go.servers = map;
  go.connect_timeout_seconds = 10;
  auto g = DistGraph::Open(config, go);
  ASSERT_TRUE(g.ok()) << g.status();

  const std::vector<int64_t> seeds = {4, 0, 5};
  core::SampleOptions o;
  o.fanout = -1;
  core::SampledEdges e;
  ASSERT_TRUE((*g)->SampleNeighbors(seeds, o, &e).ok());
  EXPECT_EQ(e.src, (std::vector<int64_t>{5, 1, 1, 3, 0, 2}));
  EXPECT_EQ(e.dst, (std::vector<int64_t>{4, 4, 0, 0, 5, 5}));
  EXPECT_EQ(e.eid, (std::vector<int64_t>{8, 9, 0, 1, 10, 11}));

  float got[3];
  absl::Status pulled = (*g)->PullNodeRows("feat", std::vector<int64_t>{5, 1, 3}, reinterpret_cast<char*>(got));
  ASSERT_TRUE(pulled.ok()) << pulled;
  EXPECT_EQ(got[0], 15.0f);
  EXPECT_EQ(got[1], 11.0f);
  EXPECT_EQ(got[2], 13.0f);

  // A request the servers refuse comes back through the router naming partition and server once.
  absl::Status bad = (*g)->SampleNeighbors(std::vector<int64_t>{1, 4}, {.fanout = -5}, &e);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
  const std::string message(bad.message());
  EXPECT_TRUE(message.starts_with("partition 0: server 127.0.0.1:")) << bad;
  EXPECT_TRUE(message.ends_with("fanout must be -1 (all) or >= 0, got -5")) << bad;
  EXPECT_EQ(message.find("partition", 1), std::string::npos) << bad;
}

// Typed graphs (issue 29): mini-batches over 1 and 2 partitions, from threads and from sampler
// processes. Every sampled edge carries its relation, which matches its edge ID's type and its
// endpoints' types; a destination's edges come relation by relation, each relation sampled with
// its own fanout exactly (min(fanout, the node's in-degree in that relation): the layer's, or
// --relation-fanout's for `writes` and `paper:in:venue`); the input
// nodes carry their types, features arrive for the paper inputs only, in input order, and the
// labels are the papers' own.
// A typed graph served for a test: `d` partitioned into `parts` (reverse edges added) under `dir`,
// its servers in `cluster`; `config_path`, `config` and machine 0's graph options `go` are set.
// Fails the test (gtest assertions) on error.
struct ServedTypedGraph {
  std::string config_path;
  core::PartitionConfig config;
  testing::ServerCluster cluster;
  DistGraphOptions go;

  void Start(const testing::TempDir& dir, const partition::Dataset& d, int parts) {
    config_path = testing::PartitionTyped(dir, d, parts);
    ASSERT_FALSE(config_path.empty());
    config = *core::LoadPartitionConfig(config_path);
    cluster.Start(config_path);
    go.machine_id = 0;
    go.servers = *ParseServerList(cluster.ServerList(), parts);
    go.client.deadline_seconds = 10;
  }
};

// A typed graph's batches, one epoch of `so` over `seeds`, are the same through `cached` (its
// cache options `cached_go`) as through `plain` (no cache), by threads and by a sampler process.
void ExpectTheCacheChangesNoBatch(const ServedTypedGraph& served, DistGraph* plain, DistGraph* cached,
                                  const DistGraphOptions& cached_go, const SamplerOptions& so,
                                  const std::vector<int64_t>& seeds) {
  LoaderOptions lo;
  lo.num_threads = 1;
  lo.num_epochs = 1;
  lo.sampler_binary = FANOUT_SAMPLER_BIN;
  lo.part_config_path = served.config_path;
  auto want_loader = MakeBatchLoader(plain, served.go, so, seeds, lo);
  ASSERT_TRUE(want_loader.ok()) << want_loader.status();
  const std::vector<MiniBatch> want = Drain(**want_loader);
  ASSERT_FALSE(want.empty());
  for (int samplers : {0, 1}) {
    lo.num_samplers = samplers;
    auto l = MakeBatchLoader(cached, cached_go, so, seeds, lo);
    ASSERT_TRUE(l.ok()) << l.status();
    const std::vector<MiniBatch> got = Drain(**l);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) testing::ExpectSameBatch(got[i], want[i]);
  }
}

class TypedSamplingTest : public ::testing::TestWithParam<int> {};

TEST_P(TypedSamplingTest, BlocksKeepEveryEdgesRelationAndPerRelationFanouts) {
  const int parts = GetParam();
  testing::TempDir dir;
  ServedTypedGraph served;
  ASSERT_NO_FATAL_FAILURE(served.Start(dir, testing::MakeTypedDataset(11, 300, 200, 10), parts));
  const std::string& config_path = served.config_path;
  const core::PartitionConfig& config = served.config;
  ASSERT_EQ(config.edge_types.size(), 6u);  // three relations and their reverses
  const DistGraphOptions& go = served.go;
  auto g = DistGraph::Open(config, go);
  ASSERT_TRUE(g.ok()) << g.status();
  const core::TypeMap& ntypes = (*g)->node_types();
  const core::TypeMap etypes = *config.EdgeTypes();
  const int paper = *ntypes.TypeId("paper");
  std::vector<std::unique_ptr<core::PartitionStore>> stores;
  for (int k = 0; k < parts; ++k) stores.push_back(std::move(*core::PartitionStore::Open(config, k)));

  // The training papers, as the node task finds them: the typed mask's rows are type-wise IDs.
  auto mask = (*g)->PullWholeNodeField("paper/train_mask");
  ASSERT_TRUE(mask.ok()) << mask.status();
  std::vector<int64_t> seeds = MaskToIds(*mask);
  for (int64_t& v : seeds) v = ntypes.ToHomogeneous(paper, v);
  ASSERT_GT(seeds.size(), 100u);

  SamplerOptions so;
  so.fanouts = {2, 3};
  so.batch_size = 32;
  so.seed = 5;
  auto resolved = ResolveRelationFanouts(config, so.fanouts, {"writes=1,4", "paper:in:venue=0,-1"});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  so.relation_fanouts = *resolved;
  const int writes = *etypes.TypeId("author:writes:paper"), in = *etypes.TypeId("paper:in:venue");
  EXPECT_EQ(so.relation_fanouts[0][writes], 1);
  EXPECT_EQ(so.relation_fanouts[1][in], -1);
  EXPECT_EQ(so.relation_fanouts[1][*etypes.TypeId("paper:cites:paper")], 3);
  ASSERT_TRUE(ValidateSamplerOptions(so, **g).ok()) << ValidateSamplerOptions(so, **g);
  LoaderOptions lo;
  lo.sampler_binary = FANOUT_SAMPLER_BIN;
  lo.part_config_path = config_path;
  lo.num_threads = 2;
  auto threads = MakeBatchLoader(g->get(), go, so, seeds, lo);
  ASSERT_TRUE(threads.ok()) << threads.status();
  EXPECT_EQ((*threads)->feature_dim(), 3);
  const std::vector<MiniBatch> batches = Drain(**threads);
  ASSERT_EQ(static_cast<int64_t>(batches.size()), (*threads)->steps_per_epoch());
  int64_t typed_edges = 0;
  std::set<int> relations_seen;
  for (const MiniBatch& mb : batches) {
    SCOPED_TRACE("step " + std::to_string(mb.step));
    for (size_t l = 0; l < mb.blocks.size(); ++l) {
      const Block& b = mb.blocks[l];
      ASSERT_EQ(b.etype().size(), b.eids.size());
      std::vector<int64_t> src(b.eids.size()), dst(b.eids.size());
      ASSERT_TRUE((*g)->FindEdges({b.eids.data(), b.eids.size()}, src.data(), dst.data()).ok());
      for (int64_t j = 0; j < b.num_dst; ++j) {
        const int64_t v = b.src_nodes[j];
        std::vector<int64_t> per_relation(etypes.num_types(), 0);  // edges of each relation
        for (int64_t e = b.indptr[j]; e < b.indptr[j + 1]; ++e) {
          const int r = b.etype()[e];
          if (e > b.indptr[j]) {
            EXPECT_LE(b.etype()[e - 1], r) << "relations out of order at edge " << e;
          }
          EXPECT_EQ(etypes.ToTypeWise(b.eids[e]).first, r) << "edge " << b.eids[e];
          EXPECT_EQ(src[e], b.src_nodes[b.indices[e]]);
          EXPECT_EQ(dst[e], v);
          const auto type = *core::CanonicalEdgeType::Parse(etypes.name(r));
          EXPECT_EQ(ntypes.name(ntypes.ToTypeWise(src[e]).first), type.src);
          EXPECT_EQ(ntypes.name(ntypes.ToTypeWise(v).first), type.dst);
          ++per_relation[r];
          relations_seen.insert(r);
          ++typed_edges;
        }
        const core::PartitionStore& owner = *stores[(*g)->node_book().PartOf(v)];
        for (int r = 0; r < etypes.num_types(); ++r) {
          const int64_t degree = owner.Neighbors(v, core::EdgeDir::kIn, r).degree;
          const int64_t f = so.relation_fanouts[l][r];
          EXPECT_EQ(per_relation[r], f < 0 ? degree : std::min<int64_t>(f, degree)) << "node " << v << " relation " << r;
        }
      }
    }
    const Int64Array& inputs = mb.input_nodes();
    ASSERT_EQ(mb.input_types().size(), inputs.size());
    int64_t papers = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      EXPECT_EQ(mb.input_types()[i], ntypes.ToTypeWise(inputs[i]).first);
      papers += mb.input_types()[i] == paper ? 1 : 0;
    }
    ASSERT_EQ(mb.features.rows, papers);
    ASSERT_EQ(mb.features.cols, 3);
    const float* f = mb.features.as<float>();
    for (int64_t i = 0; i < papers; ++i) {
      EXPECT_EQ(f[3 * i + 1], 11.0f);  // MakeTypedDataset's paper rows: (p, seed, 0.5)
      EXPECT_EQ(f[3 * i + 2], 0.5f);
    }
    // Seeds are papers, the first inputs: the first feature rows are theirs; label = p % 3.
    ASSERT_EQ(mb.labels.size(), mb.seeds.size());
    for (size_t i = 0; i < mb.seeds.size(); ++i) {
      EXPECT_EQ(mb.labels[i], static_cast<int64_t>(f[3 * i]) % 3) << "seed " << mb.seeds[i];
    }
  }
  EXPECT_GT(typed_edges, 1000);
  // paper:in:venue ends at venues, which are only ever destinations in layer 0, where its
  // fanout is 0: every other relation turns up.
  EXPECT_EQ(relations_seen.size(), 5u);
  EXPECT_EQ(relations_seen.count(in), 0u);

  // The same batches from a sampler process, through the shared-memory batch file.
  lo.num_samplers = 1;
  auto processes = MakeBatchLoader(g->get(), go, so, seeds, lo);
  ASSERT_TRUE(processes.ok()) << processes.status();
  const std::vector<MiniBatch> again = Drain(**processes);
  ASSERT_EQ(again.size(), batches.size());
  for (size_t i = 0; i < batches.size(); ++i) testing::ExpectSameBatch(batches[i], again[i]);

  // The halo cache holds the featured type's remote rows (papers', keyed paper/feat) and changes
  // nothing but where they come from.
  if (parts > 1) {
    DistGraphOptions cached = go;
    cached.cache_field = "feat";
    cached.cache_max_bytes = 1 << 20;
    auto c = DistGraph::Open(config, cached);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_NE((*c)->row_cache(), nullptr);
    EXPECT_EQ((*c)->row_cache()->field(), "paper/feat");
    EXPECT_GT((*c)->row_cache()->size(), 0u);
    for (int64_t id : (*c)->row_cache()->ids()) EXPECT_EQ(ntypes.ToTypeWise(id).first, paper) << id;
    lo.num_samplers = 0;
    auto l = MakeBatchLoader(c->get(), cached, so, seeds, lo);
    ASSERT_TRUE(l.ok()) << l.status();
    const std::vector<MiniBatch> via_cache = Drain(**l);
    ASSERT_EQ(via_cache.size(), batches.size());
    for (size_t i = 0; i < batches.size(); ++i) testing::ExpectSameBatch(batches[i], via_cache[i]);
    EXPECT_GT((*c)->cache_hits(), 0);
  }
}

// Edge fields on typed blocks (issue 67): a field NAME is each relation's own SRC:REL:DST/NAME,
// pulled for that relation's edges wherever they sit in the batch, from threads and from sampler
// processes alike; a relation without it weighs its edges 1 and gives them zero features. Widths
// that differ between relations, or a name no relation has, are refused by name.
TEST(TypedEdgeFieldsTest, EachRelationsEdgesCarryItsOwnField) {
  testing::TempDir dir;
  partition::Dataset d = testing::MakeTypedDataset(11, 300, 200, 10);
  ASSERT_EQ(d.edge_types[0].ToString(), "author:writes:paper");
  ASSERT_EQ(d.edge_types[1].ToString(), "paper:cites:paper");
  auto rows_of = [&](int r) { return d.edge_type_offsets[r + 1] - d.edge_type_offsets[r]; };
  for (int r : {0, 1}) {  // weights on writes and cites; none on paper:in:venue or the reverses
    std::vector<float> w(rows_of(r));
    for (size_t i = 0; i < w.size(); ++i) w[i] = 1.0f + r + 0.25f * static_cast<float>(i % 8);
    d.edge_fields.push_back({.name = "w",
                             .data = core::NpyArray::Adopt(std::move(w), {rows_of(r)}),
                             .edge_type = d.edge_types[r].ToString()});
  }
  std::vector<float> ef(2 * rows_of(0));  // two numbers per writes edge
  for (size_t i = 0; i < ef.size(); ++i) ef[i] = 0.5f * static_cast<float>(i);
  d.edge_fields.push_back({.name = "ef",
                           .data = core::NpyArray::Adopt(std::move(ef), {rows_of(0), 2}),
                           .edge_type = d.edge_types[0].ToString()});
  d.edge_fields.push_back(
      {.name = "bad",
       .data = core::NpyArray::Adopt(std::vector<float>(rows_of(0)), {rows_of(0)}),
       .edge_type = d.edge_types[0].ToString()});
  d.edge_fields.push_back(
      {.name = "bad",
       .data = core::NpyArray::Adopt(std::vector<float>(2 * rows_of(1)), {rows_of(1), 2}),
       .edge_type = d.edge_types[1].ToString()});
  ServedTypedGraph served;
  ASSERT_NO_FATAL_FAILURE(served.Start(dir, d, 2));
  const core::PartitionConfig& config = served.config;
  const DistGraphOptions& go = served.go;
  auto g = DistGraph::Open(config, go);
  ASSERT_TRUE(g.ok()) << g.status();
  const core::TypeMap& ntypes = (*g)->node_types();
  const core::TypeMap etypes = *config.EdgeTypes();
  const core::RangePartitionBook edges = *config.EdgeBook();
  std::vector<std::unique_ptr<core::PartitionStore>> stores;
  for (int k = 0; k < 2; ++k) stores.push_back(std::move(*core::PartitionStore::Open(config, k)));
  const int paper = *ntypes.TypeId("paper");
  std::vector<int64_t> seeds;
  for (int64_t p = 0; p < ntypes.count(paper); p += 3)
    seeds.push_back(ntypes.ToHomogeneous(paper, p));

  SamplerOptions so;
  so.fanouts = {3, 3};
  so.batch_size = 32;
  so.seed = 5;
  so.edge.weight_field = "w";
  so.edge.feature_field = "ef";
  ASSERT_TRUE(ValidateSamplerOptions(so, **g).ok()) << ValidateSamplerOptions(so, **g);
  LoaderOptions lo;
  lo.sampler_binary = FANOUT_SAMPLER_BIN;
  lo.part_config_path = served.config_path;
  lo.num_threads = 2;
  std::vector<std::vector<MiniBatch>> runs;
  for (int samplers : {0, 1}) {
    lo.num_samplers = samplers;
    auto loader = MakeBatchLoader(g->get(), go, so, seeds, lo);
    ASSERT_TRUE(loader.ok()) << loader.status();
    runs.push_back(Drain(**loader));
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  std::map<std::string, int64_t> checked;  // edges checked per relation
  for (size_t i = 0; i < runs[0].size(); ++i) {
    testing::ExpectSameBatch(runs[0][i], runs[1][i]);
    for (const Block& b : runs[0][i].blocks) {
      const FloatArray& weight = b.edge_weight();
      const sampler::Field* feat = b.fields.Find(sampler::kEdgeFeat);
      ASSERT_NE(feat, nullptr);
      ASSERT_TRUE(feat->matrix);
      ASSERT_EQ(feat->width, 2);
      const FloatArray& f = std::get<FloatArray>(feat->values);
      ASSERT_EQ(weight.size(), b.eids.size());
      ASSERT_EQ(f.size(), 2 * b.eids.size());
      for (size_t e = 0; e < b.eids.size(); ++e) {
        const int64_t eid = b.eids[e];
        const std::string relation = etypes.name(b.etype()[e]);
        const core::PartitionStore& owner = *stores[edges.PartOf(eid)];
        std::string raw;
        float want_w = 1.0f;
        if (owner.GatherEdgeRows(relation + "/w", {&eid, 1}, &raw).ok())
          std::memcpy(&want_w, raw.data(), 4);
        EXPECT_EQ(weight[e], want_w) << relation << " edge " << eid;
        float want_f[2] = {0.0f, 0.0f};
        raw.clear();
        if (owner.GatherEdgeRows(relation + "/ef", {&eid, 1}, &raw).ok())
          std::memcpy(want_f, raw.data(), 8);
        EXPECT_EQ(f[2 * e], want_f[0]) << relation << " edge " << eid;
        EXPECT_EQ(f[2 * e + 1], want_f[1]) << relation << " edge " << eid;
        ++checked[relation];
      }
    }
  }
  EXPECT_GT(checked["author:writes:paper"], 100);  // weights and features of their own
  EXPECT_GT(checked["paper:cites:paper"], 100);    // weights, no features
  EXPECT_GT(checked["paper:rev_writes:author"] + checked["paper:rev_cites:paper"], 100);  // neither

  so.edge.feature_field = "bad";
  absl::Status s = ValidateSamplerOptions(so, **g);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(
                "'author:writes:paper/bad' (1 values per edge) and 'paper:cites:paper/bad' (2)"),
            std::string::npos)
      << s;
  so.edge.feature_field = "";
  so.edge.weight_field = "nowhere";
  s = ValidateSamplerOptions(so, **g);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("no edge type of graph"), std::string::npos) << s;
  EXPECT_NE(s.message().find("author:writes:paper/w"), std::string::npos) << s;
}

// A typed graph whose types have features of their own (IGBH's four): the halo cache holds every
// featured type's remote rows within one budget (authors' and papers' here; venues have none),
// and changes nothing but where they come from, in threads and in sampler processes that map it.
TEST(TypedHaloCacheTest, HoldsEveryFeaturedTypeOfTheSameWidth) {
  testing::TempDir dir;
  partition::Dataset d = testing::MakeTypedDataset(11, 300, 200, 10);
  std::vector<float> author_feat(200 * 3);
  for (int64_t a = 0; a < 200; ++a) author_feat[3 * a] = static_cast<float>(a), author_feat[3 * a + 1] = 22.0f;
  d.node_fields.push_back({"feat", core::NpyArray::Adopt(std::move(author_feat), {200, 3}), "author"});
  ServedTypedGraph served;
  ASSERT_NO_FATAL_FAILURE(served.Start(dir, d, 2));
  const core::PartitionConfig& config = served.config;
  const DistGraphOptions& go = served.go;
  DistGraphOptions cached = go;
  cached.cache_field = "feat";
  cached.cache_max_bytes = 1 << 20;
  cached.cache_in_shared_memory = true;
  auto g = DistGraph::Open(config, go);
  auto c = DistGraph::Open(config, cached);
  ASSERT_TRUE(g.ok() && c.ok()) << g.status() << c.status();
  const core::TypeMap& ntypes = (*g)->node_types();
  const RowCache* cache = (*c)->row_cache();
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->fields(), (std::vector<std::string>{"paper/feat", "author/feat"}));
  std::set<std::string> types;
  for (int64_t id : cache->ids()) types.insert(ntypes.name(ntypes.ToTypeWise(id).first));
  EXPECT_EQ(types, (std::set<std::string>{"author", "paper"}));
  // Each cached row is its type's: authors' (a, 22, 0), papers' (p, 11, 0.5).
  const int author = *ntypes.TypeId("author");
  for (size_t i = 0; i < cache->ids().size(); ++i) {
    const float* row = reinterpret_cast<const float*>(cache->row(static_cast<int64_t>(i)));
    EXPECT_EQ(row[1], ntypes.ToTypeWise(cache->ids()[i]).first == author ? 22.0f : 11.0f) << cache->ids()[i];
  }

  auto mask = (*g)->PullWholeNodeField("paper/train_mask");
  ASSERT_TRUE(mask.ok()) << mask.status();
  std::vector<int64_t> seeds = MaskToIds(*mask);
  for (int64_t& v : seeds) v = ntypes.ToHomogeneous(*ntypes.TypeId("paper"), v);
  SamplerOptions so;
  so.fanouts = {3, 3};
  so.batch_size = 32;
  so.seed = 5;
  so.feature_field = "feat";
  so.label_field = "label";
  ASSERT_NO_FATAL_FAILURE(ExpectTheCacheChangesNoBatch(served, g->get(), c->get(), cached, so, seeds));
  EXPECT_GT((*c)->cache_hits(), 0);
  // What a process logs at the end: its hits of its remote rows, and the cache's fields.
  const std::string report = (*c)->HaloCacheReport();
  EXPECT_NE(report.find(base::StrCat("halo cache: ", (*c)->cache_hits(), " of ",
                               (*c)->cache_hits() + (*c)->cache_misses(), " remote rows (")),
            std::string::npos) << report;
  EXPECT_NE(report.find("rows of 'paper/feat, author/feat'"), std::string::npos) << report;
  EXPECT_EQ((*g)->HaloCacheReport(), "");  // no cache
}

// --feature-cache-rows presample on a typed graph (setup H's case): the presampled counts rank
// the remote rows of every featured type of the cached width, and only those; the epoch presampled
// then asks the servers for no row, by threads or by a sampler process mapping the cache.
TEST(TypedHaloCacheTest, PresampledCountsRankEveryCachedTypesRemoteRows) {
  testing::TempDir dir;
  partition::Dataset d = testing::MakeTypedDataset(11, 300, 200, 10);
  std::vector<float> author_feat(200 * 3, 22.0f);
  d.node_fields.push_back({"feat", core::NpyArray::Adopt(std::move(author_feat), {200, 3}), "author"});
  ServedTypedGraph served;
  ASSERT_NO_FATAL_FAILURE(served.Start(dir, d, 2));
  DistGraphOptions cached = served.go;
  cached.cache_field = "feat";
  cached.cache_max_bytes = 1 << 20;
  cached.cache_in_shared_memory = true;
  cached.cache_from_counts = true;
  auto g = DistGraph::Open(served.config, served.go);
  auto c = DistGraph::Open(served.config, cached);
  ASSERT_TRUE(g.ok() && c.ok()) << g.status() << c.status();
  const core::TypeMap& ntypes = (*g)->node_types();
  auto mask = (*g)->PullWholeNodeField("paper/train_mask");
  ASSERT_TRUE(mask.ok()) << mask.status();
  std::vector<int64_t> seeds;
  for (int64_t v : MaskToIds(*mask)) {
    const int64_t id = ntypes.ToHomogeneous(*ntypes.TypeId("paper"), v);
    if ((*g)->node_book().PartOf(id) == served.go.machine_id) seeds.push_back(id);
  }
  ASSERT_FALSE(seeds.empty());
  SamplerOptions so;
  so.fanouts = {3, 3};
  so.batch_size = 16;
  so.seed = 5;
  auto counts = PresampleSeeds(c->get(), so, seeds, StepsPerEpoch(so, static_cast<int64_t>(seeds.size())));
  ASSERT_TRUE(counts.ok()) << counts.status();
  ASSERT_TRUE((*c)->BuildCacheFromCounts(*counts).ok());
  const RowCache* cache = (*c)->row_cache();
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->fields(), (std::vector<std::string>{"paper/feat", "author/feat"}));
  int64_t taken_remote = 0;
  for (int64_t v = 0; v < (*c)->num_nodes(); ++v) {
    const std::string type = ntypes.name(ntypes.ToTypeWise(v).first);
    const bool remote = (*g)->node_book().PartOf(v) != served.go.machine_id;
    if (cache->Find(v) >= 0) {
      EXPECT_TRUE(remote && (type == "paper" || type == "author")) << "node " << v << " of type " << type;
    } else {
      EXPECT_FALSE(remote && (*counts)[v] > 0 && (type == "paper" || type == "author"))
          << "remote " << type << " " << v << " taken " << (*counts)[v] << " times is not cached";
    }
    taken_remote += remote && (*counts)[v] > 0 && type != "venue" ? 1 : 0;
  }
  EXPECT_GT(taken_remote, 0);
  so.feature_field = "feat";
  so.label_field = "label";
  ASSERT_NO_FATAL_FAILURE(ExpectTheCacheChangesNoBatch(served, g->get(), c->get(), cached, so, seeds));
  EXPECT_GT((*c)->cache_hits(), 0);
  EXPECT_EQ((*c)->cache_misses(), 0) << "the epoch presampled fetched remote rows";
  EXPECT_NE((*c)->HaloCacheReport().find("presampled row cache: "), std::string::npos) << (*c)->HaloCacheReport();
}

INSTANTIATE_TEST_SUITE_P(Parts, TypedSamplingTest, ::testing::Values(1, 2),
                         [](const auto& info) { return std::to_string(info.param) + "_parts"; });

}  // namespace
}  // namespace fanout::sampler

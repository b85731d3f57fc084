// A typed dataset (papers, authors, venues) partitioned and served by real graph servers in this
// process, with the job's graph and server fields over it: what the typed trainer tests and the
// GPU tests build their batches and models from.
#ifndef FANOUT_TESTS_TRAINER_TYPED_JOB_H_
#define FANOUT_TESTS_TRAINER_TYPED_JOB_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/partition_config.h"
#include "gtest/gtest.h"
#include "partition/dataset.h"
#include "sampler/dist_graph.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/server_fields.h"
#include "tests/testing/server_cluster.h"
#include "tests/testing/testing.h"
#include "trainer/models.h"

namespace fanout::trainer {

struct TypedJob {
  fanout::testing::TempDir dir;
  partition::Dataset d;
  std::string config_path;
  core::PartitionConfig config;
  fanout::testing::ServerCluster cluster;
  std::unique_ptr<sampler::DistGraph> graph;
  std::unique_ptr<sampler::ServerFields> fields;

  // Partitions the dataset into `parts`, serves them and opens the graph as machine 0
  // (gtest assertions: wrap in ASSERT_NO_FATAL_FAILURE).
  void Start(int parts, bool allow_push = true) {
    d = fanout::testing::MakeTypedDataset(4, 200, 150, 8);
    config_path = fanout::testing::PartitionTyped(dir, d, parts);
    ASSERT_FALSE(config_path.empty());
    config = *core::LoadPartitionConfig(config_path);
    server::ServerOptions so;
    so.allow_push = allow_push;
    cluster.Start(config_path, so);
    sampler::DistGraphOptions go;
    go.machine_id = 0;
    go.servers = *sampler::ParseServerList(cluster.ServerList(), parts);
    go.client.deadline_seconds = 10;
    auto g = sampler::DistGraph::Open(config, go);
    ASSERT_TRUE(g.ok()) << g.status();
    graph = std::move(*g);
    fields = std::move(*sampler::ServerFields::Make(config, go.servers, go.client));
  }
  // An R-GCN of 2 layers, 3 classes, no dropout, over this graph's relations.
  ModelOptions Rgcn(int64_t in_dim, int64_t hidden) const {
    ModelOptions mo;
    mo.model = ModelKind::kRgcn;
    mo.in_dim = in_dim;
    mo.hidden = hidden;
    mo.num_classes = 3;
    mo.num_relations = static_cast<int64_t>(config.edge_types.size());
    mo.dropout = 0;
    return mo;
  }
  // The first batch of `seeds` papers of partition 0 with `fanouts`.
  void PaperBatch(int64_t seeds, std::vector<int64_t> fanouts, sampler::MiniBatch* out) {
    const auto& types = graph->node_types();
    sampler::SamplerOptions so;
    so.fanouts = std::move(fanouts);
    so.batch_size = seeds;
    const int64_t p0 = types.Range(*types.TypeId("paper"), 0).first;
    std::vector<int64_t> ids;
    for (int64_t v = p0; v < p0 + seeds; ++v) ids.push_back(v);
    sampler::MiniBatchSampler sampler(graph.get(), so, ids);
    auto mb = sampler.Sample(0, 0);
    ASSERT_TRUE(mb.ok()) << mb.status();
    *out = std::move(*mb);
  }
  // Every row of `type`'s embedding table, by ID.
  std::map<int64_t, std::vector<float>> Table(int type, int64_t dim) {
    const auto& types = graph->node_types();
    std::vector<int64_t> ids;
    for (int p = 0; p < config.num_parts; ++p) {
      for (int64_t v = types.Range(type, p).first; v < types.Range(type, p).second; ++v) ids.push_back(v);
    }
    std::vector<float> rows(ids.size() * dim);
    core::FieldSchema f{.name = "embed", .dtype = core::DType::kFloat32, .row_shape = {dim},
                        .node_type = types.name(type)};
    absl::Status s = fields->Pull(f, ids, reinterpret_cast<char*>(rows.data()));
    EXPECT_TRUE(s.ok()) << s;
    std::map<int64_t, std::vector<float>> out;
    for (size_t i = 0; i < ids.size(); ++i) out[ids[i]].assign(rows.begin() + i * dim, rows.begin() + (i + 1) * dim);
    return out;
  }
};

}  // namespace fanout::trainer

#endif  // FANOUT_TESTS_TRAINER_TYPED_JOB_H_

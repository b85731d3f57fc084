// sampler::JobGraph, the one handle a job process (the Python data plane's fanout._native.Graph)
// has on the graph, against real graph servers on loopback: reads, created fields and their
// writes and sparse steps, the caching graphs sampler processes map, and the caller's mistakes
// as INVALID_ARGUMENT naming what is wrong.
#include "sampler/job_graph.h"

#include <cstring>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "base/wire_counters.h"
#include "rpc/graph_client.h"
#include "server/graph_server.h"
#include "tests/testing/server_cluster.h"
#include "tests/testing/testing.h"

namespace fanout::sampler {
namespace {

struct Cluster {
  testing::TempDir dir;
  std::string config_path;
  testing::ServerCluster servers;

  void Start() {
    config_path =
        testing::PartitionRandom(dir, {.num_nodes = 600, .num_edges = 3000, .feat_dim = 4}, 2);
    ASSERT_FALSE(::testing::Test::HasFailure());
    servers.Start(config_path);
  }
  // Another server of partition `part` on 127.0.0.1 (a replica, as fanout-launch --replicas starts).
  std::unique_ptr<server::GraphServer> StartReplica(int part) const {
    auto store = core::PartitionStore::Open(servers.config, part);
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return nullptr;
    server::ServerOptions so;
    so.host = "127.0.0.1";
    auto replica = server::GraphServer::Start(std::move(*store), so);
    EXPECT_TRUE(replica.ok()) << replica.status();
    return replica.ok() ? std::move(*replica) : nullptr;
  }
  JobGraphOptions Options(int machine) const {
    return {.part_config = config_path,
            .machine_id = machine,
            .servers = servers.ServerList(),
            .deadline_seconds = 10};
  }
};

std::vector<float> Pull(const JobGraph& g, const std::string& field,
                        const std::vector<int64_t>& ids, int width) {
  std::vector<float> out(ids.size() * static_cast<size_t>(width), -1);
  const absl::Status s = g.PullNodeRows(field, ids, reinterpret_cast<char*>(out.data()));
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(JobGraphTest, ReadsCreatesWritesAndStepsTheGraphsRows) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  auto a = JobGraph::Open(c.Options(0));
  auto b = JobGraph::Open(c.Options(1));
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  const int64_t n = (*a)->config().num_nodes;
  std::vector<int64_t> ids = {0, 1, n / 2, n - 1};  // both partitions

  // The partition's own rows, as the plain graph reads them.
  auto plain = DistGraph::Open((*a)->config(), (*a)->options());
  ASSERT_TRUE(plain.ok()) << plain.status();
  std::vector<float> want(ids.size() * 4);
  ASSERT_TRUE((*plain)->PullNodeRows("feat", ids, reinterpret_cast<char*>(want.data())).ok());
  EXPECT_EQ(Pull(**a, "feat", ids, 4), want);
  EXPECT_FALSE((*a)->IsCreated("feat"));

  // A created field: made once on every server, seen by both processes.
  const core::FieldSchema h{.name = "h", .dtype = core::DType::kFloat32, .row_shape = {2}};
  auto made = (*a)->CreateNodeField(h);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_TRUE(*made);
  auto again = (*b)->CreateNodeField(h);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(*again);
  EXPECT_TRUE((*a)->IsCreated("h"));
  EXPECT_EQ((*a)->NodeSchema("h")->row_elems(), 2);
  EXPECT_EQ(Pull(**b, "h", ids, 2), std::vector<float>(8, 0.f));
  std::vector<float> rows = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(
      (*a)->PushNodeRows("h", ids, reinterpret_cast<const char*>(rows.data()), 32, false).ok());
  EXPECT_EQ(Pull(**b, "h", ids, 2), rows);
  ASSERT_TRUE(
      (*b)->PushNodeRows("h", ids, reinterpret_cast<const char*>(rows.data()), 32, true).ok());
  std::vector<float> twice = rows;
  for (float& x : twice) x *= 2;
  EXPECT_EQ(Pull(**a, "h", ids, 2), twice);

  // One Adagrad step on a created table: row -= lr * g / (sqrt(g^2) + eps) from zeros.
  const core::FieldSchema emb{.name = "emb", .dtype = core::DType::kFloat32, .row_shape = {2}};
  const core::FieldSchema state{
      .name = "emb_state",
      .dtype = core::DType::kFloat32,
      .row_shape = {core::SparseStateWidth(core::SparseOptimizerKind::kAdagrad, 2)}};
  ASSERT_TRUE((*a)->CreateNodeField(emb).ok());
  ASSERT_TRUE((*a)->CreateNodeField(state).ok());
  const core::SparseOptimizerOptions adagrad{
      .kind = core::SparseOptimizerKind::kAdagrad, .lr = 0.5, .eps = 1e-10};
  std::vector<float> grads = {2, -4, 1, 1, -3, 0.5, 8, -8};
  ASSERT_TRUE(
      (*a)->SparseUpdate("emb", "emb_state", ids, grads.data(), grads.size(), adagrad).ok());
  const std::vector<float> stepped = Pull(**a, "emb", ids, 2);
  for (size_t i = 0; i < grads.size(); ++i)
    EXPECT_NEAR(stepped[i], grads[i] > 0 ? -0.5f : 0.5f, 1e-5) << i;

  // The caching graph a sampler process maps: one per (field, size), kept.
  DistGraphOptions go = (*a)->options();
  go.cache_field = "feat";
  go.cache_max_bytes = 1 << 20;
  auto cached = (*a)->CachingGraph(go);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_EQ(*(*a)->CachingGraph(go), *cached);
  EXPECT_GE((*cached)->shared_cache_fd(), 0);
}

// A replica of partition 1 (fanout-launch --replicas): created fields and writes reach it, and
// with partition 1's own server gone its rows, stored and created, are still read, from it.
TEST(JobGraphTest, AReplicaGetsEveryWriteAndServesThePartitionWhenItsServerIsGone) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::unique_ptr<server::GraphServer> replica = c.StartReplica(1);
  ASSERT_NE(replica, nullptr);
  JobGraphOptions o = c.Options(0);
  o.servers += ",1r=" + replica->address();
  auto g = JobGraph::Open(o);
  ASSERT_TRUE(g.ok()) << g.status();
  const int64_t n = (*g)->config().num_nodes;
  const std::vector<int64_t> ids = {n - 3, n - 2, n - 1};  // partition 1's
  const std::vector<float> feat = Pull(**g, "feat", ids, 4);

  const core::FieldSchema h{.name = "h", .dtype = core::DType::kFloat32, .row_shape = {2}};
  ASSERT_TRUE((*g)->CreateNodeField(h).ok());
  const std::vector<float> rows = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE((*g)->PushNodeRows("h", ids, reinterpret_cast<const char*>(rows.data()), 24, false).ok());
  auto direct = rpc::GraphClient::Connect(replica->address())->PullNodeData("h", ids);
  ASSERT_TRUE(direct.ok()) << direct.status();
  ASSERT_EQ(direct->data.size(), rows.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(direct->data.data(), rows.data(), direct->data.size()), 0);

  c.servers.Stop(1);
  EXPECT_EQ(Pull(**g, "feat", ids, 4), feat);
  EXPECT_EQ(Pull(**g, "h", ids, 2), rows);
}

// A write's bytes are the wire's only where they cross a link: machine 0's process writing
// partition 1's rows to its server (machine 1) and to a replica on machine 0's own host counts
// the first call alone, as it would with no replica; its own partition's rows count nothing.
TEST(JobGraphTest, WritesToAServerOnThisMachineAreNotWireBytes) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  const std::unique_ptr<server::GraphServer> replica = c.StartReplica(1);
  ASSERT_NE(replica, nullptr);
  const int64_t n = c.servers.config.num_nodes;
  const core::FieldSchema h{.name = "h", .dtype = core::DType::kFloat32, .row_shape = {2}};
  const std::vector<float> rows = {1, 2, 3, 4, 5, 6};
  // row_writes bytes sent by a machine-0 writer pushing `ids` over the servers `list`.
  auto written = [&](const std::string& list, const std::vector<int64_t>& ids) -> int64_t {
    auto wire = base::WireCounters::Create();
    EXPECT_TRUE(wire.ok()) << wire.status();
    rpc::ClientOptions o;
    o.deadline_seconds = 10;
    o.wire = *wire;
    auto servers = base::ParseServerList(list, 2);
    EXPECT_TRUE(servers.ok()) << servers.status();
    auto fields = ServerFields::Make(c.servers.config, *servers, o, /*map_shared=*/false, /*machine_id=*/0);
    EXPECT_TRUE(fields.ok()) << fields.status();
    EXPECT_TRUE((*fields)->Create(h).ok());
    const int64_t before = (*wire)->Read().sent[static_cast<int>(base::WireKind::kRowWrites)];
    EXPECT_TRUE((*fields)->Push(h, ids, reinterpret_cast<const char*>(rows.data()), core::PushOp::kAssign).ok());
    return (*wire)->Read().sent[static_cast<int>(base::WireKind::kRowWrites)] - before;
  };
  const std::vector<int64_t> far = {n - 3, n - 2, n - 1}, own = {0, 1, 2};
  const std::string with_replica = c.servers.ServerList() + ",1r=" + replica->address();
  const int64_t alone = written(c.servers.ServerList(), far);
  EXPECT_GT(alone, 0);
  EXPECT_EQ(written(with_replica, far), alone);
  EXPECT_EQ(written(with_replica, own), 0);
  // Both copies got the write.
  for (const std::string& address : {c.servers.servers[1]->address(), replica->address()}) {
    auto direct = rpc::GraphClient::Connect(address)->PullNodeData("h", far);
    ASSERT_TRUE(direct.ok()) << direct.status();
    ASSERT_EQ(direct->data.size(), rows.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(direct->data.data(), rows.data(), direct->data.size()), 0) << address;
  }
}

TEST(JobGraphTest, TheCallersMistakesAreInvalidArgumentsNamingWhatIsWrong) {
  Cluster c;
  ASSERT_NO_FATAL_FAILURE(c.Start());
  auto far = JobGraph::Open(c.Options(2));
  ASSERT_EQ(far.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(far.status().message().find("machine_id 2 is not a partition of"), std::string::npos)
      << far.status();

  auto g = JobGraph::Open(c.Options(0));
  ASSERT_TRUE(g.ok()) << g.status();
  auto clash =
      (*g)->CreateNodeField({.name = "feat", .dtype = core::DType::kFloat32, .row_shape = {4}});
  EXPECT_EQ(clash.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(clash.status().message().find("'feat' is already a node field"), std::string::npos)
      << clash.status();
  auto typed = (*g)->CreateNodeField(
      {.name = "x", .dtype = core::DType::kFloat32, .row_shape = {1}, .node_type = "paper"});
  EXPECT_EQ(typed.status().code(), absl::StatusCode::kInvalidArgument) << typed.status();

  ASSERT_TRUE(
      (*g)->CreateNodeField({.name = "h", .dtype = core::DType::kFloat32, .row_shape = {2}}).ok());
  const std::vector<int64_t> ids = {0, 1};
  const std::vector<float> rows(4, 1.f);
  const absl::Status short_rows =
      (*g)->PushNodeRows("h", ids, reinterpret_cast<const char*>(rows.data()), 12, false);
  EXPECT_EQ(short_rows.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(short_rows.message().find("12 bytes for 2 IDs of 8 bytes each"), std::string::npos)
      << short_rows;

  const core::SparseOptimizerOptions adam;
  const absl::Status not_created =
      (*g)->SparseUpdate("feat", "h", ids, rows.data(), rows.size(), adam);
  EXPECT_EQ(not_created.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(not_created.message().find("must be fields this process created"), std::string::npos)
      << not_created;
  ASSERT_TRUE(
      (*g)->CreateNodeField({.name = "s", .dtype = core::DType::kFloat32, .row_shape = {3}}).ok());
  const absl::Status few = (*g)->SparseUpdate("h", "s", ids, rows.data(), 3, adam);
  EXPECT_EQ(few.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(few.message().find("gradients must be float32 [2, 2]"), std::string::npos) << few;
  const absl::Status narrow = (*g)->SparseUpdate("h", "s", ids, rows.data(), rows.size(), adam);
  EXPECT_EQ(narrow.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(narrow.message().find("state field 's' has 3 values per row; adam keeps 5"),
            std::string::npos)
      << narrow;
}

}  // namespace
}  // namespace fanout::sampler

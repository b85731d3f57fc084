// Real graph servers on 127.0.0.1:0, queried over gRPC with the C++ client.
#include "server/graph_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "base/check.h"
#include "base/spawn.h"
#include "core/feature_codec.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "core/sampling.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "partition/partitioner.h"
#include "partition/readers.h"
#include "rpc/graph_client.h"
#include "rpc/reachability.h"
#include "rpc/remote_graph_source.h"
#include "tests/testing/fake_graph_source.h"
#include "tests/testing/testing.h"

extern char** environ;

namespace fanout::server {
namespace {

using rpc::GraphClient;
using rpc::Rows;

namespace fs = std::filesystem;
using core::EdgeDir;
using testing::TempDir;

// K servers over a partitioned dataset, one client each.
struct Cluster {
  core::PartitionConfig config;
  std::vector<std::unique_ptr<GraphServer>> servers;
  std::vector<std::unique_ptr<GraphClient>> clients;
  std::vector<std::unique_ptr<core::PartitionStore>> local;  // in-process twins, for comparison

  void Start(const std::string& config_path, ServerOptions o = {}) {
    auto cfg = core::LoadPartitionConfig(config_path);
    ASSERT_TRUE(cfg.ok()) << cfg.status();
    config = *cfg;
    o.host = "127.0.0.1";
    o.num_threads = 2;
    for (int k = 0; k < config.num_parts; ++k) {
      auto store = core::PartitionStore::Open(config, k);
      ASSERT_TRUE(store.ok()) << store.status();
      auto srv = GraphServer::Start(std::move(*store), o);
      ASSERT_TRUE(srv.ok()) << srv.status();
      ASSERT_GT((*srv)->port(), 0);
      clients.push_back(GraphClient::Connect((*srv)->address(), {.deadline_seconds = 20}));
      servers.push_back(std::move(*srv));
      auto twin = core::PartitionStore::Open(config, k);
      ASSERT_TRUE(twin.ok());
      local.push_back(std::move(*twin));
    }
  }
};

std::vector<int64_t> Range(int64_t a, int64_t b) {
  std::vector<int64_t> v;
  for (int64_t i = a; i < b; ++i) v.push_back(i);
  return v;
}

// Checks the served answers of every partition against the source dataset `d`.
void ExpectServedGraphMatches(const partition::Dataset& d, Cluster& c, const std::string& weight_field) {
  for (int k = 0; k < c.config.num_parts; ++k) {
    GraphClient& cl = *c.clients[k];
    auto md = cl.GetMetadata();
    ASSERT_TRUE(md.ok()) << md.status();
    EXPECT_EQ(md->part_id(), k);
    EXPECT_EQ(md->num_nodes(), d.num_nodes);
    ASSERT_EQ(md->node_ranges_size(), c.config.num_parts);
    EXPECT_EQ(md->node_ranges(k).start(), c.config.node_bounds[k]);
    EXPECT_EQ(md->node_ranges(k).end(), c.config.node_bounds[k + 1]);
    const int64_t nb = c.config.node_bounds[k], ne = c.config.node_bounds[k + 1];
    std::vector<int64_t> ids = Range(nb, ne);
    // Features equal the source rows, through the original-ID map.
    auto orig = core::NpyArray::Map(c.config.PartPath(k, core::PartFiles::kOrigNids));
    ASSERT_TRUE(orig.ok());
    for (const char* field : {"feat", "label"}) {
      auto rows = cl.PullNodeData(field, ids);
      ASSERT_TRUE(rows.ok()) << rows.status();
      const core::NpyArray& src = d.FindNodeField(field)->data;
      ASSERT_EQ(rows->shape[0], ne - nb);
      ASSERT_EQ(rows->data.size(), (ne - nb) * src.row_bytes());
      for (int64_t i = 0; i < ne - nb; ++i) {
        ASSERT_EQ(0, std::memcmp(rows->data.data() + i * src.row_bytes(), src.row(orig->data_as<int64_t>()[i]),
                                 src.row_bytes()))
            << field << " of node " << nb + i;
      }
    }
    // Degrees and find-edges equal the stored graph (proved against the source by the
    // partitioner tests) read in-process.
    for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
      auto deg = cl.GetDegrees(ids, dir);
      ASSERT_TRUE(deg.ok()) << deg.status();
      std::vector<int64_t> want(ids.size());
      ASSERT_TRUE(c.local[k]->Degrees(ids, dir, want.data()).ok());
      EXPECT_EQ(*deg, want);
    }
    std::vector<int64_t> eids = Range(c.config.edge_bounds[k], c.config.edge_bounds[k + 1]);
    if (!eids.empty()) {
      auto fe = cl.FindEdges(eids);
      ASSERT_TRUE(fe.ok()) << fe.status();
      auto oe = core::NpyArray::Map(c.config.PartPath(k, core::PartFiles::kOrigEids));
      const int64_t* e = d.edges.data_as<int64_t>();
      const int64_t E = d.num_edges();
      for (size_t i = 0; i < eids.size(); ++i) {
        int64_t o = oe->data_as<int64_t>()[i];
        int64_t row = o < E ? o : o - E;
        int64_t u = o < E ? e[2 * row] : e[2 * row + 1], w = o < E ? e[2 * row + 1] : e[2 * row];
        // Back to input IDs through the owners' orig_nids.
        auto to_input = [&](int64_t gid) {
          int p = c.local[k]->node_book().PartOf(gid);
          auto m = core::NpyArray::Map(c.config.PartPath(p, core::PartFiles::kOrigNids));
          return m->data_as<int64_t>()[gid - c.config.node_bounds[p]];
        };
        if (i % 97 == 0) {  // spot checks; the in-process comparison covers the rest
          ASSERT_EQ(to_input(fe->first[i]), u);
          ASSERT_EQ(to_input(fe->second[i]), w);
        }
      }
      std::vector<int64_t> s(eids.size()), t(eids.size());
      ASSERT_TRUE(c.local[k]->FindEdges(eids, s.data(), t.data()).ok());
      EXPECT_EQ(fe->first, s);
      EXPECT_EQ(fe->second, t);
    }
    // Sampling through the server gives exactly the in-process sample for the same seed.
    std::vector<core::SampleOptions> cases = {
        {.fanout = 5, .seed = 1}, {.fanout = -1, .seed = 2}, {.fanout = 3, .replace = true, .seed = 3},
        {.fanout = 4, .dir = EdgeDir::kOut, .seed = 4}};
    if (!weight_field.empty()) cases.push_back({.fanout = 2, .weight_field = weight_field, .seed = 5});
    for (const auto& o : cases) {
      auto got = cl.SampleNeighbors(ids, o);
      ASSERT_TRUE(got.ok()) << got.status();
      core::SampledEdges want;
      ASSERT_TRUE(core::SampleNeighbors(*c.local[k], ids, o, &want).ok());
      EXPECT_EQ(got->eid, want.eid);
      EXPECT_EQ(got->src, want.src);
      EXPECT_EQ(got->dst, want.dst);
    }
  }
}

TEST(GraphServerTest, ServesAGeneratedGraphExactly) {
  TempDir dir;
  partition::Dataset d = testing::MakeRandomDataset({.num_nodes = 700, .num_edges = 5000, .edge_field = false});
  std::vector<double> w(d.num_edges());
  for (int64_t i = 0; i < d.num_edges(); ++i) w[i] = 0.5 + i % 3;
  d.edge_fields.push_back({"w", core::NpyArray::Adopt(std::move(w), {d.num_edges()})});
  partition::PartitionOptions o;
  o.out_dir = dir.Sub("parts");
  o.num_parts = 3;
  o.add_reverse_edges = true;
  o.quiet = true;
  auto s = partition::PartitionDataset(d, o);
  ASSERT_TRUE(s.ok()) << s.status();
  Cluster c;
  c.Start(s->config_path);
  ASSERT_TRUE(c.clients[0]->WaitForReady(10).ok());
  ExpectServedGraphMatches(d, c, "w");
  auto stats = c.clients[0]->GetStats();
  ASSERT_TRUE(stats.ok());
  bool saw_sample = false;
  for (const auto& m : stats->methods()) {
    if (m.method() == "SampleNeighbors") {
      saw_sample = true;
      EXPECT_EQ(m.requests(), 5);
      EXPECT_GT(m.bytes_out(), 0);
      EXPECT_GT(m.p99_us(), 0);
    }
  }
  EXPECT_TRUE(saw_sample);
}

TEST(GraphServerTest, ServesCora) {
  std::string root = testing::SharedDataDir();
  if (root.empty() || !fs::exists(root + "/cora/raw/edge.csv.gz")) GTEST_SKIP() << "../shared/data/cora not present";
  auto d = partition::ReadDataset({.input_dir = root + "/cora"});
  ASSERT_TRUE(d.ok()) << d.status();
  TempDir dir;
  partition::PartitionOptions o;
  o.out_dir = dir.Sub("parts");
  o.num_parts = 2;
  o.add_reverse_edges = true;
  o.quiet = true;
  auto s = partition::PartitionDataset(*d, o);
  ASSERT_TRUE(s.ok()) << s.status();
  Cluster c;
  c.Start(s->config_path);
  ExpectServedGraphMatches(*d, c, "");
}

class BadRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions so;
    so.limits.max_ids_per_request = 50;
    so.limits.max_response_bytes = 2000;
    so.allow_push = true;
    c_.Start(testing::PartitionRandom(dir_, {.num_nodes = 200, .num_edges = 1000}, 2), so);
    stub_ = v1::GraphService::NewStub(grpc::CreateChannel(c_.servers[0]->address(), grpc::InsecureChannelCredentials()));
  }
  // Sends a raw request, so malformed tensors can be built.
  grpc::Status Pull(const std::string& field, v1::DType dtype, std::vector<int64_t> shape, std::string data) {
    v1::PullRequest req;
    req.set_field(field);
    req.mutable_ids()->set_dtype(dtype);
    for (int64_t x : shape) req.mutable_ids()->add_shape(x);
    req.mutable_ids()->set_data(data);
    v1::PullResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub_->PullNodeData(&ctx, req, &resp);
  }
  static std::string Bytes(std::vector<int64_t> v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8);
  }
  TempDir dir_;
  partition::Dataset d_;
  Cluster c_;
  std::unique_ptr<v1::GraphService::Stub> stub_;
};

void ExpectError(const grpc::Status& s, grpc::StatusCode code, const std::string& text) {
  EXPECT_EQ(s.error_code(), code) << s.error_message();
  EXPECT_NE(s.error_message().find(text), std::string::npos) << s.error_message();
}

TEST_F(BadRequestTest, AnsweredWithTheRightCodeAndTheServerLives) {
  const int64_t mine = c_.config.node_bounds[0], theirs = c_.config.node_bounds[1];
  ExpectError(Pull("feat", v1::INT64, {1}, Bytes({theirs})), grpc::StatusCode::INVALID_ARGUMENT,
              "belongs to partition 1");
  ExpectError(Pull("feat", v1::INT64, {1}, Bytes({200})), grpc::StatusCode::INVALID_ARGUMENT,
              "node ID 200 (index 0) is outside the graph [0, 200)");
  ExpectError(Pull("feat", v1::INT64, {2}, Bytes({mine, -5})), grpc::StatusCode::INVALID_ARGUMENT, "node ID -5 (index 1)");
  ExpectError(Pull("nope", v1::INT64, {1}, Bytes({mine})), grpc::StatusCode::NOT_FOUND, "no node field 'nope'");
  ExpectError(Pull("feat", v1::INT32, {1}, std::string(4, '\0')), grpc::StatusCode::INVALID_ARGUMENT,
              "ids must be int64, got INT32");
  ExpectError(Pull("feat", v1::INT64, {3}, Bytes({mine})), grpc::StatusCode::INVALID_ARGUMENT,
              "needs 24 bytes, data has 8");
  ExpectError(Pull("feat", v1::INT64, {0}, ""), grpc::StatusCode::INVALID_ARGUMENT, "ids is empty");
  ExpectError(Pull("feat", v1::INT64, {2, 1}, Bytes({mine, mine})), grpc::StatusCode::INVALID_ARGUMENT, "1-D");
  ExpectError(Pull("feat", v1::DTYPE_UNSPECIFIED, {1}, Bytes({mine})), grpc::StatusCode::INVALID_ARGUMENT,
              "got DTYPE_UNSPECIFIED");
  std::vector<int64_t> many(51, mine);
  ExpectError(Pull("feat", v1::INT64, {51}, Bytes(many)), grpc::StatusCode::RESOURCE_EXHAUSTED,
              "has 51 entries; this server takes at most 50");
  std::vector<int64_t> big(40, mine);  // 40 rows x 8 float32 = 1280 B is fine; feat is 8-dim
  EXPECT_TRUE(Pull("feat", v1::INT64, {40}, Bytes(big)).ok());
  // Client-side errors keep the code and name the server.
  GraphClient& cl = *c_.clients[0];
  auto s = cl.SampleNeighbors({mine}, {.fanout = -7});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.status().message()).find(cl.address()), std::string::npos) << s.status();
  auto w = cl.SampleNeighbors({mine}, {.fanout = 2, .weight_field = "missing"});
  EXPECT_EQ(w.status().code(), absl::StatusCode::kNotFound);
  Rows bad{core::DType::kFloat64, {1, 8}, std::string(64, '\0')};
  auto push = cl.PushNodeData("feat", {mine}, bad, core::PushOp::kAssign);
  EXPECT_EQ(push.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(push.message()).find("holds float32"), std::string::npos) << push;
  // After all that, the server still answers.
  auto md = cl.GetMetadata();
  ASSERT_TRUE(md.ok()) << md.status();
  EXPECT_EQ(md->graph_name(), "random");
}

TEST_F(BadRequestTest, PushAssignAndAddThenPull) {
  GraphClient& cl = *c_.clients[1];
  const int64_t v = c_.config.node_bounds[1] + 2;
  std::vector<float> ones(8, 1.0f);
  Rows r{core::DType::kFloat32, {1, 8}, std::string(reinterpret_cast<const char*>(ones.data()), 32)};
  ASSERT_TRUE(cl.PushNodeData("feat", {v}, r, core::PushOp::kAssign).ok());
  ASSERT_TRUE(cl.PushNodeData("feat", {v}, r, core::PushOp::kAdd).ok());
  auto got = cl.PullNodeData("feat", {v});
  ASSERT_TRUE(got.ok());
  const float* x = reinterpret_cast<const float*>(got->data.data());
  for (int j = 0; j < 8; ++j) EXPECT_EQ(x[j], 2.0f);
}

// A node field created by a client (a Python script's DistTensor) lives in the server's memory:
// zero rows for the partition's nodes, written and read like a field of the files, created again
// with the same schema as a no-op, refused for another schema, a file's field, a bad name, past
// --max-created-bytes, and by a read-only server.
TEST_F(BadRequestTest, CreatedFieldsAreReadAndWrittenLikeFileFields) {
  GraphClient& cl = *c_.clients[1];
  const int64_t v = c_.config.node_bounds[1] + 3;
  auto made = cl.CreateNodeField("h", core::DType::kFloat32, {4});
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_TRUE(*made);
  auto again = cl.CreateNodeField("h", core::DType::kFloat32, {4});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(*again);
  auto zero = cl.PullNodeData("h", {v});
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_EQ(zero->data, std::string(16, '\0'));
  EXPECT_EQ(zero->shape, (std::vector<int64_t>{1, 4}));
  std::vector<float> row = {1, 2, 3, 4};
  Rows r{core::DType::kFloat32, {1, 4}, std::string(reinterpret_cast<const char*>(row.data()), 16)};
  ASSERT_TRUE(cl.PushNodeData("h", {v}, r, core::PushOp::kAssign).ok());
  auto back = cl.PullNodeData("h", {v});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->data, r.data);
  EXPECT_EQ(cl.PullNodeData("h", {c_.config.node_bounds[0]}).status().code(), absl::StatusCode::kInvalidArgument);
  auto other = cl.CreateNodeField("h", core::DType::kInt64, {4});
  EXPECT_EQ(other.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(std::string(other.status().message()).find("was created as float32 [4] per row, not int64 [4]"),
            std::string::npos) << other.status();
  EXPECT_EQ(cl.CreateNodeField("feat", core::DType::kFloat32, {8}).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(cl.CreateNodeField("a b", core::DType::kFloat32, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cl.CreateNodeField("z", core::DType::kFloat32, {0}).status().code(), absl::StatusCode::kInvalidArgument);
  auto huge = cl.CreateNodeField("huge", core::DType::kFloat64, {1 << 24});
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  EXPECT_NE(std::string(huge.status().message()).find("--max-created-bytes"), std::string::npos) << huge.status();
  // Another server of the job does not have it until asked.
  EXPECT_EQ(c_.clients[0]->PullNodeData("h", {c_.config.node_bounds[0]}).status().code(), absl::StatusCode::kNotFound);
}

// The reachability watch (rpc/reachability.h): a machine answers while any of its servers does,
// so stopping one of machine 1's two servers (a replica stands in) reports nothing; stopping both
// reports machine 1, naming its servers, once, within the timeout.
TEST(ReachabilityWatchTest, AMachineIsUnreachableWhenNoneOfItsServersAnswers) {
  TempDir dir;
  const std::string config = testing::PartitionRandom(dir, {.num_nodes = 50, .num_edges = 200}, 2);
  Cluster a, b;  // two servers per partition
  a.Start(config);
  b.Start(config);
  base::ServerMap servers;
  servers.addresses = {{a.servers[0]->address()},
                       {a.servers[1]->address(), b.servers[1]->address()}};
  absl::Mutex mu;
  std::vector<std::string> reports;
  auto watch = rpc::ReachabilityWatch::Start(servers, 0, {.deadline_seconds = 5},
                                             {.interval_s = 0.1, .timeout_s = 1.5},
                                             [&](const std::string& message) {
                                               absl::MutexLock lock(&mu);
                                               reports.push_back(message);
                                             });
  ASSERT_NE(watch, nullptr);
  a.servers[1].reset();  // machine 1's first server
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(reports.empty()) << reports.front();
  }
  b.servers[1].reset();
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    absl::MutexLock lock(&mu);
    if (!reports.empty() || std::chrono::steady_clock::now() - start > std::chrono::seconds(10))
      break;
    mu.AwaitWithTimeout(absl::Condition(
                            +[](std::vector<std::string>* r) { return !r->empty(); }, &reports),
                        absl::Milliseconds(100));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  absl::MutexLock lock(&mu);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_NE(reports[0].find("machine 1 (servers " + servers.addresses[1][0] + ", " +
                            servers.addresses[1][1] + ") has not answered machine 0"),
            std::string::npos)
      << reports[0];
  EXPECT_EQ(
      rpc::ReachabilityWatch::Start(servers, 0, {}, {.timeout_s = 0}, [](const std::string&) {}),
      nullptr)
      << "0: no watch";
}

// A server without --allow-push keeps the partition's own data read-only but holds the fields a
// job creates (a script's DistTensor, learnable rows): created, written and read without a flag.
TEST(GraphServerTest, ServersWithoutAllowPushTakeWritesToCreatedFieldsOnly) {
  TempDir dir;
  Cluster c;
  c.Start(testing::PartitionRandom(dir, {.num_nodes = 50, .num_edges = 200}, 1), ServerOptions{});
  GraphClient& cl = *c.clients[0];
  auto made = cl.CreateNodeField("h", core::DType::kFloat32, {2});
  ASSERT_TRUE(made.ok()) << made.status();
  std::vector<float> row = {1, 2};
  Rows r{core::DType::kFloat32, {1, 2}, std::string(reinterpret_cast<const char*>(row.data()), 8)};
  ASSERT_TRUE(cl.PushNodeData("h", {3}, r, core::PushOp::kAssign).ok());
  auto back = cl.PullNodeData("h", {3});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->data, r.data);
  auto feat = cl.PullNodeData("feat", {3});
  ASSERT_TRUE(feat.ok()) << feat.status();
  Rows same{core::DType::kFloat32, feat->shape, feat->data};
  absl::Status s = cl.PushNodeData("feat", {3}, same, core::PushOp::kAssign);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_NE(std::string(s.message()).find("PushNodeData to 'feat' needs a server started with --allow-push"),
            std::string::npos)
      << s;
}

TEST(GraphServerTest, UnreachableServerFailsWithinTheDeadline) {
  // A port nobody listens on: bind one, close it, use it.
  auto client = GraphClient::Connect("127.0.0.1:1", {.deadline_seconds = 1, .max_attempts = 2});
  auto t0 = std::chrono::steady_clock::now();
  auto md = client->GetMetadata();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(md.ok());
  EXPECT_EQ(md.status().code(), absl::StatusCode::kUnavailable) << md.status();
  EXPECT_NE(std::string(md.status().message()).find("127.0.0.1:1"), std::string::npos);
  EXPECT_LT(s, 10);
  EXPECT_EQ(client->WaitForReady(0.2).code(), absl::StatusCode::kUnavailable);
}

// The real binary: ready line with the bound port, answers, exits 0 on SIGTERM.
TEST(GraphServerBinaryTest, StartsReportsItsPortAndStopsOnSigterm) {
  TempDir dir;
  const std::string config_path = testing::PartitionRandom(dir, {.num_nodes = 100, .num_edges = 400}, 2);
  std::string log = dir.Sub("server.log");
  // A long grace: the server must not wait it out for the connected (idle) client below.
  std::vector<std::string> args = {FANOUT_SERVER_BIN, "--part-config", config_path, "--part-id", "1",
                                   "--host", "127.0.0.1", "--port", "0", "--num-threads", "2",
                                   "--shutdown-grace", "60"};
  absl::StatusOr<pid_t> spawned = base::SpawnChild(
      {.argv = args, .fds = {base::ChildFd::Open(2, log, O_WRONLY | O_CREAT | O_TRUNC)}});
  ASSERT_TRUE(spawned.ok()) << spawned.status();
  const pid_t pid = *spawned;
  // Wait for the ready line (bounded), then parse the port.
  std::smatch m;
  std::string text;
  std::regex ready("ready: .* on 127\\.0\\.0\\.1:([0-9]+)");
  for (int i = 0; i < 200 && !std::regex_search(text, m, ready); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream f(log);
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  ASSERT_TRUE(std::regex_search(text, m, ready)) << text;
  auto client = GraphClient::Connect("127.0.0.1:" + m[1].str(), {.deadline_seconds = 10});
  auto md = client->GetMetadata();
  ASSERT_TRUE(md.ok()) << md.status();
  EXPECT_EQ(md->part_id(), 1);
  auto t0 = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  int status = 0;
  for (int i = 0; i < 200 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(WIFEXITED(status)) << "server did not exit within 10 s of SIGTERM";
  // The client is still connected, and idle: nothing is in flight, so the server stops at once.
  // (gRPC's own shutdown waited out the whole grace while any client was connected.)
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Shutdown waits for the calls in flight, not for the clients connected: a call being answered
// when the server stops gets its answer, a call after that is refused, and the server is gone as
// soon as the first is answered, though its client stays connected.
TEST(GraphServerTest, ShutdownWaitsForCallsInFlightNotForConnectedClients) {
  core::PartitionConfig config = testing::FakeConfig({0, 3, 6}, {0, 3, 6}, {"feat"});
  auto fake = std::make_shared<testing::FakeGraphSource>(0, 0, 3, 0);
  for (int64_t v = 0; v < 3; ++v) fake->AddEdge(v + 3, v);
  fake->HoldAnswers();  // the sample below is in flight until the test releases it
  ServerOptions so;
  so.host = "127.0.0.1";
  so.num_threads = 2;
  auto server = GraphServer::Serve(fake, config, 0, so);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = GraphClient::Connect((*server)->address(), {.deadline_seconds = 30});
  auto other = GraphClient::Connect((*server)->address(), {.deadline_seconds = 5, .max_attempts = 1});
  ASSERT_TRUE(other->GetMetadata().ok());  // a second connection, idle from now on
  // And a client that has stopped answering (a frozen process): it opened HTTP/2 and went
  // silent, so it will never act on the server's GOAWAY. gRPC's own shutdown waits for such a
  // connection to close until the grace runs out.
  const int frozen = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(frozen, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>((*server)->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(frozen, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << std::strerror(errno);
  const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";  // + empty SETTINGS
  ASSERT_EQ(write(frozen, preface, sizeof(preface) - 1), static_cast<ssize_t>(sizeof(preface) - 1));
  auto call = std::async(std::launch::async, [&] { return client->SampleNeighbors({0, 2}, {.fanout = -1}); });
  ASSERT_TRUE(fake->WaitForHeld(1));
  ASSERT_EQ(fake->sample_calls(), 1);

  const auto t0 = std::chrono::steady_clock::now();
  auto stopping = std::async(std::launch::async, [&] {
    (*server)->Shutdown(std::chrono::seconds(60));
    (*server)->Wait();
  });
  ASSERT_TRUE(testing::WaitUntil([&] { return (*server)->stopping(); }));
  auto refused = other->GetDegrees({0}, core::EdgeDir::kIn);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_NE(std::string(refused.status().message()).find("shutting down"), std::string::npos) << refused.status();

  fake->Release();
  auto sampled = call.get();
  ASSERT_TRUE(sampled.ok()) << sampled.status();
  EXPECT_EQ(sampled->src, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(sampled->dst, (std::vector<int64_t>{0, 2}));
  stopping.get();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 10) << "shutdown waited for the connected clients, not only for the call in flight";
  close(frozen);
}

// The standard health service answers for the graph service. Debian ships no health.proto, so
// the call goes through a generic stub with the (two-field) messages encoded by hand.
TEST(GraphServerTest, HealthCheckAnswersServing) {
  TempDir dir;
  Cluster c;
  c.Start(testing::PartitionRandom(dir, {.num_nodes = 60, .num_edges = 200}, 1));
  auto channel = grpc::CreateChannel(c.servers[0]->address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  auto check = [&](const std::string& service, std::string* answer) {
    std::string req = "\x0a" + std::string(1, static_cast<char>(service.size())) + service;  // field 1: service
    grpc::Slice slice(req);
    grpc::ByteBuffer request(&slice, 1), response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    std::promise<grpc::Status> done;
    stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                   [&](grpc::Status st) { done.set_value(st); });
    grpc::Status st = done.get_future().get();
    std::vector<grpc::Slice> slices;
    if (st.ok()) {
      (void)response.Dump(&slices);
      answer->clear();
      for (auto& sl : slices) answer->append(reinterpret_cast<const char*>(sl.begin()), sl.size());
    }
    return st;
  };
  std::string answer;
  ASSERT_TRUE(check("fanout.v1.GraphService", &answer).ok());
  EXPECT_EQ(answer, std::string("\x08\x01", 2));  // status: SERVING
  ASSERT_TRUE(check("", &answer).ok());
  EXPECT_EQ(answer, std::string("\x08\x01", 2));
  EXPECT_EQ(check("no.such.Service", &answer).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(FanoutQueryTest, PrintsJsonAnswersAndFailsClearly) {
  TempDir dir;
  Cluster c;
  c.Start(testing::PartitionRandom(dir, {.num_nodes = 120, .num_edges = 600}, 2));
  const std::string addr = c.servers[1]->address();
  const int64_t v = c.config.node_bounds[1];
  std::string out, err;
  ASSERT_EQ(testing::RunProcess({FANOUT_QUERY_BIN, "--server", addr, "sample", "--seeds", std::to_string(v) + ":" + std::to_string(v + 3),
                         "--fanout", "2", "--seed", "4"}, &out, &err), 0) << err;
  auto j = nlohmann::json::parse(out);
  core::SampledEdges want;
  std::vector<int64_t> seeds = {v, v + 1, v + 2};
  ASSERT_TRUE(core::SampleNeighbors(*c.local[1], seeds, {.fanout = 2, .seed = 4}, &want).ok());
  EXPECT_EQ(j["eid"].get<std::vector<int64_t>>(), want.eid);
  EXPECT_EQ(j["src"].get<std::vector<int64_t>>(), want.src);

  ASSERT_EQ(testing::RunProcess({FANOUT_QUERY_BIN, "--server", addr, "pull", "--field", "label", "--ids", std::to_string(v)}, &out, &err), 0);
  auto p = nlohmann::json::parse(out);
  std::string label;
  ASSERT_TRUE(c.local[1]->GatherNodeRows("label", std::vector<int64_t>{v}, &label).ok());
  EXPECT_EQ(p["rows"][0].get<int64_t>(), *reinterpret_cast<const int64_t*>(label.data()));

  ASSERT_EQ(testing::RunProcess({FANOUT_QUERY_BIN, "--server", addr, "metadata"}, &out, &err), 0);
  EXPECT_EQ(nlohmann::json::parse(out)["part_id"], 1);

  EXPECT_EQ(testing::RunProcess({FANOUT_QUERY_BIN, "--server", addr, "pull", "--field", "feat", "--ids", "0"}, &out, &err), 1);
  EXPECT_NE(err.find("belongs to partition 0"), std::string::npos) << err;
  EXPECT_EQ(testing::RunProcess({FANOUT_QUERY_BIN, "--server", addr, "sample", "--seeds", "x"}, &out, &err), 2);
  EXPECT_NE(err.find("--seeds: 'x' is not an integer or an a:b range"), std::string::npos) << err;
  EXPECT_EQ(testing::RunProcess({FANOUT_QUERY_BIN, "--server", addr, "--bogus"}, &out, &err), 2);
}

// Features stored as int8 rows (fanout-partition --feature-dtype int8): the metadata names the
// codec for gRPC clients, pulls return the stored rows, and fanout-query prints them decoded.
TEST(FanoutQueryTest, CompressedFeaturesAreNamedInTheMetadataAndPrintedDecoded) {
  TempDir dir;
  const testing::RandomGraphSpec spec = {.num_nodes = 120, .num_edges = 600, .feat_dim = 5};
  partition::Dataset d = testing::MakeRandomDataset(spec);
  ASSERT_TRUE(partition::CompressNodeFeatures(&d, *core::FeatureStorageFromName("int8")).ok());
  Cluster c;
  c.Start(testing::PartitionRandom(dir, spec, 1, &d));
  const std::string addr = c.servers[0]->address();
  std::string out, err;
  ASSERT_EQ(testing::RunProcess({FANOUT_QUERY_BIN, "--server", addr, "metadata"}, &out, &err), 0) << err;
  const auto metadata = nlohmann::json::parse(out);
  bool named = false;
  for (const auto& f : metadata["node_fields"]) named |= f["name"] == "feat" && f["codec"] == "int8";
  EXPECT_TRUE(named) << out;
  ASSERT_EQ(testing::RunProcess({FANOUT_QUERY_BIN, "--server", addr, "pull", "--field", "feat", "--ids", "3,7"}, &out, &err), 0)
      << err;
  const auto p = nlohmann::json::parse(out);
  EXPECT_EQ(p["codec"], "int8");
  EXPECT_EQ(p["stored_dtype"], "uint8");
  EXPECT_EQ(p["shape"], nlohmann::json({2, 5}));
  std::string stored;
  ASSERT_TRUE(c.local[0]->GatherNodeRows("feat", std::vector<int64_t>{3, 7}, &stored).ok());
  std::vector<float> want(10);
  core::DecodeRows(core::FeatureCodec::kInt8, stored.data(), 2, 5, want.data());
  for (int r = 0; r < 2; ++r) {
    for (int j = 0; j < 5; ++j) EXPECT_EQ(p["rows"][r][j].get<float>(), want[r * 5 + j]) << r << " " << j;
  }
}

// A typed graph served (issue 29): its types and typed fields in the metadata, typed pulls,
// sampling one relation, all of them, or each with its own fanout, with an edge-type column that
// matches the edge map. A graph without types answers as before: one type each, no column.
TEST(TypedGraphServerTest, MetadataPullsAndSamplesAreTyped) {
  TempDir dir;
  partition::Dataset d = testing::MakeTypedDataset(4);
  auto s = partition::PartitionDataset(
      d, {.out_dir = dir.Sub("out"), .num_parts = 2, .add_reverse_edges = true, .quiet = true});
  ASSERT_TRUE(s.ok()) << s.status();
  Cluster c;
  c.Start(s->config_path);
  auto meta = c.clients[1]->GetMetadata();
  ASSERT_TRUE(meta.ok()) << meta.status();
  ASSERT_EQ(meta->node_types_size(), 3);
  EXPECT_EQ(meta->node_types(0).name(), "paper");
  ASSERT_EQ(meta->edge_types_size(), 6);
  EXPECT_EQ(meta->edge_types(4).name(), "paper:rev_cites:paper");
  const auto paper_range = meta->node_types(0).ranges(1);
  EXPECT_EQ(paper_range.start(), c.config.NodeTypes()->Range(0, 1).first);
  bool typed_feat = false;
  for (const auto& f : meta->node_fields()) typed_feat |= f.name() == "feat" && f.node_type() == "paper";
  EXPECT_TRUE(typed_feat);

  // Pull "paper/feat" for partition 1's papers; an author's ID is refused by type.
  std::vector<int64_t> papers = Range(paper_range.start(), paper_range.end());
  auto rows = c.clients[1]->PullNodeData("paper/feat", papers);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::string want;
  ASSERT_TRUE(c.local[1]->GatherNodeRows("paper/feat", papers, &want).ok());
  EXPECT_EQ(rows->data, want);
  const int64_t author = meta->node_types(1).ranges(1).start();
  auto refused = c.clients[1]->PullNodeData("paper/feat", {author});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("is of type author"), std::string::npos) << refused.status();

  // Sampling: the served answer is the local one, with its edge-type column.
  for (const core::SampleOptions& o : {core::SampleOptions{.fanout = 3, .seed = 9},
                                       core::SampleOptions{.fanout = -1, .seed = 9, .etype = 1},
                                       core::SampleOptions{.seed = 9, .etype_fanouts = {2, 1, 0, 0, 0, 0}}}) {
    auto served = c.clients[1]->SampleNeighbors(papers, o);
    ASSERT_TRUE(served.ok()) << served.status();
    core::SampledEdges local;
    ASSERT_TRUE(core::SampleNeighbors(*c.local[1], papers, o, &local).ok());
    EXPECT_EQ(served->eid, local.eid);
    EXPECT_EQ(served->src, local.src);
    EXPECT_EQ(served->etype, local.etype);
    ASSERT_EQ(served->etype.size(), served->eid.size());
    EXPECT_FALSE(served->eid.empty());
    for (size_t i = 0; i < served->eid.size(); ++i) {
      EXPECT_EQ(c.config.EdgeTypes()->ToTypeWise(served->eid[i]).first, served->etype[i]);
      if (o.etype >= 0) {
        EXPECT_EQ(served->etype[i], o.etype);
      }
    }
  }
  // fanout-query speaks it too: one relation's sample with its etype column, a typed pull.
  std::string out, err;
  ASSERT_EQ(testing::RunProcess({FANOUT_QUERY_BIN, "--server", c.servers[1]->address(), "sample", "--seeds",
                                 std::to_string(papers[0]), "--etype", "1"},
                                &out, &err),
            0)
      << err;
  const nlohmann::json sample = nlohmann::json::parse(out);
  for (const auto& r : sample["etype"]) EXPECT_EQ(r.get<int>(), 1);
  EXPECT_EQ(sample["etype"].size(), sample["eid"].size());
  ASSERT_EQ(testing::RunProcess({FANOUT_QUERY_BIN, "--server", c.servers[1]->address(), "pull", "--field", "paper/label",
                                 "--ids", std::to_string(papers[0])},
                                &out, &err),
            0)
      << err;
  EXPECT_EQ(nlohmann::json::parse(out)["shape"], nlohmann::json::array({1}));

  auto bad = c.clients[1]->SampleNeighbors(papers, {.etype = 9});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("edge type 9 does not exist: the graph has 6 (0..5)"), std::string::npos)
      << bad.status();

  // The one-type graph: one type of each kind, no edge-type column.
  TempDir plain_dir;
  const std::string plain = testing::PartitionRandom(plain_dir, {.num_nodes = 200, .num_edges = 800}, 1);
  Cluster p;
  p.Start(plain);
  auto plain_meta = p.clients[0]->GetMetadata();
  ASSERT_TRUE(plain_meta.ok());
  ASSERT_EQ(plain_meta->edge_types_size(), 1);
  EXPECT_EQ(plain_meta->edge_types(0).name(), "_N:_E:_N");
  auto one = p.clients[0]->SampleNeighbors(Range(0, 50), {.fanout = 2});
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->etype.empty());
}

// Failover (issue 31): a partition served twice keeps answering through RemoteGraphSource when
// one server goes away, with the same answers; with both gone the error names the partition.
TEST(RemoteGraphSourceTest, FailsOverToThePartitionsOtherServer) {
  TempDir dir;
  const std::string config_path = testing::PartitionRandom(dir, {.num_nodes = 200, .num_edges = 800}, 1);
  auto cfg = core::LoadPartitionConfig(config_path);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  ServerOptions o;
  o.host = "127.0.0.1";
  o.num_threads = 2;
  std::vector<std::unique_ptr<GraphServer>> servers;
  std::vector<std::unique_ptr<GraphClient>> clients;
  for (int s = 0; s < 2; ++s) {
    auto store = core::PartitionStore::Open(*cfg, 0);
    ASSERT_TRUE(store.ok()) << store.status();
    auto srv = GraphServer::Start(std::move(*store), o);
    ASSERT_TRUE(srv.ok()) << srv.status();
    clients.push_back(GraphClient::Connect((*srv)->address(), {.deadline_seconds = 10, .max_attempts = 1}));
    servers.push_back(std::move(*srv));
  }
  const std::string first = servers[0]->address();
  rpc::RemoteGraphSource source(0, std::move(clients));
  const std::vector<int64_t> ids = Range(0, 50);
  auto degrees = [&](absl::Status* status) {
    std::vector<int64_t> out(ids.size(), -1);
    *status = core::WaitFor([&](core::Done d) { source.Degrees(ids, EdgeDir::kIn, out.data(), std::move(d)); });
    return out;
  };
  absl::Status s;
  const std::vector<int64_t> want = degrees(&s);
  ASSERT_TRUE(s.ok()) << s;
  servers[0]->Shutdown(std::chrono::milliseconds(0));
  servers[0].reset();
  // Round robin sends some of these to the server that is gone: every one is answered.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(degrees(&s), want) << i;
    ASSERT_TRUE(s.ok()) << s;
  }
  EXPECT_EQ(source.live_servers(), 1u);
  servers[1]->Shutdown(std::chrono::milliseconds(0));
  servers[1].reset();
  degrees(&s);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("partition 0 (servers " + first), std::string::npos) << s;
  EXPECT_NE(s.message().find("no server left answering"), std::string::npos) << s;
}

// Replicas (fanout-launch --replicas): calls go to the most preferred tier while it answers, to
// the next when it does not, and back once the first answers again (a link restored: here a
// server started again on its port).
TEST(RemoteGraphSourceTest, PrefersItsFirstTierFailsOverInOrderAndReturnsWhenItAnswersAgain) {
  TempDir dir;
  const std::string config_path = testing::PartitionRandom(dir, {.num_nodes = 200, .num_edges = 800}, 1);
  auto cfg = core::LoadPartitionConfig(config_path);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  auto start = [&](int port) {
    ServerOptions o;
    o.host = "127.0.0.1";
    o.port = port;
    o.num_threads = 1;
    auto store = core::PartitionStore::Open(*cfg, 0);
    FANOUT_CHECK(store.ok()) << store.status();
    auto srv = GraphServer::Start(std::move(*store), o);
    FANOUT_CHECK(srv.ok()) << srv.status();
    return std::move(*srv);
  };
  std::vector<std::unique_ptr<GraphServer>> servers;
  std::vector<std::unique_ptr<GraphClient>> clients;
  for (int s = 0; s < 3; ++s) {
    servers.push_back(start(0));
    clients.push_back(GraphClient::Connect(servers.back()->address(), {.deadline_seconds = 10, .max_attempts = 1}));
  }
  const int first_port = servers[0]->port();
  // Server 0 is this machine's replica (tier 0), server 1 the partition's own, server 2 a replica
  // elsewhere.
  rpc::RemoteGraphSource source(0, std::move(clients), {0, 1, 2}, /*retry_after_seconds=*/0.3);
  const std::vector<int64_t> ids = Range(0, 50);
  auto degrees = [&]() {
    std::vector<int64_t> out(ids.size(), -1);
    absl::Status s = core::WaitFor([&](core::Done d) { source.Degrees(ids, EdgeDir::kIn, out.data(), std::move(d)); });
    EXPECT_TRUE(s.ok()) << s;
    return out;
  };
  auto calls = [&](int s) {
    auto st = GraphClient::Connect(servers[s]->address())->GetStats();
    int64_t n = 0;
    if (st.ok()) {
      for (const auto& m : st->methods()) n += m.method() == "GetDegrees" ? m.requests() : 0;
    }
    return n;
  };
  const std::vector<int64_t> want = degrees();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(degrees(), want);
  EXPECT_EQ(calls(0), 6);
  EXPECT_EQ(calls(1), 0);
  EXPECT_EQ(calls(2), 0);
  // Tier 0 gone: every call is answered, by tier 1 alone.
  servers[0]->Shutdown(std::chrono::milliseconds(0));
  servers[0].reset();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(degrees(), want);
  EXPECT_EQ(source.live_servers(), 2u);
  EXPECT_EQ(calls(1), 4);
  EXPECT_EQ(calls(2), 0);
  // Tier 1 gone too: tier 2.
  servers[1]->Shutdown(std::chrono::milliseconds(0));
  servers[1].reset();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(degrees(), want);
  EXPECT_EQ(calls(2), 3);
  EXPECT_EQ(source.live_servers(), 1u);
  // Tier 0 back on its port: a call retries it when its retry is due (its channel reconnects on
  // gRPC's own back-off, a second or more), and once one is answered the calls return to it.
  servers[0] = start(first_port);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (source.live_servers() < 2 && std::chrono::steady_clock::now() < until) {
    EXPECT_EQ(degrees(), want);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(source.live_servers(), 2u);
  const int64_t before = calls(2);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(degrees(), want);
  EXPECT_EQ(calls(0), 6);  // the retry that found it, and these
  EXPECT_EQ(calls(2), before);
}

// A server that lets a call run out its deadline (a link cut without a TCP error: here a socket
// that accepts connections and never speaks HTTP/2) is taken out like one that answers
// UNAVAILABLE, and the call is answered by the next server.
TEST(RemoteGraphSourceTest, ACallThatRunsOutItsDeadlineMovesToTheNextServer) {
  TempDir dir;
  const std::string config_path = testing::PartitionRandom(dir, {.num_nodes = 200, .num_edges = 800}, 1);
  auto cfg = core::LoadPartitionConfig(config_path);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  const int silent = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(silent, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << std::strerror(errno);
  ASSERT_EQ(listen(silent, 16), 0) << std::strerror(errno);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string silent_address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  ServerOptions o;
  o.host = "127.0.0.1";
  o.num_threads = 1;
  auto store = core::PartitionStore::Open(*cfg, 0);
  ASSERT_TRUE(store.ok()) << store.status();
  auto server = GraphServer::Start(std::move(*store), o);
  ASSERT_TRUE(server.ok()) << server.status();
  std::vector<std::unique_ptr<GraphClient>> clients;
  clients.push_back(GraphClient::Connect(silent_address, {.deadline_seconds = 0.5, .max_attempts = 1}));
  clients.push_back(GraphClient::Connect((*server)->address(), {.deadline_seconds = 10, .max_attempts = 1}));
  rpc::RemoteGraphSource source(0, std::move(clients), {0, 1});
  const std::vector<int64_t> ids = Range(0, 50);
  auto want = GraphClient::Connect((*server)->address())->GetDegrees(ids, EdgeDir::kIn);
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<int64_t> got(ids.size(), -1);
  absl::Status s = core::WaitFor([&](core::Done d) { source.Degrees(ids, EdgeDir::kIn, got.data(), std::move(d)); });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(got, *want);
  EXPECT_EQ(source.live_servers(), 1u);  // the silent one is out
  close(silent);
}

}  // namespace
}  // namespace fanout::server

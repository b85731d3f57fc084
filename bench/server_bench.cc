// Graph server throughput (docs/benchmarks.md): feature pulls (GB/s) and neighbour sampling
// (sampled edges/s) through a server on loopback with C concurrent clients, each on its own
// connection, side by side with the same work done in-process on the mapped files by C threads.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <thread>

#include "base/cli.h"
#include "base/strings.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "core/sampling.h"
#include "rpc/graph_client.h"
#include "server/graph_server.h"

namespace {

using namespace fanout;
using Clock = std::chrono::steady_clock;

struct Result {
  double units_per_s = 0;  // bytes/s (pull) or edges/s (sample)
  int64_t requests = 0;
};

// Runs `work(thread, rng) -> units` on `threads` threads for `seconds`; errors abort.
template <typename Work>
Result Measure(int threads, double seconds, Work work) {
  std::atomic<int64_t> units{0}, requests{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      while (!stop.load(std::memory_order_relaxed)) {
        units += work(t, rng);
        ++requests;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : ts) th.join();
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  return {units / secs, requests.load()};
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path, feature = "feat";
  std::vector<int64_t> counts = {1, 2, 8};
  int part_id = 0, server_threads = 0;
  int64_t pull_batch = 4096, sample_batch = 1024, fanout = 10;
  double seconds = 3;
  base::ArgParser args("server_bench", "--part-config FILE [--part-id K] [flags]");
  args.AddString("part-config", &config_path, "partition config");
  args.AddInt("part-id", &part_id, "partition to serve");
  args.AddIntList("clients", &counts, "client counts to measure [default: 1,2,8]");
  args.AddString("field", &feature, "node field to pull");
  args.AddInt("pull-batch", &pull_batch, "rows per pull request");
  args.AddInt("sample-batch", &sample_batch, "seeds per sample request");
  args.AddInt("fanout", &fanout, "fanout per seed");
  args.AddInt("server-threads", &server_threads, "server worker threads (0 = all cores)");
  args.AddDouble("seconds", &seconds, "seconds per measurement");
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  auto cfg = core::LoadPartitionConfig(config_path);
  if (!cfg.ok()) return args.Fail(cfg.status());
  auto local = core::PartitionStore::Open(*cfg, part_id);
  if (!local.ok()) return args.Fail(local.status());
  auto served = core::PartitionStore::Open(*cfg, part_id);
  if (!served.ok()) return args.Fail(served.status());
  server::ServerOptions so;
  so.host = "127.0.0.1";
  so.num_threads = server_threads;
  auto srv = server::GraphServer::Start(std::move(*served), so);
  if (!srv.ok()) return args.Fail(srv.status());
  const core::PartitionStore& store = **local;
  const int64_t lo = store.node_start(), n = store.num_inner_nodes();
  auto schema = store.NodeFieldSchema(feature);
  if (!schema.ok()) return args.Fail(schema.status());
  std::printf("server_bench: graph %s partition %d: %lld nodes, %lld edges; %u cores; %.0f s per point\n",
              cfg->graph_name.c_str(), part_id, static_cast<long long>(n),
              static_cast<long long>(store.num_inner_edges()), std::thread::hardware_concurrency(), seconds);
  auto batch = [&](std::mt19937_64& rng, int64_t size) {
    std::vector<int64_t> ids(size);
    for (auto& v : ids) v = lo + static_cast<int64_t>(rng() % n);
    return ids;
  };
  std::printf("%-8s %8s %14s %14s %8s\n", "workload", "clients", "in-process", "server", "ratio");
  for (int64_t count : counts) {
    if (count < 1 || count > 256) return args.Fail(absl::InvalidArgumentError("--clients: counts must be in [1, 256]"));
    const int c = static_cast<int>(count);
    std::vector<std::unique_ptr<rpc::GraphClient>> clients;
    for (int i = 0; i < c; ++i) {
      clients.push_back(rpc::GraphClient::Connect((*srv)->address(), {.own_connection = true}));
    }
    // Pull: random rows of the feature field.
    Result in = Measure(c, seconds, [&](int, std::mt19937_64& rng) {
      std::string rows;
      auto ids = batch(rng, pull_batch);
      if (!store.GatherNodeRows(feature, ids, &rows).ok()) std::abort();
      return static_cast<int64_t>(rows.size());
    });
    Result rpc = Measure(c, seconds, [&](int t, std::mt19937_64& rng) {
      auto r = clients[t]->PullNodeData(feature, batch(rng, pull_batch));
      if (!r.ok()) {
        std::fprintf(stderr, "%s\n", std::string(r.status().message()).c_str());
        std::abort();
      }
      return static_cast<int64_t>(r->data.size());
    });
    std::printf("%-8s %8d %10.2f GB/s %10.2f GB/s %7.2fx\n", "pull", c, in.units_per_s / 1e9, rpc.units_per_s / 1e9,
                rpc.units_per_s / in.units_per_s);
    // Sample: fanout neighbours of random seeds, uniform without replacement.
    std::atomic<uint64_t> seed{1};
    Result sin = Measure(c, seconds, [&](int, std::mt19937_64& rng) {
      core::SampledEdges e;
      if (!core::SampleNeighbors(store, batch(rng, sample_batch), {.fanout = fanout, .seed = seed++}, &e).ok()) std::abort();
      return static_cast<int64_t>(e.size());
    });
    Result srpc = Measure(c, seconds, [&](int t, std::mt19937_64& rng) {
      auto e = clients[t]->SampleNeighbors(batch(rng, sample_batch), {.fanout = fanout, .seed = seed++});
      if (!e.ok()) std::abort();
      return static_cast<int64_t>(e->size());
    });
    std::printf("%-8s %8d %9.2f Me/s %9.2f Me/s %7.2fx\n", "sample", c, sin.units_per_s / 1e6, srpc.units_per_s / 1e6,
                srpc.units_per_s / sin.units_per_s);
  }
  (*srv)->Shutdown(std::chrono::milliseconds(0));
  return 0;
}

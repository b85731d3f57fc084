// fanout-server: serves one partition over gRPC until SIGTERM or SIGINT.
//
//   fanout-server --part-config OUT/graph.json --part-id 0 --port 30050 [--server-id 1]
#include <signal.h>

#include <cstdio>
#include <optional>

#include "base/cli.h"
#include "base/heartbeat.h"
#include "base/malloc_tuning.h"
#include "base/memory_report.h"
#include "base/process_stats.h"
#include "base/strings.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "rpc/security.h"
#include "server/graph_server.h"

int main(int argc, char** argv) {
  fanout::base::KeepLargeAllocations();
  fanout::base::StartHeartbeatFromEnvironment();  // only under fanout-launch
  using namespace fanout;
  std::string part_config;
  int part_id = -1, server_id = 0;
  double grace_s = 5;
  server::ServerOptions o;
  base::ArgParser args("fanout-server", "--part-config FILE --part-id K [--port P] [flags]");
  args.SetDescription("Serves partition K of a partitioned graph over gRPC (fanout.v1.GraphService, with\n"
                      "health checking and reflection) until SIGTERM or SIGINT.\n\n");
  args.AddString("part-config", &part_config, "the <name>.json written by fanout-partition");
  args.AddInt("part-id", &part_id, "the partition to serve");
  o.host = "127.0.0.1";  // this machine only, unless asked: see docs/security.md
  args.AddString("host", &o.host, "address to bind (0.0.0.0: every interface)");
  args.AddInt("port", &o.port, "base port; 0 picks a free one (printed when ready)");
  args.AddInt("server-id", &server_id, "this server's index on its machine: listens on port + server-id", 0);
  args.AddInt("num-threads", &o.num_threads, "request worker threads (0 = all cores)");
  args.AddInt("max-ids-per-request", &o.limits.max_ids_per_request, "larger requests: RESOURCE_EXHAUSTED", 1);
  args.AddInt("max-response-bytes", &o.limits.max_response_bytes, "larger answers: RESOURCE_EXHAUSTED", 1);
  args.AddInt("max-request-bytes", &o.max_request_bytes, "larger request messages: RESOURCE_EXHAUSTED", 1);
  args.AddInt("max-queued-calls", &o.limits.max_queued_calls, "calls waiting for a worker; more: UNAVAILABLE", 0);
  args.AddInt("max-queued-bytes", &o.limits.max_queued_bytes, "request bytes waiting for a worker; more: UNAVAILABLE", 0);
  args.AddBool("allow-push", &o.allow_push,
               "accept writes to the partition's own node data (PushNodeData, SparseUpdate); refused otherwise. "
               "Fields the job creates (CreateNodeField: a script's DistTensor or DistEmbedding, fanout-train's "
               "learnable rows) take writes either way, within --max-created-bytes");
  args.AddBytes("max-created-bytes", &o.limits.max_created_bytes,
                "memory node fields created by clients (a Python script's DistTensor or DistEmbedding, fanout-train's "
                "learnable rows) may take together");
  int64_t feature_cache_mb = -1;
  args.AddInt("feature-cache-mb", &feature_cache_mb,
              "read the partition's node fields from disk (pread) behind a row cache of this many MiB instead of "
              "mapping them, for features larger than the memory this server may hold; -1 = map them; fields read "
              "from disk take no pushes",
              -1);
  std::string cache_policy = "s3fifo";
  args.AddChoice("feature-cache-policy", &cache_policy, {"s3fifo", "lru"},
                 "with --feature-cache-mb: which rows the cache keeps (docs/graph-server.md)");
  base::SecurityOptions security;
  base::AddSecurityFlags(args, &security);
  args.AddDouble("shutdown-grace", &grace_s, "seconds in-flight calls get to finish on shutdown");
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  if (part_config.empty()) return args.Fail(absl::InvalidArgumentError("--part-config is required"));
  if (part_id < 0) return args.Fail(absl::InvalidArgumentError("--part-id is required"));
  if (o.port > 0) o.port += server_id;
  // (--max-created-bytes is a size: the parser takes no negative one.)
  if (!(grace_s >= 0)) return args.Fail(absl::InvalidArgumentError("--shutdown-grace must be >= 0 seconds"));
  auto loaded = rpc::Security::Load(security, rpc::Security::Role::kServer);
  if (!loaded.ok()) return args.Fail(loaded.status());
  o.security = *loaded;
  base::RaiseOpenFileLimit();

  // Block the shutdown signals before gRPC starts its threads, so only sigwait below sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Sampled from here (its thread inherits the blocked signals); printed at exit for fanout-launch.
  base::MemoryReportAtExit memory("server");

  auto config = core::LoadPartitionConfig(part_config);
  if (!config.ok()) return args.Fail(config.status());
  core::StoreOptions store_options;
  store_options.row_cache_bytes = feature_cache_mb < 0 ? -1 : feature_cache_mb << 20;
  store_options.row_cache_policy = *core::CachePolicyFromName(cache_policy);
  auto store = core::PartitionStore::Open(*config, part_id, store_options);
  if (!store.ok()) return args.Fail(store.status());
  const int64_t nodes = (*store)->num_inner_nodes(), edges = (*store)->num_inner_edges();
  auto srv = server::GraphServer::Start(std::move(*store), o);
  if (!srv.ok()) return args.Fail(srv.status());
  const std::string missing = base::MissingProtection(o.security.tls(), !o.security.token().empty());
  if (!base::IsLoopbackHost(o.host) && !missing.empty()) {
    std::fprintf(stderr,
                 "fanout-server: WARNING: listening on %s without %s: anyone who can reach port %d can read "
                 "every feature and label%s. See docs/security.md (--tls-cert/--tls-key, --auth-token-file).\n",
                 o.host.c_str(), missing.c_str(), (*srv)->port(),
                 o.allow_push ? " and overwrite them (--allow-push)" : "");
  }
  std::fprintf(stderr,
               "fanout-server: ready: graph %s partition %d of %d (%lld nodes, %lld edges) on %s:%d (%s%s)\n",
               config->graph_name.c_str(), part_id, config->num_parts, static_cast<long long>(nodes),
               static_cast<long long>(edges), o.host.c_str(), (*srv)->port(), o.security.Describe().c_str(),
               o.allow_push ? ", pushes allowed" : ", read-only");
  std::fflush(stderr);

  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "fanout-server: %s: shutting down\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  (*srv)->Shutdown(std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000)));
  (*srv)->Wait();
  if (feature_cache_mb >= 0) {
    const core::RowCacheStats c = (*srv)->store().row_cache_stats();
    std::fprintf(stderr,
                 "fanout-server: row cache (%s, %lld MiB): hit rate %.3f (%lld hits, %lld misses); %s; %.3f GB held in "
                 "%lld rows\n",
                 cache_policy.c_str(), static_cast<long long>(feature_cache_mb), c.hit_rate(),
                 static_cast<long long>(c.hits), static_cast<long long>(c.misses), c.DescribeReads().c_str(),
                 c.cached_bytes / 1e9, static_cast<long long>(c.cached_rows));
  }
  std::fprintf(stderr, "fanout-server: stopped; peak memory %s\n", memory.Peak().ToString().c_str());
  memory.Report();  // before the mappings and caches are torn down
  return 0;
}

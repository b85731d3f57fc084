// A running graph server: one partition behind fanout.v1.GraphService, with gRPC health checking
// and server reflection, on an owned worker pool. What it serves is a core::GraphSource: the
// partition's files (Start, what fanout-server runs), or any other source (Serve).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/graph_source.h"
#include "core/partition_store.h"
#include "rpc/security.h"
#include "server/graph_service.h"

namespace grpc {
class Server;
}

namespace fanout::server {

struct ServerOptions {
  std::string host = "0.0.0.0";            // address to bind
  int port = 0;                            // 0 picks a free port (see GraphServer::port())
  int num_threads = 0;                     // request workers; 0 = hardware concurrency
  ServiceLimits limits;
  int64_t max_request_bytes = 64ll << 20;  // larger requests: RESOURCE_EXHAUSTED from gRPC
  bool allow_push = false;                 // accept writes to the partition's own node data (PushNodeData,
                                           // SparseUpdate); created fields take them regardless
  rpc::Security security;                       // TLS and token (default: plaintext, no token)
  int handshake_timeout_ms = 10000;        // connections that have not finished HTTP/2 (and TLS)
                                           // setup by then are closed
  int max_streams_per_connection = 128;    // concurrent calls on one connection
};

// Thread-safe. Destroying it shuts the server down.
class GraphServer {
 public:
  // Serves a partition's files; pushes to them are allowed when options.allow_push.
  static absl::StatusOr<std::unique_ptr<GraphServer>> Start(std::unique_ptr<core::PartitionStore> store,
                                                            const ServerOptions& options);
  // Serves `source` as partition `part_id` of `config` (a fake in tests, a cache, a proxy of other
  // servers). Requests are checked against `config` before the source sees them; pushes are refused.
  static absl::StatusOr<std::unique_ptr<GraphServer>> Serve(std::shared_ptr<core::GraphSource> source,
                                                            core::PartitionConfig config, int part_id,
                                                            const ServerOptions& options);
  ~GraphServer();

  int port() const { return port_; }
  std::string address() const;
  // The partition's files; only for a server made by Start.
  const core::PartitionStore& store() const { return *store_; }

  // Stops accepting calls, lets the ones in flight finish for up to `grace`, then cancels them.
  void Shutdown(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));
  // Blocks until Shutdown() completes.
  void Wait();
  // Calls being worked on or queued (not yet answered), and whether Shutdown has begun: what a
  // server is doing right now, for monitoring and for tests that must act at a given moment.
  int64_t calls_in_flight() const;
  bool stopping() const;

 private:
  GraphServer() = default;
  static absl::StatusOr<std::unique_ptr<GraphServer>> Listen(std::unique_ptr<GraphServer> s, int part_id,
                                                             const ServerOptions& options);
  std::shared_ptr<core::PartitionStore> store_;  // null when serving another source
  core::PartitionConfig config_;
  std::shared_ptr<core::GraphSource> source_;
  std::unique_ptr<ServerStats> stats_;
  std::unique_ptr<base::ThreadPool> pool_;
  std::unique_ptr<GraphServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string host_;
  int port_ = 0;
};

}  // namespace fanout::server

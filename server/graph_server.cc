#include "server/graph_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "base/ip_config.h"
#include "base/parallel.h"
#include "base/strings.h"
#include "rpc/client_options.h"

namespace fanout::server {

using base::StrCat;

absl::StatusOr<std::unique_ptr<GraphServer>> GraphServer::Start(std::unique_ptr<core::PartitionStore> store,
                                                                const ServerOptions& o) {
  std::unique_ptr<GraphServer> s(new GraphServer());
  s->store_ = std::move(store);
  s->config_ = s->store_->config();
  s->source_ = std::make_shared<core::LocalGraphSource>(s->store_);
  const int part_id = s->store_->part_id();
  return Listen(std::move(s), part_id, o);
}

absl::StatusOr<std::unique_ptr<GraphServer>> GraphServer::Serve(std::shared_ptr<core::GraphSource> source,
                                                                core::PartitionConfig config, int part_id,
                                                                const ServerOptions& o) {
  if (source == nullptr) return absl::InvalidArgumentError("no graph source to serve");
  if (part_id < 0 || part_id >= config.num_parts) {
    return absl::InvalidArgumentError(StrCat("partition ", part_id, " is not in graph '", config.graph_name, "' (",
                                             config.num_parts, " partitions)"));
  }
  const size_t bounds = static_cast<size_t>(config.num_parts) + 1;
  if (config.node_bounds.size() != bounds || config.edge_bounds.size() != bounds || !config.NodeBook().ok() ||
      !config.EdgeBook().ok()) {
    return absl::InvalidArgumentError(StrCat("graph '", config.graph_name, "': invalid node or edge ranges"));
  }
  std::unique_ptr<GraphServer> s(new GraphServer());
  s->config_ = std::move(config);
  s->source_ = std::move(source);
  return Listen(std::move(s), part_id, o);
}

absl::StatusOr<std::unique_ptr<GraphServer>> GraphServer::Listen(std::unique_ptr<GraphServer> s, int part_id,
                                                                 const ServerOptions& o) {
  if (o.port < 0 || o.port > 65535) {
    return absl::InvalidArgumentError(StrCat("--port must be in [0, 65535], got ", o.port));
  }
  s->stats_ = std::make_unique<ServerStats>();
  s->pool_ = std::make_unique<base::ThreadPool>(o.num_threads > 0 ? o.num_threads : base::DefaultThreads());
  ServicePolicy policy{.limits = o.limits, .allow_push = o.allow_push, .auth_token = o.security.token()};
  ServedPartition served{.config = &s->config_, .part_id = part_id, .source = s->source_.get(), .writable = s->store_.get()};
  s->service_ = std::make_unique<GraphServiceImpl>(served, s->stats_.get(), s->pool_.get(), policy);
  s->host_ = o.host;
  // Both are process-wide registrations that gRPC reads when a server is built.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string addr = base::HostPort(o.host, o.port);
  builder.AddListeningPort(addr, o.security.ServerCredentials(), &s->port_);
  builder.RegisterService(s->service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<int64_t>(o.max_request_bytes, INT32_MAX)));
  // Answers are bounded by limits.max_response_bytes; leave room for the envelope.
  builder.SetMaxSendMessageSize(static_cast<int>(std::min<int64_t>(o.limits.max_response_bytes + (1 << 20), INT32_MAX)));
  // Same flow-control settings as the client (graph_client.cc).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 16 << 20);
  // A connection storm must not hold descriptors for long: unfinished handshakes are closed,
  // and one connection cannot queue unbounded calls.
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, o.handshake_timeout_ms);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, o.max_streams_per_connection);
  // Clients ping while their calls run, to notice a cut link (rpc/client_options.h): accepted
  // this often, where gRPC's default (5 min without data) would close their connections.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, rpc::kMinPingIntervalMs);
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(StrCat("cannot listen on ", addr, " (in use, or not an address of this host?)"));
  }
  s->server_->GetHealthCheckService()->SetServingStatus("fanout.v1.GraphService", true);
  s->server_->GetHealthCheckService()->SetServingStatus("", true);
  return s;
}

GraphServer::~GraphServer() {
  if (server_ != nullptr) {
    Shutdown(std::chrono::milliseconds(0));
    server_->Wait();
  }
  pool_.reset();  // runs what is queued (reactors finish) before the service goes away
}

std::string GraphServer::address() const {
  std::string host = host_ == "0.0.0.0" || host_.empty() ? "127.0.0.1" : host_;
  return StrCat(host, ":", port_);
}

void GraphServer::Shutdown(std::chrono::milliseconds grace) {
  if (server_ == nullptr) return;
  server_->GetHealthCheckService()->Shutdown();
  // gRPC's Shutdown(deadline) completes early only once every connection has closed after its
  // GOAWAY, so a client that stopped answering (a frozen trainer, a half-open connection) held a
  // stopping server for the whole grace. The service drains its own calls instead (new ones
  // refused UNAVAILABLE); what is left then is cancelled at once: calls past the grace, idle
  // connections, and streams of the health and reflection services.
  service_->Drain(std::chrono::steady_clock::now() + grace);
  server_->Shutdown(std::chrono::system_clock::now());
}

int64_t GraphServer::calls_in_flight() const { return service_ != nullptr ? service_->active_calls() : 0; }
bool GraphServer::stopping() const { return service_ != nullptr && service_->draining(); }

void GraphServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

}  // namespace fanout::server

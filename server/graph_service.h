// The gRPC adapter of fanout.v1.GraphService: converts requests into calls on a core::GraphSource
// (on an owned worker pool) and their results (or errors) back into responses. It holds no graph
// state of its own: any source can be served (a partition's files, as fanout-server does; a fake
// in tests; a cache or a proxy), and a new RPC is one GraphSource method plus one handler here.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "base/thread_pool.h"
#include "core/graph_source.h"
#include "core/partition_book.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "fanout/v1/graph.grpc.pb.h"
#include "server/server_stats.h"

namespace fanout::server {

// Request limits; exceeding one is RESOURCE_EXHAUSTED with a message naming the limit. Every
// handler checks the worst case of its answer against them before it allocates anything.
struct ServiceLimits {
  int64_t max_ids_per_request = 4 << 20;       // IDs (seeds, eids) in one request
  int64_t max_response_bytes = 256ll << 20;    // pulled rows or sampled edges in one answer
  int64_t max_queued_calls = 256;              // calls waiting for a worker; more: UNAVAILABLE
  int64_t max_queued_bytes = 1ll << 30;        // their request bytes; more: UNAVAILABLE
  int64_t max_created_bytes = 4ll << 30;       // node fields created by clients (CreateNodeField), together
};

// What the service lets callers do beyond reading.
struct ServicePolicy {
  ServiceLimits limits;
  // PushNodeData and SparseUpdate to the partition's own fields refused (PERMISSION_DENIED)
  // unless set; fields the job created (CreateNodeField, bounded by limits.max_created_bytes)
  // take them either way.
  bool allow_push = false;
  std::string auth_token;   // non-empty: every call must carry "authorization: Bearer <token>"
};

// What a service answers for: one partition of a graph. The config gives the metadata, the field
// schemas and the ID ranges each request is checked against before the source sees it.
struct ServedPartition {
  const core::PartitionConfig* config = nullptr;
  int part_id = 0;
  core::GraphSource* source = nullptr;         // answers every read
  core::PartitionStore* writable = nullptr;    // PushNodeData writes here; null: pushes are refused
};

// Where a handler learns that its call has been abandoned (client cancelled, deadline passed,
// server shutting down). Handlers poll it between chunks of work.
using StopCheck = std::function<bool()>;

class GraphServiceImpl final : public v1::GraphService::CallbackService {
 public:
  // All pointers must outlive the service; `served.config` must be valid (LoadPartitionConfig
  // checks it). Thread-safe as the source is.
  GraphServiceImpl(ServedPartition served, ServerStats* stats, base::ThreadPool* pool, ServicePolicy policy);

  grpc::ServerUnaryReactor* GetMetadata(grpc::CallbackServerContext* ctx, const v1::GetMetadataRequest* req,
                                        v1::GetMetadataResponse* resp) override;
  grpc::ServerUnaryReactor* PullNodeData(grpc::CallbackServerContext* ctx, const v1::PullRequest* req,
                                         v1::PullResponse* resp) override;
  grpc::ServerUnaryReactor* PullEdgeData(grpc::CallbackServerContext* ctx, const v1::PullRequest* req,
                                         v1::PullResponse* resp) override;
  grpc::ServerUnaryReactor* PushNodeData(grpc::CallbackServerContext* ctx, const v1::PushRequest* req,
                                         v1::PushResponse* resp) override;
  grpc::ServerUnaryReactor* CreateNodeField(grpc::CallbackServerContext* ctx, const v1::CreateNodeFieldRequest* req,
                                            v1::CreateNodeFieldResponse* resp) override;
  grpc::ServerUnaryReactor* SparseUpdate(grpc::CallbackServerContext* ctx, const v1::SparseUpdateRequest* req,
                                         v1::SparseUpdateResponse* resp) override;
  grpc::ServerUnaryReactor* SampleNeighbors(grpc::CallbackServerContext* ctx, const v1::SampleRequest* req,
                                            v1::SampleResponse* resp) override;
  grpc::ServerUnaryReactor* GetDegrees(grpc::CallbackServerContext* ctx, const v1::DegreesRequest* req,
                                       v1::DegreesResponse* resp) override;
  grpc::ServerUnaryReactor* FindEdges(grpc::CallbackServerContext* ctx, const v1::FindEdgesRequest* req,
                                      v1::FindEdgesResponse* resp) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* ctx, const v1::GetStatsRequest* req,
                                     v1::GetStatsResponse* resp) override;

  // The handlers proper, without gRPC: what each RPC does once its call is admitted. The RPC
  // methods above call them on the pool; tests and fuzzers call them directly. `stop` may be
  // empty. Thread-safe.
  absl::Status DoGetMetadata(v1::GetMetadataResponse* resp) const;
  absl::Status DoPull(const v1::PullRequest& req, bool node, v1::PullResponse* resp, const StopCheck& stop) const;
  // OK when `field` may be written by `rpc` here (ServicePolicy::allow_push, or a created field).
  absl::Status CheckWritable(const std::string& rpc, const std::string& field) const;
  absl::Status DoPush(const v1::PushRequest& req) const;
  // A node field of the config, else one created at run time.
  absl::StatusOr<core::FieldSchema> NodeField(const std::string& name) const;
  absl::Status DoCreateNodeField(const v1::CreateNodeFieldRequest& req, v1::CreateNodeFieldResponse* resp) const;
  absl::Status DoSparseUpdate(const v1::SparseUpdateRequest& req) const;
  absl::Status DoSample(const v1::SampleRequest& req, v1::SampleResponse* resp, const StopCheck& stop) const;
  absl::Status DoDegrees(const v1::DegreesRequest& req, v1::DegreesResponse* resp) const;
  absl::Status DoFindEdges(const v1::FindEdgesRequest& req, v1::FindEdgesResponse* resp) const;
  absl::Status DoGetStats(v1::GetStatsResponse* resp) const;

  // The first half of a shutdown: from now on calls are refused UNAVAILABLE (the server is
  // stopping), and this waits until every call admitted before has sent its answer, or until
  // `deadline`. gRPC's own Shutdown(deadline) also waits for every connection to close, which a
  // client that stopped answering never does; GraphServer::Shutdown drains here first.
  void Drain(std::chrono::steady_clock::time_point deadline);
  // Calls admitted and not yet answered (running or queued), and whether Drain has begun.
  int64_t active_calls() const { return active_calls_.load(); }
  bool draining() const { return draining_.load(); }

 private:
  class CountedReactor;

  // Admits the call (token, cancellation, deadline, queue room), runs `work` on the pool
  // (dropping it unstarted if the call was abandoned while queued, catching anything it throws),
  // records it in the stats and finishes the reactor with its status. `inline_work` runs cheap
  // calls on gRPC's thread instead, so a queue of heavy calls never delays them.
  grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* ctx, const char* method,
                                const google::protobuf::Message* req, google::protobuf::Message* resp,
                                std::function<absl::Status(const StopCheck&)> work, bool inline_work = false);
  absl::Status Authenticate(const grpc::CallbackServerContext& ctx) const;
  absl::StatusOr<std::vector<int64_t>> Ids(const v1::Tensor& t, const char* what) const;
  absl::Status CheckPushValues(const core::FieldSchema& f, const v1::Tensor& data) const;

  ServedPartition served_;
  const core::PartitionConfig& config_;
  core::RangePartitionBook node_book_, edge_book_;
  ServerStats* stats_;
  base::ThreadPool* pool_;
  ServicePolicy policy_;
  std::atomic<int64_t> queued_bytes_{0};
  std::atomic<int64_t> active_calls_{0};  // reactors not yet done (answer not yet sent)
  std::atomic<bool> draining_{false};
};

}  // namespace fanout::server

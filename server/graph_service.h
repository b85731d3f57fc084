// The gRPC adapter of fanout.v1.GraphService: converts requests into PartitionStore and sampling
// calls on an owned worker pool and their results (or errors) back into responses. It holds no
// graph state of its own; the logic lives in core::PartitionStore and core::SampleNeighbors.
#pragma once

#include <cstdint>
#include <functional>

#include "core/partition_store.h"
#include "fanout/v1/graph.grpc.pb.h"
#include "server/server_stats.h"
#include "server/thread_pool.h"

namespace fanout::server {

// Request limits; exceeding one is RESOURCE_EXHAUSTED with a message naming the limit.
struct ServiceLimits {
  int64_t max_ids_per_request = 4 << 20;       // IDs (seeds, eids) in one request
  int64_t max_response_bytes = 256ll << 20;    // pulled rows or sampled edges in one answer
};

class GraphServiceImpl final : public v1::GraphService::CallbackService {
 public:
  // All pointers must outlive the service. Thread-safe.
  GraphServiceImpl(core::PartitionStore* store, ServerStats* stats, ThreadPool* pool, ServiceLimits limits)
      : store_(store), stats_(stats), pool_(pool), limits_(limits) {}

  grpc::ServerUnaryReactor* GetMetadata(grpc::CallbackServerContext* ctx, const v1::GetMetadataRequest* req,
                                        v1::GetMetadataResponse* resp) override;
  grpc::ServerUnaryReactor* PullNodeData(grpc::CallbackServerContext* ctx, const v1::PullRequest* req,
                                         v1::PullResponse* resp) override;
  grpc::ServerUnaryReactor* PullEdgeData(grpc::CallbackServerContext* ctx, const v1::PullRequest* req,
                                         v1::PullResponse* resp) override;
  grpc::ServerUnaryReactor* PushNodeData(grpc::CallbackServerContext* ctx, const v1::PushRequest* req,
                                         v1::PushResponse* resp) override;
  grpc::ServerUnaryReactor* SampleNeighbors(grpc::CallbackServerContext* ctx, const v1::SampleRequest* req,
                                            v1::SampleResponse* resp) override;
  grpc::ServerUnaryReactor* GetDegrees(grpc::CallbackServerContext* ctx, const v1::DegreesRequest* req,
                                       v1::DegreesResponse* resp) override;
  grpc::ServerUnaryReactor* FindEdges(grpc::CallbackServerContext* ctx, const v1::FindEdgesRequest* req,
                                      v1::FindEdgesResponse* resp) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* ctx, const v1::GetStatsRequest* req,
                                     v1::GetStatsResponse* resp) override;

 private:
  // Runs `work` on the pool (catching anything it throws), records the call in the stats and
  // finishes the reactor with its status.
  grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* ctx, const char* method,
                                const google::protobuf::Message* req, google::protobuf::Message* resp,
                                std::function<absl::Status()> work);
  absl::StatusOr<std::vector<int64_t>> Ids(const v1::Tensor& t, const char* what) const;
  absl::Status Pull(const v1::PullRequest& req, bool node, v1::PullResponse* resp);

  core::PartitionStore* store_;
  ServerStats* stats_;
  ThreadPool* pool_;
  ServiceLimits limits_;
};

}  // namespace fanout::server

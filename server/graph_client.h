// A typed C++ client of fanout.v1.GraphService. Every call carries a deadline; reads are retried
// on UNAVAILABLE with exponential back-off inside that deadline; pushes are never retried (an add
// is not idempotent). Errors keep the server's status code and name the server's address.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/partition_store.h"
#include "core/sampling.h"
#include "fanout/v1/graph.grpc.pb.h"
#include "server/security.h"

namespace fanout::server {

struct ClientOptions {
  double deadline_seconds = 30;          // per call, retries included
  int max_attempts = 4;                  // for reads, on UNAVAILABLE
  int64_t max_message_bytes = 512ll << 20;
  bool own_connection = false;           // a TCP connection of its own, not shared with other clients
  Security security;                     // TLS and token (default: plaintext, no token)
};

// Rows returned by a pull: `data` holds shape[0] rows of `dtype`, C order.
struct Rows {
  core::DType dtype = core::DType::kFloat32;
  std::vector<int64_t> shape;
  std::string data;
};

// Thread-safe (one channel, shared).
class GraphClient {
 public:
  static std::unique_ptr<GraphClient> Connect(const std::string& address, const ClientOptions& options = {});

  const std::string& address() const { return address_; }
  // Waits until the channel is connected, up to `seconds`.
  absl::Status WaitForReady(double seconds);

  absl::StatusOr<v1::GetMetadataResponse> GetMetadata();
  absl::StatusOr<Rows> PullNodeData(const std::string& field, const std::vector<int64_t>& ids);
  absl::StatusOr<Rows> PullEdgeData(const std::string& field, const std::vector<int64_t>& ids);
  absl::Status PushNodeData(const std::string& field, const std::vector<int64_t>& ids, const Rows& rows,
                            core::PushOp op);
  absl::StatusOr<core::SampledEdges> SampleNeighbors(const std::vector<int64_t>& seeds,
                                                     const core::SampleOptions& options);
  absl::StatusOr<std::vector<int64_t>> GetDegrees(const std::vector<int64_t>& ids, core::EdgeDir dir);
  absl::StatusOr<std::pair<std::vector<int64_t>, std::vector<int64_t>>> FindEdges(const std::vector<int64_t>& eids);
  absl::StatusOr<v1::GetStatsResponse> GetStats();

 private:
  GraphClient(std::string address, ClientOptions options, std::shared_ptr<grpc::Channel> channel);
  template <typename Req, typename Resp, typename Call>
  absl::Status Invoke(const char* method, const Req& req, Resp* resp, bool retry, Call call);
  using PullMethod = grpc::Status (v1::GraphService::Stub::*)(grpc::ClientContext*, const v1::PullRequest&,
                                                             v1::PullResponse*);
  absl::StatusOr<Rows> Pull(const char* method, const std::string& field, const std::vector<int64_t>& ids,
                            PullMethod call);

  std::string address_;
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::GraphService::Stub> stub_;
};

}  // namespace fanout::server

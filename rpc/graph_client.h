// A typed C++ client of fanout.v1.GraphService on gRPC's asynchronous (callback) API. Every call
// carries a deadline; reads are retried on UNAVAILABLE with exponential back-off inside that
// deadline (a timer, no sleeping thread); pushes are never retried (an add is not idempotent).
// Errors keep the server's status code and name the server's address. The blocking methods are
// the asynchronous ones waited for; no call starts a thread.
#pragma once

#include <grpcpp/alarm.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/dtype.h"
#include "core/graph_source.h"
#include "core/partition_store.h"
#include "core/sampling.h"
#include "core/sparse_optim.h"
#include "fanout/v1/graph.grpc.pb.h"
#include "rpc/client_options.h"
#include "rpc/security.h"

namespace fanout::rpc {


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
  // A zero-filled node field in the server's memory (fanout.distributed's DistTensor); true when
  // this call made it, false when it existed with this schema. With `node_type`, rows for that
  // type's nodes only, addressed as "TYPE/NAME" (learnable embeddings).
  // `shared` (optional): where the server keeps the rows in shared memory (unset: its heap).
  absl::StatusOr<bool> CreateNodeField(const std::string& name, core::DType dtype, const std::vector<int64_t>& row_shape,
                                       const std::string& node_type = "", v1::SharedField* shared = nullptr);
  // One sparse optimizer step on the rows of created field `field` for `ids` (distinct), with
  // their state in `state_field` and `grads` ([ids.size(), dim] float32): the server applies it.
  absl::Status SparseUpdate(const std::string& field, const std::string& state_field, const std::vector<int64_t>& ids,
                            const float* grads, int64_t dim, const core::SparseOptimizerOptions& options);
  absl::StatusOr<core::SampledEdges> SampleNeighbors(const std::vector<int64_t>& seeds,
                                                     const core::SampleOptions& options);
  absl::StatusOr<std::vector<int64_t>> GetDegrees(const std::vector<int64_t>& ids, core::EdgeDir dir);
  absl::StatusOr<std::pair<std::vector<int64_t>, std::vector<int64_t>>> FindEdges(const std::vector<int64_t>& eids);
  absl::StatusOr<v1::GetStatsResponse> GetStats();

  // Asynchronous forms: `done` runs exactly once, on a gRPC thread (or on the caller's, for a
  // request that cannot be sent), after the answer has been checked and written to the outputs;
  // the caller keeps the spans and outputs alive until then.
  void SampleNeighborsAsync(std::span<const int64_t> seeds, const core::SampleOptions& options,
                            core::SampledEdges* out, core::Done done);
  // Node (or edge) rows: row i of the answer goes to out + positions[i] * row_bytes.
  void PullRowsAsync(bool node, const std::string& field, size_t row_bytes, std::span<const int64_t> ids,
                     std::span<const int64_t> positions, char* out, core::Done done);
  void GetDegreesAsync(std::span<const int64_t> ids, core::EdgeDir dir, int64_t* out, core::Done done);
  void FindEdgesAsync(std::span<const int64_t> eids, int64_t* src, int64_t* dst, core::Done done);

 private:
  GraphClient(std::string address, ClientOptions options, std::shared_ptr<grpc::Channel> channel);
  // One RPC with its retries; owned by itself from Start until its callback has run.
  template <typename Req, typename Resp>
  struct Call;
  template <typename Req, typename Resp>
  using StartFn = void (*)(v1::GraphService::Stub::async_interface*, grpc::ClientContext*, const Req*, Resp*,
                           std::function<void(grpc::Status)>);
  template <typename Req, typename Resp>
  void Start(const char* method, Req req, bool retry, StartFn<Req, Resp> start,
             std::function<void(absl::Status, Resp*)> done);
  template <typename Req, typename Resp>
  void Attempt(Call<Req, Resp>* call);
  template <typename Req, typename Resp>
  void Finish(Call<Req, Resp>* call, const grpc::Status& s);
  // Start, waited for; the answer is moved into *resp.
  template <typename Req, typename Resp>
  absl::Status Invoke(const char* method, Req req, Resp* resp, bool retry, StartFn<Req, Resp> start);
  absl::StatusOr<Rows> Pull(bool node, const std::string& field, const std::vector<int64_t>& ids);
  absl::Status Error(const char* method, const absl::Status& s) const;
  // Keeps a finished call's back-off timers alive a while: the timer that started the last attempt
  // may still be returning from its callback on another thread when that attempt completes and
  // the call is deleted, and a grpc::Alarm destroyed under its running callback breaks gRPC's
  // reference counts (seen as "assertion failed: prior > 0" in SafetyTest).
  void Retire(std::vector<std::unique_ptr<grpc::Alarm>> alarms);

  std::string address_;
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::GraphService::Stub> stub_;
  absl::Mutex retired_mu_;
  // Timers of finished calls, oldest first, dropped once 10 s old (long after any callback).
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::unique_ptr<grpc::Alarm>>> retired_
      ABSL_GUARDED_BY(retired_mu_);
};

}  // namespace fanout::rpc

#include "server/graph_client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <thread>

#include "core/status.h"
#include "core/strings.h"
#include "server/rpc_codec.h"

namespace fanout::server {

using core::StrCat;

std::unique_ptr<GraphClient> GraphClient::Connect(const std::string& address, const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(std::min<int64_t>(options.max_message_bytes, INT32_MAX)));
  args.SetMaxSendMessageSize(static_cast<int>(std::min<int64_t>(options.max_message_bytes, INT32_MAX)));
  // Channels to one target share a connection unless each has its own subchannel pool.
  if (options.own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // Feature pulls are MB-sized: a large HTTP/2 stream window and frames keep one call from
  // stalling on flow control (see docs/benchmarks.md).
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 << 20);
  args.SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, 16 << 20);
  options.security.ApplyTo(&args);
  auto channel = grpc::CreateCustomChannel(address, options.security.ChannelCredentials(), args);
  return std::unique_ptr<GraphClient>(new GraphClient(address, options, std::move(channel)));
}

GraphClient::GraphClient(std::string address, ClientOptions options, std::shared_ptr<grpc::Channel> channel)
    : address_(std::move(address)), options_(options), channel_(std::move(channel)),
      stub_(v1::GraphService::NewStub(channel_)) {}

absl::Status GraphClient::WaitForReady(double seconds) {
  auto deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  if (channel_->WaitForConnected(deadline)) return absl::OkStatus();
  return absl::UnavailableError(StrCat("server ", address_, " not reachable within ", seconds, " s"));
}

template <typename Req, typename Resp, typename Call>
absl::Status GraphClient::Invoke(const char* method, const Req& req, Resp* resp, bool retry, Call call) {
  using Clock = std::chrono::system_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options_.deadline_seconds * 1000));
  auto backoff = std::chrono::milliseconds(50);
  grpc::Status s;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline);
    if (!options_.security.token().empty()) ctx.AddMetadata("authorization", StrCat("Bearer ", options_.security.token()));
    s = call(&ctx, req, resp);
    if (s.ok()) return absl::OkStatus();
    bool again = retry && s.error_code() == grpc::StatusCode::UNAVAILABLE && attempt < options_.max_attempts &&
                 Clock::now() + backoff < deadline;
    if (!again) break;
    std::this_thread::sleep_for(backoff);
    backoff *= 2;
  }
  absl::Status a = FromGrpcStatus(s);
  return absl::Status(a.code(), StrCat("server ", address_, ": ", method, ": ", a.message()));
}

absl::StatusOr<v1::GetMetadataResponse> GraphClient::GetMetadata() {
  v1::GetMetadataResponse resp;
  RETURN_IF_ERROR(Invoke("GetMetadata", v1::GetMetadataRequest(), &resp, true,
                         [this](auto* c, const auto& q, auto* r) { return stub_->GetMetadata(c, q, r); }));
  return resp;
}

namespace {
// Takes the rows out of `resp` without copying them.
absl::StatusOr<Rows> ToRows(v1::PullResponse& resp) {
  RETURN_IF_ERROR(CheckTensor(resp.data(), "answer"));
  Rows r;
  ASSIGN_OR_RETURN(r.dtype, FromProtoDType(resp.data().dtype()));
  r.shape.assign(resp.data().shape().begin(), resp.data().shape().end());
  r.data = std::move(*resp.mutable_data()->mutable_data());
  return r;
}
}  // namespace

absl::StatusOr<Rows> GraphClient::PullNodeData(const std::string& field, const std::vector<int64_t>& ids) {
  return Pull("PullNodeData", field, ids, &v1::GraphService::Stub::PullNodeData);
}

absl::StatusOr<Rows> GraphClient::PullEdgeData(const std::string& field, const std::vector<int64_t>& ids) {
  return Pull("PullEdgeData", field, ids, &v1::GraphService::Stub::PullEdgeData);
}

absl::StatusOr<Rows> GraphClient::Pull(const char* method, const std::string& field, const std::vector<int64_t>& ids,
                                       PullMethod call) {
  v1::PullRequest req;
  req.set_field(field);
  FillInt64Tensor(ids, req.mutable_ids());
  v1::PullResponse resp;
  RETURN_IF_ERROR(Invoke(method, req, &resp, true,
                         [this, call](auto* c, const auto& q, auto* r) { return (stub_.get()->*call)(c, q, r); }));
  ASSIGN_OR_RETURN(Rows rows, ToRows(resp));
  if (rows.shape.empty() || rows.shape[0] != static_cast<int64_t>(ids.size())) {
    return absl::InternalError(StrCat("server ", address_, ": ", method, " answered ",
                                      rows.shape.empty() ? 0 : rows.shape[0], " rows for ", ids.size(), " IDs"));
  }
  return rows;
}

absl::Status GraphClient::PushNodeData(const std::string& field, const std::vector<int64_t>& ids, const Rows& rows,
                                       core::PushOp op) {
  v1::PushRequest req;
  req.set_field(field);
  FillInt64Tensor(ids, req.mutable_ids());
  FillTensor(rows.dtype, rows.shape, rows.data, req.mutable_data());
  req.set_op(op == core::PushOp::kAdd ? v1::PUSH_OP_ADD : v1::PUSH_OP_ASSIGN);
  v1::PushResponse resp;
  return Invoke("PushNodeData", req, &resp, false,
                [this](auto* c, const auto& q, auto* r) { return stub_->PushNodeData(c, q, r); });
}

absl::StatusOr<core::SampledEdges> GraphClient::SampleNeighbors(const std::vector<int64_t>& seeds,
                                                                const core::SampleOptions& o) {
  v1::SampleRequest req;
  FillInt64Tensor(seeds, req.mutable_seeds());
  req.set_fanout(o.fanout);
  req.set_replace(o.replace);
  req.set_dir(o.dir == core::EdgeDir::kOut ? v1::EDGE_DIR_OUT : v1::EDGE_DIR_IN);
  req.set_weight_field(o.weight_field);
  req.set_seed(o.seed);
  v1::SampleResponse resp;
  RETURN_IF_ERROR(Invoke("SampleNeighbors", req, &resp, true,
                         [this](auto* c, const auto& q, auto* r) { return stub_->SampleNeighbors(c, q, r); }));
  core::SampledEdges e;
  ASSIGN_OR_RETURN(e.src, Int64Vector(resp.src(), "src"));
  ASSIGN_OR_RETURN(e.dst, Int64Vector(resp.dst(), "dst"));
  ASSIGN_OR_RETURN(e.eid, Int64Vector(resp.eid(), "eid"));
  if (e.src.size() != e.eid.size() || e.dst.size() != e.eid.size()) {
    return absl::InternalError(StrCat("server ", address_, ": SampleNeighbors answered ", e.src.size(), " sources, ",
                                      e.dst.size(), " destinations and ", e.eid.size(), " edge IDs"));
  }
  return e;
}

absl::StatusOr<std::vector<int64_t>> GraphClient::GetDegrees(const std::vector<int64_t>& ids, core::EdgeDir dir) {
  v1::DegreesRequest req;
  FillInt64Tensor(ids, req.mutable_ids());
  req.set_dir(dir == core::EdgeDir::kOut ? v1::EDGE_DIR_OUT : v1::EDGE_DIR_IN);
  v1::DegreesResponse resp;
  RETURN_IF_ERROR(Invoke("GetDegrees", req, &resp, true,
                         [this](auto* c, const auto& q, auto* r) { return stub_->GetDegrees(c, q, r); }));
  ASSIGN_OR_RETURN(std::vector<int64_t> deg, Int64Vector(resp.degrees(), "degrees"));
  if (deg.size() != ids.size()) {
    return absl::InternalError(StrCat("server ", address_, ": GetDegrees answered ", deg.size(), " degrees for ",
                                      ids.size(), " IDs"));
  }
  return deg;
}

absl::StatusOr<std::pair<std::vector<int64_t>, std::vector<int64_t>>> GraphClient::FindEdges(
    const std::vector<int64_t>& eids) {
  v1::FindEdgesRequest req;
  FillInt64Tensor(eids, req.mutable_eids());
  v1::FindEdgesResponse resp;
  RETURN_IF_ERROR(Invoke("FindEdges", req, &resp, true,
                         [this](auto* c, const auto& q, auto* r) { return stub_->FindEdges(c, q, r); }));
  ASSIGN_OR_RETURN(auto src, Int64Vector(resp.src(), "src"));
  ASSIGN_OR_RETURN(auto dst, Int64Vector(resp.dst(), "dst"));
  if (src.size() != eids.size() || dst.size() != eids.size()) {
    return absl::InternalError(StrCat("server ", address_, ": FindEdges answered ", src.size(), " sources and ",
                                      dst.size(), " destinations for ", eids.size(), " edge IDs"));
  }
  return std::pair{std::move(src), std::move(dst)};
}

absl::StatusOr<v1::GetStatsResponse> GraphClient::GetStats() {
  v1::GetStatsResponse resp;
  RETURN_IF_ERROR(Invoke("GetStats", v1::GetStatsRequest(), &resp, true,
                         [this](auto* c, const auto& q, auto* r) { return stub_->GetStats(c, q, r); }));
  return resp;
}

}  // namespace fanout::server

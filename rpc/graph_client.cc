#include "rpc/graph_client.h"

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstring>
#include <future>

#include "base/status.h"
#include "base/strings.h"
#include "core/feature_codec.h"
#include "rpc/rpc_codec.h"

namespace fanout::rpc {

using base::StrCat;

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
  // A cut link makes no TCP error for minutes: while calls are in flight the channel pings the
  // server, and a ping unanswered for kKeepaliveTimeoutMs ends the connection, so that the calls
  // fail (UNAVAILABLE) and a partition's other servers take them (RemoteGraphSource); a new
  // connection to a silent host gives up after kConnectTimeoutMs instead of gRPC's 20 s. Both are
  // far above what a slow link needs (a ping waits behind at most a socket buffer: ~3 s at
  // 10 Mbit/s). Servers accept pings this often (GraphServer).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kConnectTimeoutMs);
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

template <typename Req, typename Resp>
struct GraphClient::Call {
  const char* method;
  bool retry;
  Req req;
  Resp resp;
  StartFn<Req, Resp> start;
  std::function<void(absl::Status, Resp*)> done;
  std::chrono::system_clock::time_point deadline;
  std::chrono::milliseconds backoff{50};
  int attempt = 0;
  std::unique_ptr<grpc::ClientContext> ctx;
  // Back-off timers; kept until the call is deleted (never from inside a timer's own callback).
  std::vector<std::unique_ptr<grpc::Alarm>> alarms;
};

template <typename Req, typename Resp>
void GraphClient::Start(const char* method, Req req, bool retry, StartFn<Req, Resp> start,
                        std::function<void(absl::Status, Resp*)> done) {
  auto* call = new Call<Req, Resp>{method, retry, std::move(req), Resp(), start, std::move(done)};
  call->deadline = std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(options_.deadline_seconds * 1000));
  Attempt(call);
}

template <typename Req, typename Resp>
void GraphClient::Attempt(Call<Req, Resp>* call) {
  ++call->attempt;
  call->ctx = std::make_unique<grpc::ClientContext>();
  call->ctx->set_deadline(call->deadline);
  if (!options_.security.token().empty()) {
    call->ctx->AddMetadata("authorization", StrCat("Bearer ", options_.security.token()));
  }
  call->resp.Clear();
  call->start(stub_->async(), call->ctx.get(), &call->req, &call->resp,
              [this, call](grpc::Status s) { Finish(call, s); });
}

namespace {

// What a call's bytes count as (base/wire_counters.h).
base::WireKind WireKindOf(std::string_view method) {
  if (method == "SampleNeighbors") return base::WireKind::kSampling;
  if (method == "PullNodeData" || method == "PullEdgeData") return base::WireKind::kRowPulls;
  if (method == "PushNodeData" || method == "SparseUpdate" || method == "CreateNodeField") {
    return base::WireKind::kRowWrites;
  }
  return base::WireKind::kControl;
}

}  // namespace

template <typename Req, typename Resp>
void GraphClient::Finish(Call<Req, Resp>* call, const grpc::Status& s) {
  using Clock = std::chrono::system_clock;
  if (options_.wire != nullptr) {  // every attempt sent its request; an answer came with success
    options_.wire->Add(WireKindOf(call->method), static_cast<int64_t>(call->req.ByteSizeLong()),
                       s.ok() ? static_cast<int64_t>(call->resp.ByteSizeLong()) : 0);
  }
  const bool again = !s.ok() && call->retry && s.error_code() == grpc::StatusCode::UNAVAILABLE &&
                     call->attempt < options_.max_attempts && Clock::now() + call->backoff < call->deadline;
  if (!again) {
    // `done` may let its owner destroy this client (a caller blocked in Invoke returns at once),
    // so everything that touches the client happens first: the answer's message, the retired
    // timers, and the call's context, whose reference to the channel must not be the last one
    // dropped on gRPC's own callback thread (that would tear gRPC's callback queue down from
    // inside it). After `done`, only the call itself is freed.
    const absl::Status result = s.ok() ? absl::OkStatus() : Error(call->method, FromGrpcStatus(s));
    Retire(std::move(call->alarms));
    call->ctx.reset();
    call->done(result, s.ok() ? &call->resp : nullptr);
    delete call;
    return;
  }
  auto alarm = std::make_unique<grpc::Alarm>();
  grpc::Alarm* timer = alarm.get();
  call->alarms.push_back(std::move(alarm));
  const grpc::Status last = s;
  timer->Set(Clock::now() + call->backoff, [this, call, last](bool fired) {
    if (fired) return Attempt(call);
    // Cancelled: only when gRPC shuts down under a pending retry. The call is left to leak
    // rather than deleted from inside its own timer's callback.
    call->done(Error(call->method, FromGrpcStatus(last)), nullptr);
  });
  call->backoff *= 2;
}

template <typename Req, typename Resp>
absl::Status GraphClient::Invoke(const char* method, Req req, Resp* resp, bool retry, StartFn<Req, Resp> start) {
  // Shared: the callback may still be inside set_value when this frame has returned.
  auto result = std::make_shared<std::promise<absl::Status>>();
  std::future<absl::Status> ready = result->get_future();
  Start<Req, Resp>(method, std::move(req), retry, start, [result, resp](absl::Status s, Resp* r) {
    if (s.ok()) *resp = std::move(*r);
    result->set_value(std::move(s));
  });
  return ready.get();
}

void GraphClient::Retire(std::vector<std::unique_ptr<grpc::Alarm>> alarms) {
  if (alarms.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<grpc::Alarm>> expired;  // destroyed outside the lock
  absl::MutexLock lock(&retired_mu_);
  while (!retired_.empty() && now - retired_.front().first > std::chrono::seconds(10)) {
    expired.push_back(std::move(retired_.front().second));
    retired_.pop_front();
  }
  for (auto& a : alarms) retired_.emplace_back(now, std::move(a));
}

absl::Status GraphClient::Error(const char* method, const absl::Status& s) const {
  return absl::Status(s.code(), StrCat("server ", address_, ": ", method, ": ", s.message()));
}

// The callback forms of the stub's methods, as StartFns.
#define FANOUT_ASYNC_METHOD(Method, Req, Resp)                                                      \
  +[](v1::GraphService::Stub::async_interface* a, grpc::ClientContext* c, const v1::Req* q, v1::Resp* r, \
     std::function<void(grpc::Status)> f) { a->Method(c, q, r, std::move(f)); }

absl::StatusOr<v1::GetMetadataResponse> GraphClient::GetMetadata() {
  v1::GetMetadataResponse resp;
  RETURN_IF_ERROR(Invoke("GetMetadata", v1::GetMetadataRequest(), &resp, true,
                         FANOUT_ASYNC_METHOD(GetMetadata, GetMetadataRequest, GetMetadataResponse)));
  return resp;
}

absl::StatusOr<v1::GetStatsResponse> GraphClient::GetStats() {
  v1::GetStatsResponse resp;
  RETURN_IF_ERROR(
      Invoke("GetStats", v1::GetStatsRequest(), &resp, true, FANOUT_ASYNC_METHOD(GetStats, GetStatsRequest, GetStatsResponse)));
  return resp;
}

namespace {

std::vector<int64_t> ToVector(std::span<const int64_t> ids) { return std::vector<int64_t>(ids.begin(), ids.end()); }

// The rows of a pull's answer, checked: `n` rows in a tensor; their size is the caller's to check.
absl::Status CheckRows(const v1::PullResponse& resp, size_t n) {
  RETURN_IF_ERROR(CheckTensor(resp.data(), "answer"));
  const auto& shape = resp.data().shape();
  if (shape.empty() || shape[0] != static_cast<int64_t>(n)) {
    return absl::InternalError(StrCat("answered ", shape.empty() ? 0 : shape[0], " rows for ", n, " IDs"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Rows> GraphClient::PullNodeData(const std::string& field, const std::vector<int64_t>& ids) {
  return Pull(true, field, ids);
}

absl::StatusOr<Rows> GraphClient::PullEdgeData(const std::string& field, const std::vector<int64_t>& ids) {
  return Pull(false, field, ids);
}

absl::StatusOr<Rows> GraphClient::Pull(bool node, const std::string& field, const std::vector<int64_t>& ids) {
  v1::PullRequest req;
  req.set_field(field);
  FillInt64Tensor(ids, req.mutable_ids());
  v1::PullResponse resp;
  const char* method = node ? "PullNodeData" : "PullEdgeData";
  RETURN_IF_ERROR(Invoke(method, std::move(req), &resp, true,
                         node ? FANOUT_ASYNC_METHOD(PullNodeData, PullRequest, PullResponse)
                              : FANOUT_ASYNC_METHOD(PullEdgeData, PullRequest, PullResponse)));
  if (absl::Status s = CheckRows(resp, ids.size()); !s.ok()) return Error(method, s);
  Rows r;
  ASSIGN_OR_RETURN(r.dtype, FromProtoDType(resp.data().dtype()));
  r.shape.assign(resp.data().shape().begin(), resp.data().shape().end());
  r.data = std::move(*resp.mutable_data()->mutable_data());  // taken, not copied
  return r;
}

void GraphClient::PullRowsAsync(bool node, const std::string& field, size_t row_bytes, std::span<const int64_t> ids,
                                std::span<const int64_t> positions, char* out, core::Done done) {
  v1::PullRequest req;
  req.set_field(field);
  FillInt64Tensor(ToVector(ids), req.mutable_ids());
  req.set_rows_as_bfloat16(options_.rows_as_bfloat16);
  const char* method = node ? "PullNodeData" : "PullEdgeData";
  Start<v1::PullRequest, v1::PullResponse>(
      method, std::move(req), true,
      node ? FANOUT_ASYNC_METHOD(PullNodeData, PullRequest, PullResponse)
           : FANOUT_ASYNC_METHOD(PullEdgeData, PullRequest, PullResponse),
      [this, method, row_bytes, positions, out, done = std::move(done)](absl::Status s, v1::PullResponse* resp) {
        if (!s.ok()) return done(std::move(s));
        if (absl::Status c = CheckRows(*resp, positions.size()); !c.ok()) return done(Error(method, c));
        const std::string& data = resp->data().data();
        // bfloat16 rows (asked for with ClientOptions::rows_as_bfloat16) are widened back to
        // float32 as they are placed: half the bytes on the wire, the same row layout here.
        const size_t wire_row = resp->rows_as_bfloat16() ? row_bytes / 2 : row_bytes;
        if (data.size() != positions.size() * wire_row || (resp->rows_as_bfloat16() && row_bytes % 4 != 0)) {
          return done(Error(method, absl::InternalError(StrCat("answered ", data.size(), " bytes for ", positions.size(),
                                                               " rows of ", row_bytes, " bytes"))));
        }
        for (size_t i = 0; i < positions.size(); ++i) {
          char* row = out + positions[i] * row_bytes;
          if (resp->rows_as_bfloat16()) {
            core::DecodeRows(core::FeatureCodec::kBFloat16, data.data() + i * wire_row, 1,
                             static_cast<int64_t>(row_bytes / 4), reinterpret_cast<float*>(row));
          } else {
            std::memcpy(row, data.data() + i * row_bytes, row_bytes);
          }
        }
        done(absl::OkStatus());
      });
}

absl::Status GraphClient::PushNodeData(const std::string& field, const std::vector<int64_t>& ids, const Rows& rows,
                                       core::PushOp op) {
  v1::PushRequest req;
  req.set_field(field);
  FillInt64Tensor(ids, req.mutable_ids());
  FillTensor(rows.dtype, rows.shape, rows.data, req.mutable_data());
  req.set_op(op == core::PushOp::kAdd ? v1::PUSH_OP_ADD : v1::PUSH_OP_ASSIGN);
  v1::PushResponse resp;
  return Invoke("PushNodeData", std::move(req), &resp, false, FANOUT_ASYNC_METHOD(PushNodeData, PushRequest, PushResponse));
}

absl::Status GraphClient::SparseUpdate(const std::string& field, const std::string& state_field,
                                       const std::vector<int64_t>& ids, const float* grads, int64_t dim,
                                       const core::SparseOptimizerOptions& o) {
  v1::SparseUpdateRequest req;
  req.set_field(field);
  req.set_state_field(state_field);
  FillInt64Tensor(ids, req.mutable_ids());
  FillTensor(core::DType::kFloat32, {static_cast<int64_t>(ids.size()), dim},
             std::string(reinterpret_cast<const char*>(grads), ids.size() * dim * sizeof(float)), req.mutable_grads());
  req.set_optimizer(o.kind == core::SparseOptimizerKind::kAdam ? v1::SPARSE_ADAM : v1::SPARSE_ADAGRAD);
  req.set_lr(o.lr);
  req.set_beta1(o.beta1);
  req.set_beta2(o.beta2);
  req.set_eps(o.eps);
  v1::SparseUpdateResponse resp;
  // Not idempotent (a second step moves the rows again): never retried.
  return Invoke("SparseUpdate", std::move(req), &resp, false,
                FANOUT_ASYNC_METHOD(SparseUpdate, SparseUpdateRequest, SparseUpdateResponse));
}

absl::StatusOr<bool> GraphClient::CreateNodeField(const std::string& name, core::DType dtype,
                                                  const std::vector<int64_t>& row_shape, const std::string& node_type,
                                                  v1::SharedField* shared) {
  v1::CreateNodeFieldRequest req;
  req.set_name(name);
  req.set_node_type(node_type);
  req.set_dtype(ToProtoDType(dtype));
  for (int64_t d : row_shape) req.add_row_shape(d);
  v1::CreateNodeFieldResponse resp;
  // Retried like a read: creating a field that exists with this schema is not an error.
  RETURN_IF_ERROR(Invoke("CreateNodeField", std::move(req), &resp, true,
                         FANOUT_ASYNC_METHOD(CreateNodeField, CreateNodeFieldRequest, CreateNodeFieldResponse)));
  if (shared != nullptr) *shared = resp.shared();
  return resp.created();
}

namespace {

v1::SampleRequest SampleRequestOf(std::span<const int64_t> seeds, const core::SampleOptions& o) {
  v1::SampleRequest req;
  FillInt64Tensor(ToVector(seeds), req.mutable_seeds());
  req.set_fanout(o.fanout);
  req.set_replace(o.replace);
  req.set_dir(o.dir == core::EdgeDir::kOut ? v1::EDGE_DIR_OUT : v1::EDGE_DIR_IN);
  req.set_weight_field(o.weight_field);
  req.set_seed(o.seed);
  if (o.etype >= 0) req.set_etype(o.etype);
  req.mutable_etype_fanouts()->Assign(o.etype_fanouts.begin(), o.etype_fanouts.end());
  req.set_compact(true);
  return req;
}

// The destinations of a compact answer: each (seed position, count) run of dst_runs expanded.
absl::Status ReadDstRuns(const v1::Tensor& t, std::span<const int64_t> seeds, size_t edges, std::vector<int64_t>* dst) {
  ASSIGN_OR_RETURN(const std::vector<int32_t> runs, Int32Vector(t, "dst_runs"));
  if (runs.size() % 2 != 0) return absl::InternalError(StrCat("dst_runs holds ", runs.size(), " values, not pairs"));
  dst->clear();
  dst->reserve(edges);
  for (size_t r = 0; r < runs.size(); r += 2) {
    const int32_t at = runs[r], count = runs[r + 1];
    if (at < 0 || static_cast<size_t>(at) >= seeds.size() || count < 0 || dst->size() + count > edges) {
      return absl::InternalError(StrCat("dst_runs pair ", r / 2, " (", at, ", ", count, ") does not fit ", seeds.size(),
                                        " seeds and ", edges, " edges"));
    }
    dst->insert(dst->end(), static_cast<size_t>(count), seeds[at]);
  }
  if (dst->size() != edges) return absl::InternalError(StrCat("dst_runs cover ", dst->size(), " of ", edges, " edges"));
  return absl::OkStatus();
}

absl::Status ReadSample(const v1::SampleResponse& resp, std::span<const int64_t> seeds, core::SampledEdges* e) {
  ASSIGN_OR_RETURN(e->src, IdVector(resp.src(), "src"));
  ASSIGN_OR_RETURN(e->eid, IdVector(resp.eid(), "eid"));
  if (resp.has_dst_runs()) {
    RETURN_IF_ERROR(ReadDstRuns(resp.dst_runs(), seeds, e->eid.size(), &e->dst));
  } else {
    ASSIGN_OR_RETURN(e->dst, Int64Vector(resp.dst(), "dst"));
  }
  e->etype.clear();
  if (resp.has_etype()) {
    ASSIGN_OR_RETURN(e->etype, Int32Vector(resp.etype(), "etype"));
  }
  if (e->src.size() != e->eid.size() || e->dst.size() != e->eid.size() ||
      (!e->etype.empty() && e->etype.size() != e->eid.size())) {
    return absl::InternalError(StrCat("answered ", e->src.size(), " sources, ", e->dst.size(), " destinations, ",
                                      e->eid.size(), " edge IDs and ", e->etype.size(), " edge types"));
  }
  return absl::OkStatus();
}

// A degree or endpoint answer: exactly `n` int64 values, copied to out.
absl::Status ReadInt64s(const v1::Tensor& t, const char* what, size_t n, int64_t* out) {
  ASSIGN_OR_RETURN(std::vector<int64_t> v, Int64Vector(t, what));
  if (v.size() != n) return absl::InternalError(StrCat("answered ", v.size(), " ", what, " for ", n, " IDs"));
  std::copy(v.begin(), v.end(), out);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<core::SampledEdges> GraphClient::SampleNeighbors(const std::vector<int64_t>& seeds,
                                                                const core::SampleOptions& o) {
  core::SampledEdges e;
  RETURN_IF_ERROR(core::WaitFor([&](core::Done d) { SampleNeighborsAsync(seeds, o, &e, std::move(d)); }));
  return e;
}

void GraphClient::SampleNeighborsAsync(std::span<const int64_t> seeds, const core::SampleOptions& o,
                                       core::SampledEdges* out, core::Done done) {
  Start<v1::SampleRequest, v1::SampleResponse>(
      "SampleNeighbors", SampleRequestOf(seeds, o), true, FANOUT_ASYNC_METHOD(SampleNeighbors, SampleRequest, SampleResponse),
      [this, seeds, out, done = std::move(done)](absl::Status s, v1::SampleResponse* resp) {
        if (!s.ok()) return done(std::move(s));
        s = ReadSample(*resp, seeds, out);
        done(s.ok() ? s : Error("SampleNeighbors", s));
      });
}

absl::StatusOr<std::vector<int64_t>> GraphClient::GetDegrees(const std::vector<int64_t>& ids, core::EdgeDir dir) {
  std::vector<int64_t> deg(ids.size());
  RETURN_IF_ERROR(core::WaitFor([&](core::Done d) { GetDegreesAsync(ids, dir, deg.data(), std::move(d)); }));
  return deg;
}

void GraphClient::GetDegreesAsync(std::span<const int64_t> ids, core::EdgeDir dir, int64_t* out, core::Done done) {
  v1::DegreesRequest req;
  FillInt64Tensor(ToVector(ids), req.mutable_ids());
  req.set_dir(dir == core::EdgeDir::kOut ? v1::EDGE_DIR_OUT : v1::EDGE_DIR_IN);
  const size_t n = ids.size();
  Start<v1::DegreesRequest, v1::DegreesResponse>(
      "GetDegrees", std::move(req), true, FANOUT_ASYNC_METHOD(GetDegrees, DegreesRequest, DegreesResponse),
      [this, n, out, done = std::move(done)](absl::Status s, v1::DegreesResponse* resp) {
        if (!s.ok()) return done(std::move(s));
        s = ReadInt64s(resp->degrees(), "degrees", n, out);
        done(s.ok() ? s : Error("GetDegrees", s));
      });
}

absl::StatusOr<std::pair<std::vector<int64_t>, std::vector<int64_t>>> GraphClient::FindEdges(
    const std::vector<int64_t>& eids) {
  std::vector<int64_t> src(eids.size()), dst(eids.size());
  RETURN_IF_ERROR(core::WaitFor([&](core::Done d) { FindEdgesAsync(eids, src.data(), dst.data(), std::move(d)); }));
  return std::pair{std::move(src), std::move(dst)};
}

void GraphClient::FindEdgesAsync(std::span<const int64_t> eids, int64_t* src, int64_t* dst, core::Done done) {
  v1::FindEdgesRequest req;
  FillInt64Tensor(ToVector(eids), req.mutable_eids());
  const size_t n = eids.size();
  Start<v1::FindEdgesRequest, v1::FindEdgesResponse>(
      "FindEdges", std::move(req), true, FANOUT_ASYNC_METHOD(FindEdges, FindEdgesRequest, FindEdgesResponse),
      [this, n, src, dst, done = std::move(done)](absl::Status s, v1::FindEdgesResponse* resp) {
        if (!s.ok()) return done(std::move(s));
        s = ReadInt64s(resp->src(), "sources", n, src);
        if (s.ok()) s = ReadInt64s(resp->dst(), "destinations", n, dst);
        done(s.ok() ? s : Error("FindEdges", s));
      });
}

#undef FANOUT_ASYNC_METHOD

}  // namespace fanout::rpc

#include "server/graph_service.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <span>
#include <thread>
#include <unordered_map>
#include <exception>

#include "base/check.h"
#include "base/security_options.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/feature_codec.h"
#include "core/sampling.h"
#include "core/shape.h"
#include "rpc/rpc_codec.h"

namespace fanout::server {

using base::StrCat;
using rpc::CheckTensor;
using rpc::FillInt64Tensor;
using rpc::FillTensor;
using rpc::FromProtoDType;
using rpc::Int64Vector;
using rpc::ToGrpcStatus;
using rpc::ToProtoDType;

namespace {

// Why a call should not (or no longer) run, or OK.
absl::Status Abandoned(const grpc::CallbackServerContext& ctx, const char* when) {
  if (const_cast<grpc::CallbackServerContext&>(ctx).IsCancelled()) {
    return absl::CancelledError(StrCat("the call was cancelled (by the client, or the server is stopping) ", when));
  }
  if (std::chrono::system_clock::now() > ctx.deadline()) {
    return absl::DeadlineExceededError(StrCat("the call's deadline passed ", when));
  }
  return absl::OkStatus();
}

absl::Status Guarded(const char* method, const std::function<absl::Status(const StopCheck&)>& work,
                     const StopCheck& stop) {
  try {
    return work(stop);
  } catch (const std::exception& e) {  // a bug, not a request error: never take the server down
    return absl::InternalError(StrCat(method, " failed: ", e.what()));
  }
}

core::RangePartitionBook Book(absl::StatusOr<core::RangePartitionBook> book) {
  FANOUT_CHECK(book.ok()) << book.status();  // LoadPartitionConfig has checked the bounds
  return *std::move(book);
}
}  // namespace

GraphServiceImpl::GraphServiceImpl(ServedPartition served, ServerStats* stats, base::ThreadPool* pool,
                                   ServicePolicy policy)
    : served_(served),
      config_(*served.config),
      node_book_(Book(config_.NodeBook())),
      edge_book_(Book(config_.EdgeBook())),
      stats_(stats),
      pool_(pool),
      policy_(std::move(policy)) {
  FANOUT_CHECK(served_.source != nullptr);
  FANOUT_CHECK(served_.part_id >= 0 && served_.part_id < config_.num_parts);
}

absl::Status GraphServiceImpl::Authenticate(const grpc::CallbackServerContext& ctx) const {
  if (policy_.auth_token.empty()) return absl::OkStatus();
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  const std::string want = StrCat("Bearer ", policy_.auth_token);
  if (it != md.end() && base::SecretsEqual(std::string_view(it->second.data(), it->second.size()), want)) {
    return absl::OkStatus();
  }
  return absl::UnauthenticatedError(StrCat(
      it == md.end() ? "the call carries no auth token" : "the call's auth token is wrong",
      ": this server requires one (give clients the server's --auth-token-file)"));
}

// A unary reactor that counts itself in the service's active calls until gRPC is done with it:
// OnDone comes after the answer and status have been sent (or the call was cancelled).
class GraphServiceImpl::CountedReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit CountedReactor(std::atomic<int64_t>* active) : active_(active) { active_->fetch_add(1); }
  void OnDone() override {
    active_->fetch_sub(1);
    delete this;
  }

 private:
  std::atomic<int64_t>* active_;
};

void GraphServiceImpl::Drain(std::chrono::steady_clock::time_point deadline) {
  draining_.store(true);
  while (active_calls_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

grpc::ServerUnaryReactor* GraphServiceImpl::Run(grpc::CallbackServerContext* ctx, const char* method,
                                                const google::protobuf::Message* req,
                                                google::protobuf::Message* resp,
                                                std::function<absl::Status(const StopCheck&)> work,
                                                bool inline_work) {
  // Counted before draining_ is read: Drain either sees this call or the call sees the flag.
  grpc::ServerUnaryReactor* reactor = new CountedReactor(&active_calls_);
  const auto start = std::chrono::steady_clock::now();
  auto finish = [this, reactor, method, req, resp, start](const absl::Status& s) {
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    stats_->Record(method, s.ok(), static_cast<int64_t>(req->ByteSizeLong()),
                   s.ok() ? static_cast<int64_t>(resp->ByteSizeLong()) : 0, us);
    reactor->Finish(ToGrpcStatus(s));
  };
  absl::Status admitted = Authenticate(*ctx);
  if (admitted.ok() && draining_.load()) {
    admitted = absl::UnavailableError("the server is shutting down; the call was not started");
  }
  if (admitted.ok()) admitted = Abandoned(*ctx, "before it was queued");
  if (!admitted.ok()) {
    finish(admitted);
    return reactor;
  }
  if (inline_work) {
    finish(Guarded(method, work, StopCheck()));
    return reactor;
  }
  StopCheck stop = [ctx] {
    return ctx->IsCancelled() || std::chrono::system_clock::now() > ctx->deadline();
  };
  const int64_t bytes = static_cast<int64_t>(req->ByteSizeLong());
  const int64_t before = queued_bytes_.fetch_add(bytes);
  bool queued = before + bytes <= policy_.limits.max_queued_bytes &&
                pool_->TrySubmit(
                    [this, ctx, method, finish, stop, bytes, work = std::move(work)] {
                      queued_bytes_.fetch_sub(bytes);
                      absl::Status s = Abandoned(*ctx, "while it waited for a worker");
                      if (s.ok()) s = Guarded(method, work, stop);
                      finish(s);
                    },
                    static_cast<size_t>(std::max<int64_t>(0, policy_.limits.max_queued_calls)));
  if (!queued) {
    queued_bytes_.fetch_sub(bytes);
    finish(absl::UnavailableError(StrCat(
        "server busy: ", before + bytes > policy_.limits.max_queued_bytes
                             ? StrCat(before, " request bytes already wait for a worker (--max-queued-bytes)")
                             : StrCat(policy_.limits.max_queued_calls, " calls already wait for a worker (--max-queued-calls)"),
        "; retry later")));
  }
  return reactor;
}

absl::StatusOr<std::vector<int64_t>> GraphServiceImpl::Ids(const v1::Tensor& t, const char* what) const {
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, Int64Vector(t, what));
  if (ids.empty()) return absl::InvalidArgumentError(StrCat(what, " is empty"));
  if (static_cast<int64_t>(ids.size()) > policy_.limits.max_ids_per_request) {
    return absl::ResourceExhaustedError(StrCat(what, " has ", ids.size(), " entries; this server takes at most ",
                                               policy_.limits.max_ids_per_request,
                                               " per request (--max-ids-per-request): split the request"));
  }
  return ids;
}

grpc::ServerUnaryReactor* GraphServiceImpl::GetMetadata(grpc::CallbackServerContext* ctx,
                                                        const v1::GetMetadataRequest* req,
                                                        v1::GetMetadataResponse* resp) {
  return Run(ctx, "GetMetadata", req, resp, [this, resp](const StopCheck&) { return DoGetMetadata(resp); },
             /*inline_work=*/true);
}

absl::Status GraphServiceImpl::DoGetMetadata(v1::GetMetadataResponse* resp) const {
  {
    const core::PartitionConfig& c = config_;
    resp->set_graph_name(c.graph_name);
    resp->set_part_id(served_.part_id);
    resp->set_num_parts(c.num_parts);
    resp->set_num_nodes(c.num_nodes);
    resp->set_num_edges(c.num_edges);
    resp->set_num_classes(c.num_classes);
    for (int k = 0; k < c.num_parts; ++k) {
      auto* n = resp->add_node_ranges();
      n->set_start(c.node_bounds[k]);
      n->set_end(c.node_bounds[k + 1]);
      auto* e = resp->add_edge_ranges();
      e->set_start(c.edge_bounds[k]);
      e->set_end(c.edge_bounds[k + 1]);
    }
    for (auto [fields, out] : {std::pair{&c.node_fields, resp->mutable_node_fields()},
                               std::pair{&c.edge_fields, resp->mutable_edge_fields()}}) {
      for (const core::FieldSchema& f : *fields) {
        v1::FieldSchema* s = out->Add();
        s->set_name(f.name);
        s->set_dtype(ToProtoDType(f.dtype));
        s->mutable_shape()->Assign(f.row_shape.begin(), f.row_shape.end());
        s->set_node_type(f.node_type);
        s->set_edge_type(f.edge_type);
        s->set_codec(std::string(core::FeatureCodecName(f.codec)));
      }
    }
    ASSIGN_OR_RETURN(const core::TypeMap node_types, c.NodeTypes());
    ASSIGN_OR_RETURN(const core::TypeMap edge_types, c.EdgeTypes());
    for (auto [types, out] : {std::pair{&node_types, resp->mutable_node_types()},
                              std::pair{&edge_types, resp->mutable_edge_types()}}) {
      for (int t = 0; t < types->num_types(); ++t) {
        v1::TypeRanges* r = out->Add();
        r->set_name(types->name(t));
        for (int k = 0; k < c.num_parts; ++k) {
          v1::IdRange* range = r->add_ranges();
          range->set_start(types->Range(t, k).first);
          range->set_end(types->Range(t, k).second);
        }
      }
    }
    return absl::OkStatus();
  }
}

absl::Status GraphServiceImpl::DoPull(const v1::PullRequest& req, bool node, v1::PullResponse* resp,
                                      const StopCheck& stop) const {
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, Ids(req.ids(), "ids"));
  ASSIGN_OR_RETURN(core::FieldSchema f, node ? NodeField(req.field()) : config_.EdgeField(req.field()));
  const int64_t row_bytes = static_cast<int64_t>(f.row_bytes());
  int64_t bytes = 0;
  if (!core::CheckedMul(static_cast<int64_t>(ids.size()), row_bytes, &bytes) ||
      bytes > policy_.limits.max_response_bytes) {
    return absl::ResourceExhaustedError(StrCat(
        ids.size(), " rows of '", f.name, "' (", row_bytes, " bytes each) are over this server's ",
        policy_.limits.max_response_bytes, "-byte answer limit (--max-response-bytes): split the request"));
  }
  // The IDs are checked as a whole first, so that an error names a bad ID's index in the request;
  // then the rows are gathered in chunks, so that an abandoned call stops early.
  RETURN_IF_ERROR((node ? node_book_ : edge_book_).CheckOwned(ids, served_.part_id, node ? "node" : "edge"));
  const core::FieldRef field = node ? core::FieldRef::Node(req.field()) : core::FieldRef::Edge(req.field());
  std::string rows(static_cast<size_t>(bytes), '\0');
  constexpr size_t kChunk = 16384;
  std::vector<int64_t> at(std::min(ids.size(), kChunk));
  for (size_t i = 0; i < at.size(); ++i) at[i] = static_cast<int64_t>(i);
  for (size_t b = 0; b < ids.size(); b += kChunk) {
    if (b > 0 && stop && stop()) return absl::CancelledError(StrCat("pull abandoned after ", b, " rows"));
    const size_t n = std::min(kChunk, ids.size() - b);
    RETURN_IF_ERROR(core::WaitFor([&](core::Done done) {
      served_.source->GatherRows(field, static_cast<size_t>(row_bytes), std::span(ids).subspan(b, n),
                                 std::span(at).first(n), rows.data() + b * row_bytes, std::move(done));
    }));
  }
  std::vector<int64_t> shape{static_cast<int64_t>(ids.size())};
  shape.insert(shape.end(), f.row_shape.begin(), f.row_shape.end());
  if (req.rows_as_bfloat16() && f.dtype == core::DType::kFloat32 && f.codec == core::FeatureCodec::kNone) {
    const int64_t elems = f.row_elems();
    std::string narrow(static_cast<size_t>(ids.size() * elems) * sizeof(uint16_t), '\0');
    core::EncodeRows({core::DType::kInt16, core::FeatureCodec::kBFloat16}, core::DType::kFloat32, rows.data(),
                     static_cast<int64_t>(ids.size()), elems, narrow.data());
    FillTensor(core::DType::kInt16, shape, std::move(narrow), resp->mutable_data());
    resp->set_rows_as_bfloat16(true);
    return absl::OkStatus();
  }
  FillTensor(f.dtype, shape, std::move(rows), resp->mutable_data());
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* GraphServiceImpl::PullNodeData(grpc::CallbackServerContext* ctx, const v1::PullRequest* req,
                                                         v1::PullResponse* resp) {
  return Run(ctx, "PullNodeData", req, resp,
             [this, req, resp](const StopCheck& stop) { return DoPull(*req, true, resp, stop); });
}

grpc::ServerUnaryReactor* GraphServiceImpl::PullEdgeData(grpc::CallbackServerContext* ctx, const v1::PullRequest* req,
                                                         v1::PullResponse* resp) {
  return Run(ctx, "PullEdgeData", req, resp,
             [this, req, resp](const StopCheck& stop) { return DoPull(*req, false, resp, stop); });
}

namespace {

template <typename T>
absl::Status CheckRange(const std::string& data, const std::string& field, int64_t lo, int64_t hi) {
  const size_t n = data.size() / sizeof(T);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, data.data() + i * sizeof(T), sizeof(T));
    if (static_cast<int64_t>(v) < lo || static_cast<int64_t>(v) > hi) {
      return absl::InvalidArgumentError(StrCat("value ", static_cast<int64_t>(v), " (element ", i, ") pushed to '",
                                               field, "' is outside [", lo, ", ", hi, "]"));
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status CheckFinite(const std::string& data, const std::string& field) {
  const size_t n = data.size() / sizeof(T);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, data.data() + i * sizeof(T), sizeof(T));
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(StrCat("value ", v, " (element ", i, ") pushed to '", field,
                                               "' is not finite"));
    }
  }
  return absl::OkStatus();
}

// An integer field's values as int64 range checks; false when the dtype is not an integer.
absl::Status CheckIntRange(core::DType t, const std::string& data, const std::string& field, int64_t lo,
                           int64_t hi) {
  switch (t) {
    case core::DType::kBool:
    case core::DType::kUInt8: return CheckRange<uint8_t>(data, field, lo, hi);
    case core::DType::kInt8: return CheckRange<int8_t>(data, field, lo, hi);
    case core::DType::kInt16: return CheckRange<int16_t>(data, field, lo, hi);
    case core::DType::kInt32: return CheckRange<int32_t>(data, field, lo, hi);
    case core::DType::kInt64: return CheckRange<int64_t>(data, field, lo, hi);
    default: return absl::OkStatus();
  }
}

bool IsMaskField(const std::string& name) { return name.size() > 5 && name.ends_with("_mask"); }

}  // namespace

absl::Status GraphServiceImpl::CheckPushValues(const core::FieldSchema& f, const v1::Tensor& data) const {
  const core::PartitionConfig& c = config_;
  const std::string& name = f.name;
  if (name == "label" && c.num_classes > 0) {
    // What the partitioner accepts: a class, or -1 for unlabelled.
    return CheckIntRange(f.dtype, data.data(), name, -1, c.num_classes - 1);
  }
  if (IsMaskField(name) || f.dtype == core::DType::kBool) return CheckIntRange(f.dtype, data.data(), name, 0, 1);
  if (f.dtype == core::DType::kFloat32) return CheckFinite<float>(data.data(), name);
  if (f.dtype == core::DType::kFloat64) return CheckFinite<double>(data.data(), name);
  return absl::OkStatus();
}

absl::Status GraphServiceImpl::CheckWritable(const std::string& rpc, const std::string& field) const {
  // Fields the job created (CreateNodeField: a script's DistTensor or DistEmbedding, fanout-train's
  // learnable rows) take writes on any server, bounded by --max-created-bytes; the partition's
  // own data only on a server started with --allow-push.
  if (policy_.allow_push) return absl::OkStatus();
  if (!config_.NodeField(field).ok() && served_.writable != nullptr && served_.writable->NodeFieldSchema(field).ok()) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(StrCat("this server keeps the partition's data read-only: ", rpc, " to '", field,
                                            "' needs a server started with --allow-push (fields the job created "
                                            "take writes without it)"));
}

absl::Status GraphServiceImpl::DoPush(const v1::PushRequest& req) const {
  RETURN_IF_ERROR(CheckWritable("PushNodeData", req.field()));
  if (!v1::PushOp_IsValid(req.op())) {
    return absl::InvalidArgumentError(StrCat("unknown push op ", static_cast<int>(req.op())));
  }
  if (served_.writable == nullptr) {
    return absl::FailedPreconditionError("this server's graph source takes no writes: PushNodeData is not available");
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, Ids(req.ids(), "ids"));
  ASSIGN_OR_RETURN(core::FieldSchema f, NodeField(req.field()));
  RETURN_IF_ERROR(CheckTensor(req.data(), "data"));
  if (req.data().dtype() != ToProtoDType(f.dtype)) {
    return absl::InvalidArgumentError(StrCat("data is ", v1::DType_Name(req.data().dtype()), " but field '",
                                             f.name, "' holds ", core::DTypeName(f.dtype)));
  }
  std::vector<int64_t> want{static_cast<int64_t>(ids.size())};
  want.insert(want.end(), f.row_shape.begin(), f.row_shape.end());
  std::vector<int64_t> got(req.data().shape().begin(), req.data().shape().end());
  if (got != want) {
    return absl::InvalidArgumentError(StrCat("data has shape [", base::StrJoin(got, ", "), "], expected [",
                                             base::StrJoin(want, ", "), "]"));
  }
  const bool add = req.op() == v1::PUSH_OP_ADD;
  // An add's result is range-checked only through its inputs: adds to labels and masks are refused.
  if (add && (f.name == "label" || IsMaskField(f.name))) {
    return absl::InvalidArgumentError(StrCat("cannot add to '", f.name, "'; assign its values instead"));
  }
  RETURN_IF_ERROR(CheckPushValues(f, req.data()));
  return served_.writable->PushNodeRows(req.field(), ids, req.data().data().data(), req.data().data().size(),
                                        add ? core::PushOp::kAdd : core::PushOp::kAssign);
}

grpc::ServerUnaryReactor* GraphServiceImpl::PushNodeData(grpc::CallbackServerContext* ctx, const v1::PushRequest* req,
                                                         v1::PushResponse* resp) {
  return Run(ctx, "PushNodeData", req, resp, [this, req](const StopCheck&) { return DoPush(*req); });
}

absl::StatusOr<core::FieldSchema> GraphServiceImpl::NodeField(const std::string& name) const {
  absl::StatusOr<core::FieldSchema> f = config_.NodeField(name);
  if (f.ok() || served_.writable == nullptr) return f;
  // A field created at run time (CreateNodeField) lives in the store; the store's error lists
  // the config's fields and the created ones.
  return served_.writable->NodeFieldSchema(name);
}

absl::Status GraphServiceImpl::DoCreateNodeField(const v1::CreateNodeFieldRequest& req,
                                                 v1::CreateNodeFieldResponse* resp) const {
  // Any server creates fields (within --max-created-bytes): they hold the job's own data, never
  // the partition's.
  if (served_.writable == nullptr) {
    return absl::FailedPreconditionError("this server's graph source takes no writes: CreateNodeField is not available");
  }
  const std::string& name = req.name();
  const bool name_ok = !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
  });
  if (!name_ok) {
    return absl::InvalidArgumentError(StrCat("field name '", name.substr(0, 64), name.size() > 64 ? "..." : "",
                                             "': 1 to 64 letters, digits, '_', '-' or '.'"));
  }
  ASSIGN_OR_RETURN(core::DType dtype, FromProtoDType(req.dtype()));
  core::FieldSchema schema{.name = name, .dtype = dtype, .row_shape = {}, .node_type = req.node_type()};
  if (req.row_shape_size() > 4) return absl::InvalidArgumentError("row_shape: at most 4 dimensions");
  int64_t elems = 1;
  for (int64_t d : req.row_shape()) {
    if (d < 1 || !core::CheckedMul(elems, d, &elems) || elems > (int64_t{1} << 24)) {
      return absl::InvalidArgumentError(StrCat("row_shape [", base::StrJoin(std::vector<int64_t>(req.row_shape().begin(),
                                                                                                req.row_shape().end()), ", "),
                                               "]: each dimension >= 1, at most 2^24 values per row"));
    }
    schema.row_shape.push_back(d);
  }
  bool created = false;
  RETURN_IF_ERROR(served_.writable->CreateNodeField(schema, policy_.limits.max_created_bytes, &created));
  resp->set_created(created);
  if (absl::StatusOr<core::PartitionStore::CreatedShare> share = served_.writable->CreatedFieldShare(schema.key());
      share.ok()) {
    v1::SharedField* f = resp->mutable_shared();
    f->set_pid(share->rows.pid);
    f->set_fd(share->rows.fd);
    f->set_token(share->rows.token);
    f->set_bytes(share->rows.bytes);
    f->set_first_id(share->base);
    f->set_num_rows(share->end - share->base);
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* GraphServiceImpl::CreateNodeField(grpc::CallbackServerContext* ctx,
                                                            const v1::CreateNodeFieldRequest* req,
                                                            v1::CreateNodeFieldResponse* resp) {
  return Run(ctx, "CreateNodeField", req, resp, [this, req, resp](const StopCheck&) { return DoCreateNodeField(*req, resp); });
}

absl::Status GraphServiceImpl::DoSparseUpdate(const v1::SparseUpdateRequest& req) const {
  RETURN_IF_ERROR(CheckWritable("SparseUpdate", req.field()));
  if (served_.writable == nullptr) {
    return absl::FailedPreconditionError("this server's graph source takes no writes: SparseUpdate is not available");
  }
  if (!v1::SparseOptimizer_IsValid(req.optimizer())) {
    return absl::InvalidArgumentError(StrCat("unknown sparse optimizer ", static_cast<int>(req.optimizer())));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, Ids(req.ids(), "ids"));
  RETURN_IF_ERROR(CheckTensor(req.grads(), "grads"));
  ASSIGN_OR_RETURN(core::FieldSchema f, NodeField(req.field()));
  const int64_t dim = f.row_elems();
  const std::vector<int64_t> want = {static_cast<int64_t>(ids.size()), dim};
  const std::vector<int64_t> got(req.grads().shape().begin(), req.grads().shape().end());
  if (req.grads().dtype() != v1::FLOAT32 || got != want) {
    return absl::InvalidArgumentError(StrCat("grads must be float32 [", base::StrJoin(want, ", "), "], got ",
                                             v1::DType_Name(req.grads().dtype()), " [", base::StrJoin(got, ", "), "]"));
  }
  const core::SparseOptimizerOptions o{.kind = req.optimizer() == v1::SPARSE_ADAM ? core::SparseOptimizerKind::kAdam
                                                                                  : core::SparseOptimizerKind::kAdagrad,
                                       .lr = req.lr(),
                                       .beta1 = req.beta1(),
                                       .beta2 = req.beta2(),
                                       .eps = req.eps()};
  // The tensor's bytes may sit unaligned in the message: copy them out as floats.
  std::vector<float> grads(ids.size() * dim);
  std::memcpy(grads.data(), req.grads().data().data(), grads.size() * sizeof(float));
  return served_.writable->ApplySparseUpdate(req.field(), req.state_field(), ids, grads.data(), o);
}

grpc::ServerUnaryReactor* GraphServiceImpl::SparseUpdate(grpc::CallbackServerContext* ctx,
                                                         const v1::SparseUpdateRequest* req,
                                                         v1::SparseUpdateResponse* resp) {
  return Run(ctx, "SparseUpdate", req, resp, [this, req](const StopCheck&) { return DoSparseUpdate(*req); });
}

namespace {
absl::StatusOr<core::EdgeDir> Dir(v1::EdgeDir d) {
  switch (d) {
    case v1::EDGE_DIR_IN: return core::EdgeDir::kIn;
    case v1::EDGE_DIR_OUT: return core::EdgeDir::kOut;
    default: return absl::InvalidArgumentError(StrCat("unknown edge direction ", static_cast<int>(d)));
  }
}
}  // namespace

namespace {

// (position in `seeds`, count) of each run of equal destinations in `dst`, every destination one
// of the seeds (the sampler's answer): what SampleResponse.dst_runs holds.
absl::StatusOr<std::vector<int32_t>> DstRuns(const std::vector<int64_t>& seeds, const std::vector<int64_t>& dst) {
  std::unordered_map<int64_t, int32_t> position;
  position.reserve(seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) position.emplace(seeds[i], static_cast<int32_t>(i));
  std::vector<int32_t> runs;
  for (size_t i = 0; i < dst.size();) {
    size_t j = i + 1;
    while (j < dst.size() && dst[j] == dst[i]) ++j;
    const auto p = position.find(dst[i]);
    if (p == position.end()) return absl::InternalError(StrCat("sampled an edge to ", dst[i], ", not a seed"));
    runs.push_back(p->second);
    runs.push_back(static_cast<int32_t>(j - i));
    i = j;
  }
  return runs;
}

}  // namespace

absl::Status GraphServiceImpl::DoSample(const v1::SampleRequest& req, v1::SampleResponse* resp,
                                        const StopCheck& stop) const {
  ASSIGN_OR_RETURN(std::vector<int64_t> seeds, Ids(req.seeds(), "seeds"));
  ASSIGN_OR_RETURN(core::EdgeDir dir, Dir(req.dir()));
  RETURN_IF_ERROR(core::CheckFanout(req.fanout()));
  RETURN_IF_ERROR(node_book_.CheckOwned(seeds, served_.part_id, "node"));
  // Three int64 tensors per edge, and an int32 one on a typed graph.
  const bool typed = config_.edge_types.size() > 1;
  const int64_t max_edges =
      policy_.limits.max_response_bytes / (3 * static_cast<int64_t>(sizeof(int64_t)) + (typed ? 4 : 0));
  core::SampleOptions o{.fanout = req.fanout(),
                        .replace = req.replace(),
                        .dir = dir,
                        .weight_field = req.weight_field(),
                        .seed = req.seed(),
                        .max_edges = max_edges,
                        .should_stop = stop,
                        .etype = req.has_etype() ? req.etype() : -1,
                        .etype_fanouts = {req.etype_fanouts().begin(), req.etype_fanouts().end()}};
  core::SampledEdges e;
  absl::Status s =
      core::WaitFor([&](core::Done done) { served_.source->SampleNeighbors(seeds, o, &e, std::move(done)); });
  if (s.code() == absl::StatusCode::kResourceExhausted) {
    return absl::ResourceExhaustedError(StrCat(s.message(), " (this server's answers hold at most ",
                                               policy_.limits.max_response_bytes,
                                               " bytes, --max-response-bytes)"));
  }
  RETURN_IF_ERROR(s);
  if (req.compact() && dir == core::EdgeDir::kIn) {
    // int32 IDs where they fit, and each run of edges ending at one seed as (its position in the
    // request, the run's length) instead of the seed's ID on every edge: 9-12 bytes an edge, not 24.
    rpc::FillIdTensor(e.src, resp->mutable_src());
    rpc::FillIdTensor(e.eid, resp->mutable_eid());
    ASSIGN_OR_RETURN(const std::vector<int32_t> runs, DstRuns(seeds, e.dst));
    rpc::FillInt32Tensor(runs, resp->mutable_dst_runs());
  } else {
    FillInt64Tensor(e.src, resp->mutable_src());
    FillInt64Tensor(e.dst, resp->mutable_dst());
    FillInt64Tensor(e.eid, resp->mutable_eid());
  }
  if (!e.etype.empty()) rpc::FillInt32Tensor(e.etype, resp->mutable_etype());
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* GraphServiceImpl::SampleNeighbors(grpc::CallbackServerContext* ctx,
                                                            const v1::SampleRequest* req, v1::SampleResponse* resp) {
  return Run(ctx, "SampleNeighbors", req, resp,
             [this, req, resp](const StopCheck& stop) { return DoSample(*req, resp, stop); });
}

absl::Status GraphServiceImpl::DoDegrees(const v1::DegreesRequest& req, v1::DegreesResponse* resp) const {
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, Ids(req.ids(), "ids"));
  ASSIGN_OR_RETURN(core::EdgeDir dir, Dir(req.dir()));
  RETURN_IF_ERROR(node_book_.CheckOwned(ids, served_.part_id, "node"));
  std::vector<int64_t> deg(ids.size());
  RETURN_IF_ERROR(core::WaitFor([&](core::Done done) { served_.source->Degrees(ids, dir, deg.data(), std::move(done)); }));
  FillInt64Tensor(deg, resp->mutable_degrees());
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* GraphServiceImpl::GetDegrees(grpc::CallbackServerContext* ctx, const v1::DegreesRequest* req,
                                                       v1::DegreesResponse* resp) {
  return Run(ctx, "GetDegrees", req, resp, [this, req, resp](const StopCheck&) { return DoDegrees(*req, resp); });
}

absl::Status GraphServiceImpl::DoFindEdges(const v1::FindEdgesRequest& req, v1::FindEdgesResponse* resp) const {
  ASSIGN_OR_RETURN(std::vector<int64_t> eids, Ids(req.eids(), "eids"));
  RETURN_IF_ERROR(edge_book_.CheckOwned(eids, served_.part_id, "edge"));
  std::vector<int64_t> src(eids.size()), dst(eids.size());
  RETURN_IF_ERROR(core::WaitFor(
      [&](core::Done done) { served_.source->FindEdges(eids, src.data(), dst.data(), std::move(done)); }));
  FillInt64Tensor(src, resp->mutable_src());
  FillInt64Tensor(dst, resp->mutable_dst());
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* GraphServiceImpl::FindEdges(grpc::CallbackServerContext* ctx, const v1::FindEdgesRequest* req,
                                                      v1::FindEdgesResponse* resp) {
  return Run(ctx, "FindEdges", req, resp, [this, req, resp](const StopCheck&) { return DoFindEdges(*req, resp); });
}

absl::Status GraphServiceImpl::DoGetStats(v1::GetStatsResponse* resp) const {
  for (const ServerStats::Snapshot& m : stats_->Read()) {
    v1::MethodStats* s = resp->add_methods();
    s->set_method(m.method);
    s->set_requests(m.requests);
    s->set_errors(m.errors);
    s->set_bytes_in(m.bytes_in);
    s->set_bytes_out(m.bytes_out);
    s->set_p50_us(m.p50_us);
    s->set_p90_us(m.p90_us);
    s->set_p99_us(m.p99_us);
    s->set_max_us(m.max_us);
  }
  resp->set_uptime_s(stats_->uptime_seconds());
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* GraphServiceImpl::GetStats(grpc::CallbackServerContext* ctx, const v1::GetStatsRequest* req,
                                                     v1::GetStatsResponse* resp) {
  return Run(ctx, "GetStats", req, resp, [this, resp](const StopCheck&) { return DoGetStats(resp); },
             /*inline_work=*/true);
}

}  // namespace fanout::server

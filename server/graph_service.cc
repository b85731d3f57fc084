#include "server/graph_service.h"

#include <chrono>
#include <exception>

#include "core/sampling.h"
#include "core/status.h"
#include "core/strings.h"
#include "server/rpc_codec.h"

namespace fanout::server {

using core::StrCat;

grpc::ServerUnaryReactor* GraphServiceImpl::Run(grpc::CallbackServerContext* ctx, const char* method,
                                                const google::protobuf::Message* req,
                                                google::protobuf::Message* resp,
                                                std::function<absl::Status()> work) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  auto start = std::chrono::steady_clock::now();
  pool_->Submit([this, reactor, method, req, resp, start, work = std::move(work)] {
    absl::Status s;
    try {
      s = work();
    } catch (const std::exception& e) {  // a bug, not a request error: never take the server down
      s = absl::InternalError(StrCat(method, " failed: ", e.what()));
    }
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    stats_->Record(method, s.ok(), static_cast<int64_t>(req->ByteSizeLong()),
                   s.ok() ? static_cast<int64_t>(resp->ByteSizeLong()) : 0, us);
    reactor->Finish(ToGrpcStatus(s));
  });
  return reactor;
}

absl::StatusOr<std::vector<int64_t>> GraphServiceImpl::Ids(const v1::Tensor& t, const char* what) const {
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, Int64Vector(t, what));
  if (ids.empty()) return absl::InvalidArgumentError(StrCat(what, " is empty"));
  if (static_cast<int64_t>(ids.size()) > limits_.max_ids_per_request) {
    return absl::ResourceExhaustedError(StrCat(what, " has ", ids.size(), " entries; this server takes at most ",
                                               limits_.max_ids_per_request,
                                               " per request (--max-ids-per-request): split the request"));
  }
  return ids;
}

grpc::ServerUnaryReactor* GraphServiceImpl::GetMetadata(grpc::CallbackServerContext* ctx,
                                                        const v1::GetMetadataRequest* req,
                                                        v1::GetMetadataResponse* resp) {
  return Run(ctx, "GetMetadata", req, resp, [this, resp] {
    const core::PartitionConfig& c = store_->config();
    resp->set_graph_name(c.graph_name);
    resp->set_part_id(store_->part_id());
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
      }
    }
    return absl::OkStatus();
  });
}

absl::Status GraphServiceImpl::Pull(const v1::PullRequest& req, bool node, v1::PullResponse* resp) {
  ASSIGN_OR_RETURN(std::vector<int64_t> ids, Ids(req.ids(), "ids"));
  ASSIGN_OR_RETURN(core::FieldSchema f, node ? store_->NodeFieldSchema(req.field()) : store_->EdgeFieldSchema(req.field()));
  const int64_t row_bytes = static_cast<int64_t>(f.row_bytes());
  if (static_cast<int64_t>(ids.size()) * row_bytes > limits_.max_response_bytes) {
    return absl::ResourceExhaustedError(StrCat(
        ids.size(), " rows of '", f.name, "' are ", ids.size() * row_bytes, " bytes, over this server's ",
        limits_.max_response_bytes, "-byte answer limit (--max-response-bytes): split the request"));
  }
  std::string rows;
  RETURN_IF_ERROR(node ? store_->GatherNodeRows(req.field(), ids, &rows) : store_->GatherEdgeRows(req.field(), ids, &rows));
  std::vector<int64_t> shape{static_cast<int64_t>(ids.size())};
  shape.insert(shape.end(), f.row_shape.begin(), f.row_shape.end());
  FillTensor(f.dtype, shape, std::move(rows), resp->mutable_data());
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* GraphServiceImpl::PullNodeData(grpc::CallbackServerContext* ctx, const v1::PullRequest* req,
                                                         v1::PullResponse* resp) {
  return Run(ctx, "PullNodeData", req, resp, [this, req, resp] { return Pull(*req, true, resp); });
}

grpc::ServerUnaryReactor* GraphServiceImpl::PullEdgeData(grpc::CallbackServerContext* ctx, const v1::PullRequest* req,
                                                         v1::PullResponse* resp) {
  return Run(ctx, "PullEdgeData", req, resp, [this, req, resp] { return Pull(*req, false, resp); });
}

grpc::ServerUnaryReactor* GraphServiceImpl::PushNodeData(grpc::CallbackServerContext* ctx, const v1::PushRequest* req,
                                                         v1::PushResponse* resp) {
  return Run(ctx, "PushNodeData", req, resp, [this, req]() -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<int64_t> ids, Ids(req->ids(), "ids"));
    ASSIGN_OR_RETURN(core::FieldSchema f, store_->NodeFieldSchema(req->field()));
    RETURN_IF_ERROR(CheckTensor(req->data(), "data"));
    if (req->data().dtype() != ToProtoDType(f.dtype)) {
      return absl::InvalidArgumentError(StrCat("data is ", v1::DType_Name(req->data().dtype()), " but field '",
                                               f.name, "' holds ", core::DTypeName(f.dtype)));
    }
    std::vector<int64_t> want{static_cast<int64_t>(ids.size())};
    want.insert(want.end(), f.row_shape.begin(), f.row_shape.end());
    std::vector<int64_t> got(req->data().shape().begin(), req->data().shape().end());
    if (got != want) {
      return absl::InvalidArgumentError(StrCat("data has shape [", core::StrJoin(got, ", "), "], expected [",
                                               core::StrJoin(want, ", "), "]"));
    }
    return store_->PushNodeRows(req->field(), ids, req->data().data().data(), req->data().data().size(),
                                req->op() == v1::PUSH_OP_ADD ? core::PushOp::kAdd : core::PushOp::kAssign);
  });
}

grpc::ServerUnaryReactor* GraphServiceImpl::SampleNeighbors(grpc::CallbackServerContext* ctx,
                                                            const v1::SampleRequest* req, v1::SampleResponse* resp) {
  return Run(ctx, "SampleNeighbors", req, resp, [this, req, resp]() -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<int64_t> seeds, Ids(req->seeds(), "seeds"));
    core::SampleOptions o{.fanout = req->fanout(),
                          .replace = req->replace(),
                          .dir = req->dir() == v1::EDGE_DIR_OUT ? core::EdgeDir::kOut : core::EdgeDir::kIn,
                          .weight_field = req->weight_field(),
                          .seed = req->seed()};
    core::SampledEdges e;
    RETURN_IF_ERROR(core::SampleNeighbors(*store_, seeds, o, &e));
    if (static_cast<int64_t>(e.size() * 3 * sizeof(int64_t)) > limits_.max_response_bytes) {
      return absl::ResourceExhaustedError(StrCat("the sample has ", e.size(), " edges, over this server's ",
                                                 limits_.max_response_bytes,
                                                 "-byte answer limit: use fewer seeds or a smaller fanout"));
    }
    FillInt64Tensor(e.src, resp->mutable_src());
    FillInt64Tensor(e.dst, resp->mutable_dst());
    FillInt64Tensor(e.eid, resp->mutable_eid());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* GraphServiceImpl::GetDegrees(grpc::CallbackServerContext* ctx, const v1::DegreesRequest* req,
                                                       v1::DegreesResponse* resp) {
  return Run(ctx, "GetDegrees", req, resp, [this, req, resp]() -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<int64_t> ids, Ids(req->ids(), "ids"));
    std::vector<int64_t> deg(ids.size());
    RETURN_IF_ERROR(store_->Degrees(ids, req->dir() == v1::EDGE_DIR_OUT ? core::EdgeDir::kOut : core::EdgeDir::kIn,
                                    deg.data()));
    FillInt64Tensor(deg, resp->mutable_degrees());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* GraphServiceImpl::FindEdges(grpc::CallbackServerContext* ctx, const v1::FindEdgesRequest* req,
                                                      v1::FindEdgesResponse* resp) {
  return Run(ctx, "FindEdges", req, resp, [this, req, resp]() -> absl::Status {
    ASSIGN_OR_RETURN(std::vector<int64_t> eids, Ids(req->eids(), "eids"));
    std::vector<int64_t> src(eids.size()), dst(eids.size());
    RETURN_IF_ERROR(store_->FindEdges(eids, src.data(), dst.data()));
    FillInt64Tensor(src, resp->mutable_src());
    FillInt64Tensor(dst, resp->mutable_dst());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* GraphServiceImpl::GetStats(grpc::CallbackServerContext* ctx, const v1::GetStatsRequest* req,
                                                     v1::GetStatsResponse* resp) {
  return Run(ctx, "GetStats", req, resp, [this, resp] {
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
  });
}

}  // namespace fanout::server

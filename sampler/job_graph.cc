#include "sampler/job_graph.h"

#include "base/ip_config.h"
#include "base/security_options.h"
#include "base/status.h"
#include "base/strings.h"
#include "rpc/security.h"

namespace fanout::sampler {

using base::StrCat;

absl::StatusOr<std::unique_ptr<JobGraph>> JobGraph::Open(const JobGraphOptions& o) {
  ASSIGN_OR_RETURN(core::PartitionConfig config, core::LoadPartitionConfig(o.part_config));
  if (o.machine_id < -1 || o.machine_id >= config.num_parts) {
    return absl::InvalidArgumentError(StrCat("machine_id ", o.machine_id, " is not a partition of ",
                                             o.part_config, " (0..", config.num_parts - 1, ")"));
  }
  DistGraphOptions go;
  go.machine_id = o.machine_id;
  ASSIGN_OR_RETURN(go.servers, base::ResolveServers("", o.servers, o.ip_config, o.part_config,
                                                    o.num_servers, config.num_parts));
  base::FillSecurityFromEnvironment(&go.security);
  // Read once: DistGraph::Open and the write clients use these.
  if (go.security.any()) {
    ASSIGN_OR_RETURN(go.client.security,
                     rpc::Security::Load(go.security, rpc::Security::Role::kClient));
  }
  go.client.deadline_seconds = o.deadline_seconds;
  go.connect_timeout_seconds = o.deadline_seconds;
  // The local partition from its files unless asked otherwise and it has servers to ask.
  go.read_local_files =
      o.read_local_files || o.machine_id < 0 || go.servers.addresses[o.machine_id].empty();
  return Open(std::move(config), o.part_config, std::move(go),
              {.timeout_s = o.unreachable_timeout_seconds}, o.on_unreachable);
}

absl::StatusOr<std::unique_ptr<JobGraph>> JobGraph::Open(
    core::PartitionConfig config, std::string part_config_path, DistGraphOptions graph,
    const rpc::ReachabilityOptions& watch, std::function<void(const std::string&)> on_unreachable) {
  std::unique_ptr<JobGraph> g(new JobGraph());
  g->config_ = std::move(config);
  g->part_config_path_ = std::move(part_config_path);
  g->options_ = std::move(graph);
  const DistGraphOptions& go = g->options_;
  ASSIGN_OR_RETURN(g->graph_, DistGraph::Open(g->config_, go));
  ASSIGN_OR_RETURN(g->fields_, ServerFields::Make(g->config_, go.servers, go.client, /*map_shared=*/true, go.machine_id));
  if (on_unreachable) {
    // Null with nothing to watch (one machine, a timeout <= 0).
    g->reachability_ = rpc::ReachabilityWatch::Start(go.servers, go.machine_id, go.client, watch,
                                                     std::move(on_unreachable));
  }
  return g;
}

void JobGraph::StopWatching() {
  std::unique_ptr<rpc::ReachabilityWatch> watch;
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    watch = std::move(reachability_);
  }
  watch.reset();  // its threads joined outside the lock
}

absl::StatusOr<const DistGraph*> JobGraph::CachingGraph(const DistGraphOptions& go) {
  std::lock_guard<std::mutex> lock(caching_mu_);
  std::unique_ptr<DistGraph>& g = caching_[{go.cache_field, go.cache_max_bytes}];
  if (g == nullptr) {
    DistGraphOptions own = go;
    own.cache_in_shared_memory = true;
    ASSIGN_OR_RETURN(g, DistGraph::Open(config_, own));
  }
  return g.get();
}

absl::StatusOr<bool> JobGraph::CreateNodeField(const core::FieldSchema& schema) {
  if (config_.NodeField(schema.key()).ok()) {
    return absl::InvalidArgumentError(
        StrCat("'", schema.key(), "' is already a node field of ", part_config_path_));
  }
  if (!schema.node_type.empty()) {
    ASSIGN_OR_RETURN(const core::TypeMap types, config_.NodeTypes());
    if (auto t = types.TypeId(schema.node_type); !t.ok()) return absl::InvalidArgumentError(t.status().message());
  }
  ASSIGN_OR_RETURN(const bool created, fields_->Create(schema));
  std::lock_guard<std::mutex> lock(created_mu_);
  created_[schema.key()] = schema;
  return created;
}

std::optional<core::FieldSchema> JobGraph::Created(const std::string& field) const {
  std::lock_guard<std::mutex> lock(created_mu_);
  const auto it = created_.find(field);
  return it == created_.end() ? std::nullopt : std::optional<core::FieldSchema>(it->second);
}

absl::StatusOr<core::FieldSchema> JobGraph::NodeSchema(const std::string& field) const {
  if (std::optional<core::FieldSchema> s = Created(field)) return *s;
  return graph_->NodeFieldSchema(field);
}

bool JobGraph::IsCreated(const std::string& field) const { return Created(field).has_value(); }

absl::Status JobGraph::PullNodeRows(const std::string& field, std::span<const int64_t> ids,
                                    char* out) const {
  if (std::optional<core::FieldSchema> s = Created(field)) return fields_->Pull(*s, ids, out);
  return graph_->PullNodeRows(field, ids, out);
}

absl::Status JobGraph::PushNodeRows(const std::string& field, std::span<const int64_t> ids,
                                    const char* rows, size_t bytes, bool add) {
  ASSIGN_OR_RETURN(const core::FieldSchema schema, NodeSchema(field));
  if (bytes != ids.size() * schema.row_bytes()) {
    return absl::InvalidArgumentError(StrCat("rows for field '", field, "': ", bytes, " bytes for ",
                                             ids.size(), " IDs of ", schema.row_bytes(),
                                             " bytes each"));
  }
  return fields_->Push(schema, ids, rows, add ? core::PushOp::kAdd : core::PushOp::kAssign);
}

absl::Status JobGraph::SparseUpdate(const std::string& field, const std::string& state_field,
                                    std::span<const int64_t> ids, const float* grads,
                                    size_t num_grads, const core::SparseOptimizerOptions& options) {
  if (!IsCreated(field) || !IsCreated(state_field)) {
    return absl::InvalidArgumentError(
        StrCat("sparse_update: '", field, "' and '", state_field,
               "' must be fields this process created (DistEmbedding's table and "
               "state)"));
  }
  ASSIGN_OR_RETURN(const core::FieldSchema rows, NodeSchema(field));
  ASSIGN_OR_RETURN(const core::FieldSchema state, NodeSchema(state_field));
  const int64_t dim = rows.row_elems();
  if (rows.dtype != core::DType::kFloat32 || num_grads != ids.size() * static_cast<size_t>(dim)) {
    return absl::InvalidArgumentError(
        StrCat("sparse_update: gradients must be float32 [", ids.size(), ", ", dim, "], got ",
               num_grads, " values for a ", core::DTypeName(rows.dtype), " field"));
  }
  RETURN_IF_ERROR(core::CheckSparseOptimizer(options));
  if (state.row_elems() != core::SparseStateWidth(options.kind, dim)) {
    return absl::InvalidArgumentError(StrCat("sparse_update: state field '", state_field, "' has ",
                                             state.row_elems(), " values per row; ",
                                             core::SparseOptimizerName(options.kind), " keeps ",
                                             core::SparseStateWidth(options.kind, dim)));
  }
  return fields_->SparseUpdate(rows, state, ids, grads, options);
}

}  // namespace fanout::sampler

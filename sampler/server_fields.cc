#include "sampler/server_fields.h"

#include <algorithm>
#include <cstring>

#include "absl/synchronization/mutex.h"
#include "base/status.h"
#include "base/strings.h"
#include "rpc/graph_client.h"

namespace fanout::sampler {

using base::StrCat;

namespace {

// Rows per call to a server: well inside its default answer and request limits.
size_t ChunkRows(size_t row_bytes) { return std::max<size_t>(1, (size_t{32} << 20) / std::max<size_t>(1, row_bytes)); }

absl::Status InPartition(int p, const absl::Status& s) {
  return s.ok() ? s : absl::Status(s.code(), StrCat("partition ", p, ": ", s.message()));
}

// The IDs and gradient rows ([n, dim]) at `positions` of a sparse update's arrays.
struct GatheredGradients {
  std::vector<int64_t> ids;
  std::vector<float> grads;
};
GatheredGradients GatherGradients(std::span<const int64_t> ids, const float* grads, int64_t dim,
                                  std::span<const int64_t> positions) {
  GatheredGradients g;
  g.ids.resize(positions.size());
  g.grads.resize(positions.size() * dim);
  for (size_t j = 0; j < positions.size(); ++j) {
    g.ids[j] = ids[positions[j]];
    std::memcpy(g.grads.data() + j * dim, grads + positions[j] * dim, static_cast<size_t>(dim) * sizeof(float));
  }
  return g;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServerFields>> ServerFields::Make(const core::PartitionConfig& config,
                                                                 base::ServerMap servers, rpc::ClientOptions client,
                                                                 bool map_shared, int machine_id) {
  ASSIGN_OR_RETURN(core::RangePartitionBook book, config.NodeBook());
  servers.addresses.resize(config.num_parts);
  return std::unique_ptr<ServerFields>(
      new ServerFields(config, std::move(book), std::move(servers), std::move(client), map_shared, machine_id));
}

ServerFields::ServerFields(core::PartitionConfig config, core::RangePartitionBook book, base::ServerMap servers,
                           rpc::ClientOptions client, bool map_shared, int machine_id)
    : config_(std::move(config)),
      book_(std::move(book)),
      servers_(std::move(servers)),
      client_options_(std::move(client)),
      machine_id_(machine_id),
      map_shared_(map_shared) {
  readers_.resize(config_.num_parts);
  for (int p = 0; p < config_.num_parts; ++p) {
    if (!servers_.addresses[p].empty()) readers_[p] = rpc::RemoteGraphSource::Connect(servers_, p, machine_id_, client_options_);
  }
}

ServerFields::~ServerFields() = default;

rpc::GraphClient& ServerFields::Client(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(address);
  if (it == clients_.end()) {
    // A write to a server of this machine crosses no link: its bytes are not the wire's.
    rpc::ClientOptions o = client_options_;
    if (servers_.OnMachine(address, machine_id_)) o.wire = nullptr;
    it = clients_.emplace(address, rpc::GraphClient::Connect(address, o)).first;
  }
  return *it->second;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> ServerFields::ByPartition(std::span<const int64_t> ids,
                                                                            const std::string& what) const {
  std::vector<std::vector<int64_t>> pos(config_.num_parts);
  for (size_t i = 0; i < ids.size(); ++i) {
    absl::StatusOr<int> part = book_.CheckedPartOf(ids[i]);
    if (!part.ok()) return absl::InvalidArgumentError(StrCat("node ", part.status().message()));
    pos[*part].push_back(static_cast<int64_t>(i));
  }
  for (int p = 0; p < config_.num_parts; ++p) {
    if (!pos[p].empty() && servers_.addresses[p].empty()) {
      return absl::FailedPreconditionError(StrCat("partition ", p, " has no server to hold ", what,
                                                  " (created fields live on the servers; the job needs them)"));
    }
  }
  return pos;
}

absl::StatusOr<bool> ServerFields::Create(const core::FieldSchema& schema) {
  bool created = false;
  for (int p = 0; p < config_.num_parts; ++p) {
    if (servers_.addresses[p].empty()) {
      return absl::FailedPreconditionError(StrCat("partition ", p, " has no server to hold node field '", schema.key(),
                                                  "' (created fields live on the servers)"));
    }
    for (const std::string& address : servers_.CopiesOf(p)) {
      v1::SharedField shared;
      absl::StatusOr<bool> made = Client(address).CreateNodeField(schema.name, schema.dtype, schema.row_shape,
                                                                  schema.node_type, &shared);
      if (!made.ok()) return InPartition(p, made.status());
      created = created || *made;
      // Mapped where this process may (the server on this machine, the same user); otherwise the
      // partition's rows go through its servers.
      const size_t rb = schema.row_bytes();
      if (!map_shared_ || shared.pid() <= 0 || shared.num_rows() < 0 ||
          static_cast<uint64_t>(shared.bytes()) != static_cast<uint64_t>(shared.num_rows()) * rb) {
        continue;
      }
      std::unique_lock<std::shared_mutex> lock(mapped_mu_);
      if (mapped_.count({schema.key(), address}) > 0) continue;
      absl::StatusOr<std::unique_ptr<core::SharedRows>> shm = core::SharedRows::Map(core::SharedRowsInfo{
          .pid = shared.pid(), .fd = shared.fd(), .token = shared.token(), .bytes = shared.bytes()});
      if (!shm.ok()) continue;
      mapped_.emplace(std::make_pair(schema.key(), address),
                      MappedRows{std::move(*shm), shared.first_id(), shared.num_rows(), rb});
    }
  }
  return created;
}

bool ServerFields::Mapped(const core::FieldSchema& schema, int part) const {
  return !MappedCopies(schema.key(), part).empty();
}

std::vector<const ServerFields::MappedRows*> ServerFields::MappedCopies(const std::string& key, int part) const {
  std::vector<const MappedRows*> copies;
  if (part < 0 || part >= config_.num_parts || servers_.addresses[part].empty()) return copies;
  std::shared_lock<std::shared_mutex> lock(mapped_mu_);
  for (const std::string& address : servers_.CopiesOf(part)) {
    auto it = mapped_.find({key, address});
    if (it == mapped_.end()) return {};
    copies.push_back(&it->second);  // stays valid: entries are never removed
  }
  return copies;
}

absl::StatusOr<std::vector<int64_t>> ServerFields::RowIndices(const MappedRows& copy, const std::string& key,
                                                              std::span<const int64_t> ids,
                                                              std::span<const int64_t> positions) const {
  std::vector<int64_t> rows(positions.size());
  for (size_t j = 0; j < positions.size(); ++j) {
    const int64_t id = ids[positions[j]];
    if (id < copy.first_id || id >= copy.first_id + copy.num_rows) {  // as the server says it
      absl::StatusOr<core::TypeMap> types = config_.NodeTypes();
      const std::string type = types.ok() ? std::string(types->name(types->ToTypeWise(id).first)) : "another";
      return absl::InvalidArgumentError(StrCat("node ", id, " is of type ", type, "; field '", key, "' holds ",
                                               key.substr(0, key.find('/')), " nodes only (this partition's: [",
                                               copy.first_id, ", ", copy.first_id + copy.num_rows, "))"));
    }
    rows[j] = id - copy.first_id;
  }
  return rows;
}

absl::Status ServerFields::Pull(const core::FieldSchema& schema, std::span<const int64_t> ids, char* out) {
  ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> pos, ByPartition(ids, StrCat("node field '", schema.key(), "'")));
  const size_t rb = schema.row_bytes();
  // Partitions mapped here: copied from the shared rows, no RPC.
  for (int p = 0; p < config_.num_parts; ++p) {
    if (pos[p].empty()) continue;
    const std::vector<const MappedRows*> copies = MappedCopies(schema.key(), p);
    if (copies.empty()) continue;
    const MappedRows& copy = *copies[read_turn_.fetch_add(1) % copies.size()];
    if (copy.row_bytes != rb) continue;  // not the field's schema: the servers say what is wrong
    absl::StatusOr<std::vector<int64_t>> rows = RowIndices(copy, schema.key(), ids, pos[p]);
    if (!rows.ok()) return InPartition(p, rows.status());
    for (size_t j = 0; j < rows->size(); ++j) {
      std::memcpy(out + static_cast<size_t>(pos[p][j]) * rb, copy.shm->data() + static_cast<size_t>((*rows)[j]) * rb, rb);
    }
    pos[p].clear();
  }
  // Every partition's chunks in flight at once; each writes its rows to their places.
  struct Chunk {
    int part;
    std::vector<int64_t> ids;
    std::span<const int64_t> positions;
  };
  std::vector<Chunk> chunks;
  for (int p = 0; p < config_.num_parts; ++p) {
    for (size_t b = 0; b < pos[p].size(); b += ChunkRows(rb)) {
      const size_t n = std::min(ChunkRows(rb), pos[p].size() - b);
      Chunk c{p, {}, std::span<const int64_t>(pos[p]).subspan(b, n)};
      for (int64_t i : c.positions) c.ids.push_back(ids[i]);
      chunks.push_back(std::move(c));
    }
  }
  absl::Mutex mu;
  size_t pending = chunks.size();
  absl::Status first;
  for (const Chunk& c : chunks) {
    // Every server of the partition holds the same rows (writes go to all, replicas too).
    readers_[c.part]->GatherRows(core::FieldRef::Node(schema.key()), rb, c.ids, c.positions, out,
                                 [&, p = c.part](absl::Status s) {
                                   absl::MutexLock lock(&mu);
                                   if (first.ok() && !s.ok()) first = InPartition(p, s);
                                   --pending;
                                 });
  }
  absl::MutexLock lock(&mu);
  mu.Await(absl::Condition(+[](size_t* n) { return *n == 0; }, &pending));
  return first;
}

absl::Status ServerFields::SparseUpdate(const core::FieldSchema& rows, const core::FieldSchema& state,
                                        std::span<const int64_t> ids, const float* grads,
                                        const core::SparseOptimizerOptions& options) {
  ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> pos, ByPartition(ids, StrCat("node field '", rows.key(), "'")));
  const int64_t dim = rows.row_elems();
  const size_t rb = static_cast<size_t>(dim) * sizeof(float);
  for (int p = 0; p < config_.num_parts; ++p) {
    if (pos[p].empty()) continue;
    const std::vector<const MappedRows*> w = MappedCopies(rows.key(), p), s = MappedCopies(state.key(), p);
    if (w.empty() || s.empty() || w[0]->row_bytes != rb) continue;  // else the servers check and apply it
    // Mapped: the step applied here, to every server's copy, as each server would apply it
    // (the same checks first: distinct IDs of the field's rows, finite gradients).
    RETURN_IF_ERROR(core::CheckSparseOptimizer(options));
    const int64_t sw = core::SparseStateWidth(options.kind, dim);
    if (rows.dtype != core::DType::kFloat32 || state.dtype != core::DType::kFloat32) {
      return absl::InvalidArgumentError(StrCat("fields '", rows.key(), "' and '", state.key(), "' must be float32"));
    }
    if (s[0]->row_bytes != static_cast<size_t>(sw) * sizeof(float)) {
      return core::SparseStateWidthError(options.kind, dim, rows.key(), state.key(),
                                         static_cast<int64_t>(s[0]->row_bytes / sizeof(float)));
    }
    absl::StatusOr<std::vector<int64_t>> found = RowIndices(*w[0], rows.key(), ids, pos[p]);
    if (!found.ok()) return InPartition(p, found.status());
    const std::vector<int64_t>& index = *found;
    // Every ID in this partition (a trainer updating the rows it owns): the caller's arrays as
    // they are, else this partition's IDs and gradients gathered.
    std::span<const int64_t> part_ids = ids;
    const float* part_grads = grads;
    GatheredGradients gathered;
    if (pos[p].size() != ids.size()) {
      gathered = GatherGradients(ids, grads, dim, pos[p]);
      part_ids = gathered.ids;
      part_grads = gathered.grads.data();
    }
    RETURN_IF_ERROR(core::CheckSparseGradients(part_ids, w[0]->first_id, w[0]->num_rows, dim, part_grads));
    for (size_t c = 0; c < w.size(); ++c) {
      if (s[c]->first_id != w[c]->first_id || s[c]->num_rows != w[c]->num_rows) {
        return absl::InvalidArgumentError(StrCat("field '", state.key(), "' holds other nodes' rows than '", rows.key(), "'"));
      }
      core::SparseUpdateAt(options, static_cast<int64_t>(index.size()), dim, index.data(),
                           reinterpret_cast<float*>(w[c]->shm->data()), reinterpret_cast<float*>(s[c]->shm->data()),
                           part_grads);
    }
    pos[p].clear();
  }
  for (int p = 0; p < config_.num_parts; ++p) {
    for (size_t b = 0; b < pos[p].size(); b += ChunkRows(rb)) {
      const size_t n = std::min(ChunkRows(rb), pos[p].size() - b);
      const GatheredGradients part = GatherGradients(ids, grads, dim, std::span<const int64_t>(pos[p]).subspan(b, n));
      for (const std::string& address : servers_.CopiesOf(p)) {
        RETURN_IF_ERROR(InPartition(
            p, Client(address).SparseUpdate(rows.key(), state.key(), part.ids, part.grads.data(), dim, options)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ServerFields::Push(const core::FieldSchema& schema, std::span<const int64_t> ids, const char* rows,
                                core::PushOp op) {
  ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> pos, ByPartition(ids, StrCat("node field '", schema.key(), "'")));
  const size_t rb = schema.row_bytes();
  for (int p = 0; p < config_.num_parts; ++p) {
    for (size_t b = 0; b < pos[p].size(); b += ChunkRows(rb)) {
      const size_t n = std::min(ChunkRows(rb), pos[p].size() - b);
      rpc::Rows chunk;
      chunk.dtype = schema.dtype;
      chunk.shape = {static_cast<int64_t>(n)};
      chunk.shape.insert(chunk.shape.end(), schema.row_shape.begin(), schema.row_shape.end());
      chunk.data.resize(n * rb);
      std::vector<int64_t> part_ids;
      part_ids.reserve(n);
      for (size_t j = 0; j < n; ++j) {
        part_ids.push_back(ids[pos[p][b + j]]);
        std::memcpy(chunk.data.data() + j * rb, rows + pos[p][b + j] * rb, rb);
      }
      for (const std::string& address : servers_.CopiesOf(p)) {
        RETURN_IF_ERROR(InPartition(p, Client(address).PushNodeData(schema.key(), part_ids, chunk, op)));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace fanout::sampler

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

}  // namespace

absl::StatusOr<std::unique_ptr<ServerFields>> ServerFields::Make(const core::PartitionConfig& config,
                                                                 base::ServerMap servers, rpc::ClientOptions client) {
  ASSIGN_OR_RETURN(core::RangePartitionBook book, config.NodeBook());
  servers.addresses.resize(config.num_parts);
  return std::unique_ptr<ServerFields>(new ServerFields(config, std::move(book), std::move(servers), std::move(client)));
}

ServerFields::ServerFields(core::PartitionConfig config, core::RangePartitionBook book, base::ServerMap servers,
                           rpc::ClientOptions client)
    : config_(std::move(config)),
      book_(std::move(book)),
      servers_(std::move(servers)),
      client_options_(std::move(client)) {}

ServerFields::~ServerFields() = default;

rpc::GraphClient& ServerFields::Client(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(address);
  if (it == clients_.end()) it = clients_.emplace(address, rpc::GraphClient::Connect(address, client_options_)).first;
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
    for (const std::string& address : servers_.addresses[p]) {
      absl::StatusOr<bool> made = Client(address).CreateNodeField(schema.name, schema.dtype, schema.row_shape,
                                                                  schema.node_type);
      if (!made.ok()) return InPartition(p, made.status());
      created = created || *made;
    }
  }
  return created;
}

absl::Status ServerFields::Pull(const core::FieldSchema& schema, std::span<const int64_t> ids, char* out) {
  ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> pos, ByPartition(ids, StrCat("node field '", schema.key(), "'")));
  const size_t rb = schema.row_bytes();
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
    // Every server of the partition holds the same rows (writes go to all): spread the reads.
    const std::vector<std::string>& servers = servers_.addresses[c.part];
    const std::string& address = servers[read_turn_.fetch_add(1) % servers.size()];
    Client(address).PullRowsAsync(/*node=*/true, schema.key(), rb, c.ids, c.positions, out,
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
    for (size_t b = 0; b < pos[p].size(); b += ChunkRows(rb)) {
      const size_t n = std::min(ChunkRows(rb), pos[p].size() - b);
      std::vector<int64_t> part_ids(n);
      std::vector<float> part_grads(n * dim);
      for (size_t j = 0; j < n; ++j) {
        part_ids[j] = ids[pos[p][b + j]];
        std::memcpy(part_grads.data() + j * dim, grads + pos[p][b + j] * dim, rb);
      }
      for (const std::string& address : servers_.addresses[p]) {
        RETURN_IF_ERROR(InPartition(
            p, Client(address).SparseUpdate(rows.key(), state.key(), part_ids, part_grads.data(), dim, options)));
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
      for (const std::string& address : servers_.addresses[p]) {
        RETURN_IF_ERROR(InPartition(p, Client(address).PushNodeData(schema.key(), part_ids, chunk, op)));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace fanout::sampler

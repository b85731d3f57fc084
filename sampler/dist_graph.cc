#include "sampler/dist_graph.h"

#include <algorithm>
#include <cstring>
#include <future>

#include "core/check.h"
#include "core/dtype.h"
#include "core/status.h"
#include "core/strings.h"
#include "core/text_reader.h"

namespace fanout::sampler {

using core::StrCat;

absl::StatusOr<ServerMap> ParseServerList(const std::string& text, int num_parts) {
  ServerMap map;
  map.addresses.resize(num_parts);
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string entry(core::StripSpaces(std::string_view(text).substr(pos, comma - pos)));
    pos = comma + 1;
    if (entry.empty()) continue;
    size_t eq = entry.find('=');
    int64_t part = -1;
    if (eq == std::string::npos || !core::ParseInt64(entry.substr(0, eq), &part) || part < 0 ||
        part >= num_parts || eq + 1 == entry.size()) {
      return absl::InvalidArgumentError(StrCat("server entry '", entry, "' is not PART=HOST:PORT with PART in [0, ",
                                               num_parts, ")"));
    }
    map.addresses[part].push_back(entry.substr(eq + 1));
  }
  return map;
}

std::string FormatServerList(const ServerMap& map) {
  std::vector<std::string> entries;
  for (size_t p = 0; p < map.addresses.size(); ++p) {
    for (const std::string& a : map.addresses[p]) entries.push_back(StrCat(p, "=", a));
  }
  return core::StrJoin(entries, ",");
}

DistGraph::DistGraph(core::PartitionConfig config, DistGraphOptions options, core::RangePartitionBook book)
    : config_(std::move(config)), options_(std::move(options)), book_(std::move(book)) {}

namespace {
// Runs fn(p) for every partition with work: remote ones on their own threads, the local one on
// the caller's thread, concurrently. Returns the first error in partition order.
template <typename Fn>
absl::Status ForEachPart(int num_parts, const std::vector<std::vector<int64_t>>& positions, int local, Fn fn) {
  std::vector<std::future<absl::Status>> remote(num_parts);
  for (int p = 0; p < num_parts; ++p) {
    if (p != local && !positions[p].empty()) remote[p] = std::async(std::launch::async, fn, p);
  }
  absl::Status local_status;
  if (local >= 0 && !positions[local].empty()) local_status = fn(local);
  absl::Status first;
  for (int p = 0; p < num_parts; ++p) {
    absl::Status s = p == local ? local_status : remote[p].valid() ? remote[p].get() : absl::OkStatus();
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}
}  // namespace

absl::StatusOr<std::unique_ptr<DistGraph>> DistGraph::Open(const core::PartitionConfig& config,
                                                          const DistGraphOptions& options) {
  if (options.machine_id < -1 || options.machine_id >= config.num_parts) {
    return absl::InvalidArgumentError(StrCat("machine ID ", options.machine_id, " is not a partition of graph '",
                                             config.graph_name, "' (", config.num_parts, " partitions)"));
  }
  ASSIGN_OR_RETURN(core::RangePartitionBook book, config.NodeBook());
  std::unique_ptr<DistGraph> g(new DistGraph(config, options, std::move(book)));
  if (options.machine_id >= 0 && options.read_local_files) {
    auto store = core::PartitionStore::Open(config, options.machine_id);
    if (!store.ok()) {
      return absl::Status(store.status().code(), StrCat("opening local partition ", options.machine_id, ": ",
                                                        store.status().message()));
    }
    g->local_ = std::move(*store);
  }
  g->clients_.resize(config.num_parts);
  g->next_client_ = std::make_unique<std::atomic<uint64_t>[]>(config.num_parts);
  // Every remote partition needs a server; checked before any connection starts, since an early
  // return would wait for the checks already running.
  for (int p = 0; p < config.num_parts; ++p) {
    if (!g->is_local(p) && (p >= static_cast<int>(options.servers.addresses.size()) ||
                            options.servers.addresses[p].empty())) {
      return absl::InvalidArgumentError(StrCat("no server address for partition ", p, " of graph '",
                                               config.graph_name, "' (each remote partition needs one)"));
    }
  }
  server::ClientOptions client_options = options.client;
  if (options.security.any()) {
    ASSIGN_OR_RETURN(client_options.security,
                     server::Security::Load(options.security, server::Security::Role::kClient));
  }
  std::vector<std::future<absl::Status>> checks;
  for (int p = 0; p < config.num_parts; ++p) {
    if (g->is_local(p)) continue;
    for (const std::string& a : options.servers.addresses[p]) {
      g->clients_[p].push_back(server::GraphClient::Connect(a, client_options));
    }
    for (auto& c : g->clients_[p]) {
      server::GraphClient* client = c.get();
      checks.push_back(std::async(std::launch::async, [client, p, &config, &options]() -> absl::Status {
        auto fail = [&](const std::string& what) {
          return absl::UnavailableError(StrCat("partition ", p, " server ", client->address(), ": ", what));
        };
        absl::Status ready = client->WaitForReady(options.connect_timeout_seconds);
        if (!ready.ok()) return fail(StrCat("not reachable within ", options.connect_timeout_seconds, " s"));
        auto meta = client->GetMetadata();
        if (!meta.ok()) return fail(std::string(meta.status().message()));
        if (meta->graph_name() != config.graph_name || meta->part_id() != p ||
            meta->num_parts() != config.num_parts || meta->num_nodes() != config.num_nodes) {
          return absl::FailedPreconditionError(
              StrCat("partition ", p, " server ", client->address(), " serves graph '", meta->graph_name(),
                     "' partition ", meta->part_id(), " of ", meta->num_parts(), " (", meta->num_nodes(),
                     " nodes); expected graph '", config.graph_name, "' partition ", p, " of ", config.num_parts,
                     " (", config.num_nodes, " nodes)"));
        }
        return absl::OkStatus();
      }));
    }
  }
  absl::Status first;
  for (auto& c : checks) {
    absl::Status s = c.get();
    if (first.ok() && !s.ok()) first = s;
  }
  RETURN_IF_ERROR(first);
  if (!options.cache_field.empty() && options.cache_max_bytes > 0 && g->local_ != nullptr &&
      config.num_parts > 1) {
    RETURN_IF_ERROR(g->BuildCache());
  }
  return g;
}

absl::Status DistGraph::BuildCache() {
  const std::string& field = options_.cache_field;
  ASSIGN_OR_RETURN(size_t rb, NodeRowBytes(field));
  const std::string path = config_.PartPath(options_.machine_id, core::PartFiles::kHaloNids);
  ASSIGN_OR_RETURN(core::NpyArray halo_file, core::NpyArray::Map(path));
  if (halo_file.dtype() != core::DType::kInt64 || halo_file.shape().size() != 1) {
    return absl::InvalidArgumentError(StrCat(path, ": expected a 1-d int64 array of halo node IDs"));
  }
  const int64_t* h = halo_file.data_as<int64_t>();
  std::vector<int64_t> halo(h, h + halo_file.shape()[0]);
  const size_t max_rows = static_cast<size_t>(options_.cache_max_bytes) / std::max<size_t>(1, rb);
  std::vector<int64_t> counts;
  if (halo.size() > max_rows) {
    // Over budget: rank the halo by its edges into this partition.
    IdMap slot;
    slot.Reset(halo.size());
    for (int64_t id : halo) slot.Insert(id);
    counts.assign(halo.size(), 0);
    for (int64_t v = local_->node_start(); v < local_->node_end(); ++v) {
      const core::PartitionStore::Adjacency a = local_->Neighbors(v, core::EdgeDir::kIn);
      for (int64_t i = 0; i < a.degree; ++i) {
        const int64_t k = slot.Find(a.nbrs[i]);
        if (k >= 0) ++counts[k];
      }
    }
  }
  const std::vector<int64_t> ids = ChooseCachedHalo(halo, counts, max_rows);
  for (int64_t id : ids) {
    if (!book_.Contains(id) || book_.PartOf(id) == options_.machine_id) {
      return absl::InvalidArgumentError(StrCat(path, ": node ", id, " is not a remote node of partition ",
                                               options_.machine_id));
    }
  }
  auto cache = std::make_unique<RowCache>(field, rb, ids);
  // Pulled in chunks, each partition's on its own thread (ForEachPart).
  std::vector<std::vector<int64_t>> positions;
  RETURN_IF_ERROR(GroupByPart(cache->ids(), &positions));
  constexpr size_t kChunk = 1 << 16;
  char* rows = cache->mutable_row(0);
  RETURN_IF_ERROR(ForEachPart(config_.num_parts, positions, -1, [&](int p) -> absl::Status {
    const std::vector<int64_t>& pos = positions[p];
    for (size_t start = 0; start < pos.size(); start += kChunk) {
      const size_t n = std::min(kChunk, pos.size() - start);
      std::span<const int64_t> chunk_pos(pos.data() + start, n);
      std::vector<int64_t> chunk_ids(n);
      for (size_t i = 0; i < n; ++i) chunk_ids[i] = cache->ids()[chunk_pos[i]];
      RETURN_IF_ERROR(PullRemote(p, field, rb, chunk_ids, chunk_pos, rows));
    }
    return absl::OkStatus();
  }));
  cache_ = std::move(cache);
  return absl::OkStatus();
}

absl::Status DistGraph::PullRemote(int p, const std::string& field, size_t rb, const std::vector<int64_t>& ids,
                                   std::span<const int64_t> pos, char* out) const {
  auto rows = ClientFor(p)->PullNodeData(field, ids);
  if (!rows.ok()) return absl::Status(rows.status().code(), StrCat("partition ", p, ": ", rows.status().message()));
  if (rows->data.size() != pos.size() * rb) {
    return absl::InternalError(StrCat("partition ", p, " answered ", rows->data.size(), " bytes of field '", field,
                                      "' for ", pos.size(), " rows of ", rb, " bytes"));
  }
  for (size_t i = 0; i < pos.size(); ++i) std::memcpy(out + pos[i] * rb, rows->data.data() + i * rb, rb);
  return absl::OkStatus();
}

server::GraphClient* DistGraph::ClientFor(int part) const {
  auto& list = clients_[part];
  FANOUT_CHECK(!list.empty());
  uint64_t i = next_client_[part].fetch_add(1, std::memory_order_relaxed);
  return list[i % list.size()].get();
}

bool DistGraph::AllOwnedBy(std::span<const int64_t> ids, int part) const {
  const int64_t lo = book_.start(part), hi = book_.end(part);
  for (int64_t v : ids) {
    if (v < lo || v >= hi) return false;
  }
  return true;
}

absl::Status DistGraph::GroupByPart(std::span<const int64_t> ids, std::vector<std::vector<int64_t>>* positions) const {
  positions->assign(config_.num_parts, {});
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t v = ids[i];
    if (!book_.Contains(v)) {
      return absl::InvalidArgumentError(StrCat("node ID ", v, " is outside graph '", config_.graph_name, "' [0, ",
                                               config_.num_nodes, ")"));
    }
    (*positions)[book_.PartOf(v)].push_back(static_cast<int64_t>(i));
  }
  return absl::OkStatus();
}


absl::Status DistGraph::SampleNeighbors(std::span<const int64_t> seeds, const core::SampleOptions& options,
                                        core::SampledEdges* out) const {
  const int local = local_ ? options_.machine_id : -1;
  if (local >= 0 && AllOwnedBy(seeds, local)) {
    // The whole call is local (always so with one partition): no grouping, no copies.
    return core::SampleNeighbors(*local_, seeds, options, out);
  }
  std::vector<std::vector<int64_t>> positions;
  RETURN_IF_ERROR(GroupByPart(seeds, &positions));
  const int np = config_.num_parts;
  std::vector<core::SampledEdges> parts(np);
  RETURN_IF_ERROR(ForEachPart(np, positions, local, [&](int p) -> absl::Status {
    std::vector<int64_t> ids(positions[p].size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = seeds[positions[p][i]];
    if (p == local) return core::SampleNeighbors(*local_, ids, options, &parts[p]);
    auto r = ClientFor(p)->SampleNeighbors(ids, options);
    if (!r.ok()) return absl::Status(r.status().code(), StrCat("partition ", p, ": ", r.status().message()));
    parts[p] = std::move(*r);
    return absl::OkStatus();
  }));
  out->src.clear();
  out->dst.clear();
  out->eid.clear();
  if (np == 1 || std::count_if(positions.begin(), positions.end(), [](auto& v) { return !v.empty(); }) <= 1) {
    for (auto& part : parts) {
      if (part.size() > 0) *out = std::move(part);
    }
    return absl::OkStatus();
  }
  // Merge into seed order: count each seed's edges (a part's answer lists its seeds' edges in
  // request order, so a pointer walks both), then place every part's runs.
  std::vector<int64_t> offset(seeds.size() + 1, 0);
  std::vector<std::vector<int64_t>> run_start(np);
  for (int p = 0; p < np; ++p) {
    const auto& pos = positions[p];
    const auto& e = parts[p];
    const std::vector<int64_t>& seed_of = options.dir == core::EdgeDir::kIn ? e.dst : e.src;
    run_start[p].assign(pos.size() + 1, 0);
    size_t k = 0;
    for (size_t j = 0; j < pos.size(); ++j) {
      run_start[p][j] = static_cast<int64_t>(k);
      const int64_t s = seeds[pos[j]];
      while (k < e.size() && seed_of[k] == s) ++k;
      offset[pos[j] + 1] = static_cast<int64_t>(k) - run_start[p][j];
    }
    run_start[p][pos.size()] = static_cast<int64_t>(k);
    if (k != e.size()) {
      return absl::InternalError(StrCat("partition ", p, " answered ", e.size(),
                                        " sampled edges not grouped by seed in request order"));
    }
  }
  for (size_t i = 0; i < seeds.size(); ++i) offset[i + 1] += offset[i];
  const size_t total = static_cast<size_t>(offset.back());
  out->src.resize(total);
  out->dst.resize(total);
  out->eid.resize(total);
  for (int p = 0; p < np; ++p) {
    const auto& pos = positions[p];
    const auto& e = parts[p];
    for (size_t j = 0; j < pos.size(); ++j) {
      const int64_t from = run_start[p][j], n = run_start[p][j + 1] - from, to = offset[pos[j]];
      std::copy_n(e.src.data() + from, n, out->src.data() + to);
      std::copy_n(e.dst.data() + from, n, out->dst.data() + to);
      std::copy_n(e.eid.data() + from, n, out->eid.data() + to);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<core::FieldSchema> DistGraph::NodeFieldSchema(const std::string& field) const {
  std::vector<std::string> names;
  for (const auto& f : config_.node_fields) {
    if (f.name == field) return f;
    names.push_back(f.name);
  }
  return absl::NotFoundError(StrCat("graph '", config_.graph_name, "' has no node field '", field,
                                    "'; node fields: ", names.empty() ? "(none)" : core::StrJoin(names, ", ")));
}

absl::StatusOr<size_t> DistGraph::NodeRowBytes(const std::string& field) const {
  ASSIGN_OR_RETURN(core::FieldSchema f, NodeFieldSchema(field));
  return f.row_bytes();
}

absl::Status DistGraph::PullNodeRows(const std::string& field, std::span<const int64_t> ids, char* out) const {
  ASSIGN_OR_RETURN(size_t rb, NodeRowBytes(field));
  std::vector<std::vector<int64_t>> positions;
  RETURN_IF_ERROR(GroupByPart(ids, &positions));
  const int local = local_ ? options_.machine_id : -1;
  return ForEachPart(config_.num_parts, positions, local, [&](int p) -> absl::Status {
    const auto& pos = positions[p];
    std::vector<int64_t> part_ids(pos.size());
    for (size_t i = 0; i < pos.size(); ++i) part_ids[i] = ids[pos[i]];
    if (p == local) return local_->GatherNodeRowsAt(field, part_ids, pos, out);
    if (cache_ == nullptr || field != cache_->field()) return PullRemote(p, field, rb, part_ids, pos, out);
    // Cached rows are copied here; only the others are asked from the server.
    std::vector<int64_t> slots(pos.size()), miss_ids, miss_pos;
    for (size_t i = 0; i < pos.size(); ++i) slots[i] = cache_->Find(part_ids[i]);
    // Cached rows are random in a large array: prefetch a few ahead, as the local gather does.
    constexpr size_t kAhead = 8;
    const size_t lines = (rb + 63) / 64;
    for (size_t i = 0; i < pos.size(); ++i) {
      if (i + kAhead < pos.size() && slots[i + kAhead] >= 0) {
        const char* next = cache_->row(slots[i + kAhead]);
        for (size_t c = 0; c < lines; ++c) __builtin_prefetch(next + 64 * c);
      }
      if (slots[i] >= 0) {
        std::memcpy(out + pos[i] * rb, cache_->row(slots[i]), rb);
      } else {
        miss_ids.push_back(part_ids[i]);
        miss_pos.push_back(pos[i]);
      }
    }
    cache_hits_.fetch_add(static_cast<int64_t>(pos.size() - miss_ids.size()), std::memory_order_relaxed);
    cache_misses_.fetch_add(static_cast<int64_t>(miss_ids.size()), std::memory_order_relaxed);
    if (miss_ids.empty()) return absl::OkStatus();
    return PullRemote(p, field, rb, miss_ids, miss_pos, out);
  });
}

absl::StatusOr<std::string> DistGraph::PullWholeNodeField(const std::string& field) const {
  ASSIGN_OR_RETURN(size_t rb, NodeRowBytes(field));
  std::string out(static_cast<size_t>(config_.num_nodes) * rb, '\0');
  constexpr int64_t kChunk = 1 << 20;
  std::vector<int64_t> ids;
  for (int64_t start = 0; start < config_.num_nodes; start += kChunk) {
    const int64_t end = std::min(config_.num_nodes, start + kChunk);
    ids.resize(end - start);
    for (int64_t v = start; v < end; ++v) ids[v - start] = v;
    RETURN_IF_ERROR(PullNodeRows(field, ids, out.data() + start * rb));
  }
  return out;
}

}  // namespace fanout::sampler

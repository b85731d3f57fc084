#include "sampler/dist_graph.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <future>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/check.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/text_reader.h"
#include "core/dtype.h"
#include "rpc/remote_graph_source.h"

namespace fanout::sampler {

using base::StrCat;

namespace {
// A source's error as the router reports it: which partition failed comes first.
absl::Status NamePartition(int part, absl::Status s) {
  return s.ok() ? s : absl::Status(s.code(), StrCat("partition ", part, ": ", s.message()));
}
}  // namespace

DistGraph::DistGraph(core::PartitionConfig config, DistGraphOptions options, core::RangePartitionBook book,
                     core::TypeMap node_types)
    : config_(std::move(config)),
      options_(std::move(options)),
      book_(std::move(book)),
      node_types_(std::move(node_types)) {}

absl::Status DistGraph::ForEachPart(const std::vector<std::vector<int64_t>>& positions,
                                    const std::function<void(int, core::Done)>& start) const {
  const int np = static_cast<int>(positions.size());
  struct Pending {
    absl::Mutex mu;
    absl::CondVar cv;
    int answers ABSL_GUARDED_BY(mu) = 0;  // calls whose done has not run
    int starts ABSL_GUARDED_BY(mu) = 0;   // pool tasks still inside start(): they use `start` and `pending`
    std::vector<absl::Status> status ABSL_GUARDED_BY(mu);
  } pending;
  const int local = options_.machine_id;
  {
    absl::MutexLock lock(&pending.mu);
    pending.status.resize(np);
    for (int p = 0; p < np; ++p) pending.answers += positions[p].empty() ? 0 : 1;
  }
  auto done_of = [&pending](int p) {
    return [&pending, p](absl::Status s) {
      absl::MutexLock lock(&pending.mu);
      pending.status[p] = NamePartition(p, std::move(s));
      if (--pending.answers == 0) pending.cv.SignalAll();  // under the lock: `pending` outlives this
    };
  };
  // Other partitions' parts start on the pool (a remote source only sends its RPC there; a
  // cached one also copies its hits, in parallel with the local part); this machine's part runs
  // here. With one partition having work, everything runs here.
  const bool spread = pool_ != nullptr && std::count_if(positions.begin(), positions.end(),
                                                        [](const auto& v) { return !v.empty(); }) > 1;
  for (int p = 0; p < np; ++p) {
    if (positions[p].empty() || p == local) continue;
    if (!spread) {
      start(p, done_of(p));
      continue;
    }
    {
      absl::MutexLock lock(&pending.mu);
      ++pending.starts;
    }
    pool_->Submit([&pending, &start, done = done_of(p), p]() {
      start(p, done);
      absl::MutexLock lock(&pending.mu);
      if (--pending.starts == 0) pending.cv.SignalAll();
    });
  }
  if (local >= 0 && local < np && !positions[local].empty()) start(local, done_of(local));
  absl::MutexLock lock(&pending.mu);
  while (pending.answers != 0 || pending.starts != 0) pending.cv.Wait(&pending.mu);
  for (absl::Status& s : pending.status) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DistGraph>> DistGraph::FromSources(const core::PartitionConfig& config, int machine_id,
                                                                 std::vector<std::shared_ptr<core::GraphSource>> sources,
                                                                 std::shared_ptr<const core::PartitionStore> local) {
  if (static_cast<int>(sources.size()) != config.num_parts) {
    return absl::InvalidArgumentError(StrCat(sources.size(), " sources for the ", config.num_parts, " partitions of graph '",
                                             config.graph_name, "'"));
  }
  for (int p = 0; p < config.num_parts; ++p) {
    if (sources[p] == nullptr) return absl::InvalidArgumentError(StrCat("no source for partition ", p));
  }
  ASSIGN_OR_RETURN(core::RangePartitionBook book, config.NodeBook());
  ASSIGN_OR_RETURN(core::TypeMap types, config.NodeTypes());
  DistGraphOptions options;
  options.machine_id = machine_id;
  options.read_local_files = local != nullptr;
  std::unique_ptr<DistGraph> g(new DistGraph(config, options, std::move(book), std::move(types)));
  g->sources_ = std::move(sources);
  g->local_ = std::move(local);
  g->StartPool();
  return g;
}

absl::StatusOr<std::unique_ptr<DistGraph>> DistGraph::Open(const core::PartitionConfig& config,
                                                          const DistGraphOptions& options) {
  if (options.machine_id < -1 || options.machine_id >= config.num_parts) {
    return absl::InvalidArgumentError(StrCat("machine ID ", options.machine_id, " is not a partition of graph '",
                                             config.graph_name, "' (", config.num_parts, " partitions)"));
  }
  ASSIGN_OR_RETURN(core::RangePartitionBook book, config.NodeBook());
  ASSIGN_OR_RETURN(core::TypeMap types, config.NodeTypes());
  std::unique_ptr<DistGraph> g(new DistGraph(config, options, std::move(book), std::move(types)));
  g->sources_.resize(config.num_parts);
  if (options.machine_id >= 0 && options.read_local_files) {
    auto store = core::PartitionStore::Open(config, options.machine_id, {.row_cache_bytes = options.local_row_cache_bytes,
                                                                           .row_cache_policy = options.local_row_cache_policy});
    if (!store.ok()) {
      return absl::Status(store.status().code(), StrCat("opening local partition ", options.machine_id, ": ",
                                                        store.status().message()));
    }
    g->local_ = std::move(*store);
    g->sources_[options.machine_id] = std::make_shared<core::LocalGraphSource>(g->local_);
  }
  // Every remote partition needs a server; checked before any connection starts, since an early
  // return would wait for the checks already running.
  for (int p = 0; p < config.num_parts; ++p) {
    if (!g->is_local(p) && (p >= static_cast<int>(options.servers.addresses.size()) ||
                            options.servers.addresses[p].empty())) {
      return absl::InvalidArgumentError(StrCat("no server address for partition ", p, " of graph '",
                                               config.graph_name, "' (each remote partition needs one)"));
    }
  }
  rpc::ClientOptions client_options = options.client;
  if (options.security.any() && !client_options.security.loaded()) {  // (loaded once per process)
    ASSIGN_OR_RETURN(client_options.security, rpc::Security::Load(options.security, rpc::Security::Role::kClient));
  }
  // Connections are checked concurrently, once, when the graph opens.
  std::vector<std::shared_ptr<rpc::RemoteGraphSource>> remote(config.num_parts);
  std::vector<std::future<absl::Status>> checks;
  for (int p = 0; p < config.num_parts; ++p) {
    if (g->is_local(p)) continue;
    remote[p] = rpc::RemoteGraphSource::Connect(options.servers, p, options.machine_id, client_options);
    for (auto& c : remote[p]->clients()) {
      rpc::GraphClient* client = c.get();
      checks.push_back(std::async(std::launch::async, [client, p, &config, &options]() -> absl::Status {
        auto fail = [&](const std::string& what) {
          return absl::UnavailableError(StrCat("partition ", p, " server ", client->address(), ": ", what));
        };
        absl::Status ready = client->WaitForReady(options.connect_timeout_seconds);
        if (!ready.ok()) return fail(StrCat("not reachable within ", options.connect_timeout_seconds, " s"));
        auto meta = client->GetMetadata();
        if (!meta.ok()) {  // the client's message names the server already
          return absl::UnavailableError(StrCat("partition ", p, ": ", meta.status().message()));
        }
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
  for (int p = 0; p < config.num_parts; ++p) {
    if (!g->is_local(p)) g->sources_[p] = std::move(remote[p]);
  }
  g->StartPool();
  // A cache ranked by presampled counts is built by the graph's owner once it has presampled
  // (BuildCacheFromCounts), or mapped from its trainer's file.
  if (g->WantsCache() && (!options.cache_from_counts || options.shared_cache_fd >= 0)) {
    RETURN_IF_ERROR(g->BuildCache({}));
  }
  return g;
}

void DistGraph::StartPool() {
  if (config_.num_parts > 1) pool_ = std::make_unique<base::ThreadPool>(config_.num_parts - 1);
}

bool DistGraph::WantsCache() const {
  return !options_.cache_field.empty() && options_.cache_max_bytes > 0 && local_ != nullptr &&
         (config_.num_parts > 1 || LocalRowsOnDisk());
}

absl::Status DistGraph::BuildCacheFromCounts(const std::vector<int64_t>& taken) {
  if (!options_.cache_from_counts || cache_ != nullptr) {
    return absl::FailedPreconditionError(
        "BuildCacheFromCounts: the graph was not opened with cache_from_counts, or has its cache already");
  }
  if (static_cast<int64_t>(taken.size()) != config_.num_nodes) {
    return absl::InvalidArgumentError(StrCat("BuildCacheFromCounts: ", taken.size(), " counts for a graph of ",
                                             config_.num_nodes, " nodes"));
  }
  if (!WantsCache()) return absl::OkStatus();
  return BuildCache(taken);
}

absl::Status DistGraph::BuildCache(const std::vector<int64_t>& taken) {
  // A typed graph's features are typed fields, keyed TYPE/NAME like the pulls the cache answers:
  // it holds the halo rows of every type that has the field with the row width of the type with
  // the most halo nodes (ogbn-mag: papers, the only featured type; IGBH: all four types, each
  // with 1024 features), within one budget.
  const std::string path = config_.PartPath(options_.machine_id, core::PartFiles::kHaloNids);
  ASSIGN_OR_RETURN(core::NpyArray halo_file, core::NpyArray::Map(path));
  if (halo_file.dtype() != core::DType::kInt64 || halo_file.shape().size() != 1) {
    return absl::InvalidArgumentError(StrCat(path, ": expected a 1-d int64 array of halo node IDs"));
  }
  const int64_t* h = halo_file.data_as<int64_t>();
  std::vector<std::string> fields = {options_.cache_field};
  std::vector<char> cached_types;  // typed: which types' halo rows
  if (config_.typed()) {
    std::vector<int64_t> per_type(node_types_.num_types(), 0);
    for (int64_t i = 0; i < halo_file.rows(); ++i) {
      if (book_.Contains(h[i])) ++per_type[node_types_.ToTypeWise(h[i]).first];
    }
    std::vector<size_t> widths(node_types_.num_types(), 0);  // 0: the type has no such field
    int widest = -1;  // the type with the most halo nodes among those with the field
    for (int t = 0; t < node_types_.num_types(); ++t) {
      absl::StatusOr<core::FieldSchema> s = NodeFieldSchema(node_types_.name(t) + "/" + options_.cache_field);
      if (!s.ok()) continue;
      widths[t] = s->row_bytes();
      if (widest < 0 || per_type[t] > per_type[widest]) widest = t;
    }
    if (widest < 0) return absl::OkStatus();  // no type has the field: nothing to cache
    fields.clear();
    cached_types.assign(node_types_.num_types(), 0);
    for (int t = 0; t < node_types_.num_types(); ++t) {
      if (widths[t] == 0 || widths[t] != widths[widest]) continue;
      cached_types[t] = 1;
      fields.push_back(node_types_.name(t) + "/" + options_.cache_field);
    }
  }
  ASSIGN_OR_RETURN(core::FieldSchema schema, NodeFieldSchema(fields[0]));
  const size_t rb = schema.row_bytes();
  // A node the cache may hold: a remote one of a cached type, and with the local partition's
  // features on disk a local one too (a local row not cached is a read from disk, as a remote
  // one is a request to a server).
  auto may_hold = [&](int64_t v) {
    return book_.Contains(v) && (book_.PartOf(v) != options_.machine_id || LocalRowsOnDisk()) &&
           (cached_types.empty() || cached_types[node_types_.ToTypeWise(v).first] != 0);
  };
  std::shared_ptr<RowCache> cache;
  if (options_.shared_cache_fd >= 0 && options_.cache_from_counts) {
    // The trainer's, ranked by its presampled batches: the rows it chose, checked.
    ASSIGN_OR_RETURN(cache, RowCache::MapSharedAsWritten(fields, rb, options_.shared_cache_fd));
    for (int64_t id : cache->ids()) {
      if (!may_hold(id)) {
        return absl::FailedPreconditionError(StrCat("the trainer's row cache holds node ", id, ", which partition ",
                                                    options_.machine_id, "'s cache of '", cache->field(),
                                                    "' cannot hold (is it the same partition?)"));
      }
    }
    return InstallCache(std::move(cache));
  }
  // The candidates: the halo, the local nodes when they are read from disk, and the nodes the
  // presampled batches took.
  std::vector<int64_t> candidates;
  for (int64_t i = 0; i < halo_file.shape()[0]; ++i) {
    if (cached_types.empty() || (book_.Contains(h[i]) && cached_types[node_types_.ToTypeWise(h[i]).first] != 0)) {
      candidates.push_back(h[i]);
    }
  }
  if (LocalRowsOnDisk()) {
    for (int64_t v = local_->node_start(); v < local_->node_end(); ++v) {
      if (cached_types.empty() || cached_types[node_types_.ToTypeWise(v).first] != 0) candidates.push_back(v);
    }
  }
  const size_t max_rows = static_cast<size_t>(options_.cache_max_bytes) / std::max<size_t>(1, rb);
  IdMap slot;  // candidate -> its index, once they are ranked
  std::vector<int64_t> taken_by;  // taken[candidate], with presampled counts
  if (!taken.empty()) {
    slot.Reset(candidates.size());
    for (int64_t id : candidates) slot.Insert(id);
    for (int64_t v = 0; v < static_cast<int64_t>(taken.size()); ++v) {
      if (taken[v] > 0 && slot.Find(v) < 0 && may_hold(v)) {
        slot.Insert(v);
        candidates.push_back(v);
      }
    }
    for (int64_t id : candidates) taken_by.push_back(taken[id]);
  }
  std::vector<int64_t> edges;
  if (candidates.size() > max_rows) {
    // Over budget: rank the candidates (after the presampled counts) by their edges into this
    // partition (how often sampling reaches them: a node is an input row of a batch when it is
    // picked as an in-neighbour).
    if (taken.empty()) {
      slot.Reset(candidates.size());
      for (int64_t id : candidates) slot.Insert(id);
    }
    edges = EdgesIntoPartition(slot);
  }
  const std::vector<int64_t> ids = ChooseCachedRows(candidates, taken_by, edges, max_rows);
  for (int64_t id : ids) {
    if (!may_hold(id)) {
      return absl::InvalidArgumentError(StrCat(path, ": node ", id, " is not a remote node of partition ",
                                               options_.machine_id));
    }
  }
  if (options_.shared_cache_fd >= 0) {  // the trainer's, already filled
    ASSIGN_OR_RETURN(cache, RowCache::MapShared(fields, rb, ids, options_.shared_cache_fd));
    return InstallCache(std::move(cache));
  }
  if (options_.cache_in_shared_memory) {
    ASSIGN_OR_RETURN(cache, RowCache::InSharedMemory(fields, rb, ids));
  } else {
    cache = std::make_shared<RowCache>(fields, rb, ids);
  }
  // Pulled in chunks, all partitions at once; on a typed graph one type after another (a pull is
  // of one field).
  char* rows = cache->mutable_row(0);
  for (size_t f = 0; f < fields.size(); ++f) {
    ASSIGN_OR_RETURN(const core::FieldSchema fs, NodeFieldSchema(fields[f]));
    RETURN_IF_ERROR(FillCache(*cache, core::FieldRef{core::FieldRef::Kind::kNode, fs.node_type, fs.name}, rows));
  }
  return InstallCache(std::move(cache));
}

std::vector<int64_t> DistGraph::EdgesIntoPartition(const IdMap& nodes) const {
  std::vector<int64_t> edges(nodes.size(), 0);
  const int runs = local_->num_edge_types();  // every relation's in-edges
  for (int r = 0; r < runs; ++r) {
    for (int64_t v = local_->node_start(); v < local_->node_end(); ++v) {
      const core::PartitionStore::Adjacency a = local_->Neighbors(v, core::EdgeDir::kIn, runs > 1 ? r : -1);
      for (int64_t i = 0; i < a.degree; ++i) {
        const int64_t k = nodes.Find(a.nbr(i));
        if (k >= 0) ++edges[k];
      }
    }
  }
  return edges;
}

absl::Status DistGraph::FillCache(const RowCache& cache, const core::FieldRef& ref, char* rows) {
  const size_t rb = cache.row_bytes();
  // The cache's nodes of ref's type (all of them on an untyped graph), as slots.
  std::vector<int64_t> slots;
  int type = -1;
  if (!ref.type.empty()) {
    ASSIGN_OR_RETURN(type, node_types_.TypeId(ref.type));
  }
  for (size_t i = 0; i < cache.ids().size(); ++i) {
    if (type < 0 || node_types_.ToTypeWise(cache.ids()[i]).first == type) slots.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> ids(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) ids[i] = cache.ids()[slots[i]];
  std::vector<std::vector<int64_t>> positions;  // indexes into ids
  RETURN_IF_ERROR(GroupByPart(ids, book_, "node", &positions));
  constexpr size_t kChunk = 1 << 16;
  for (size_t start = 0;; start += kChunk) {
    std::vector<std::vector<int64_t>> chunk_pos(positions.size()), chunk_ids(positions.size());
    bool any = false;
    for (size_t p = 0; p < positions.size(); ++p) {
      if (start >= positions[p].size()) continue;
      const size_t n = std::min(kChunk, positions[p].size() - start);
      for (size_t k = start; k < start + n; ++k) {
        chunk_ids[p].push_back(ids[positions[p][k]]);
        chunk_pos[p].push_back(slots[positions[p][k]]);  // the row's slot in the cache
      }
      any = true;
    }
    if (!any) break;
    RETURN_IF_ERROR(ForEachPart(chunk_pos, [&](int p, core::Done done) {
      sources_[p]->GatherRows(ref, rb, chunk_ids[p], chunk_pos[p], rows, std::move(done));
    }));
  }
  return absl::OkStatus();
}

std::string DistGraph::HaloCacheReport() const {
  if (cache_ == nullptr) return "";
  auto percent = [](int64_t hits, int64_t total) {
    char p[32];
    std::snprintf(p, sizeof(p), "%.1f", 100.0 * static_cast<double>(hits) / static_cast<double>(total));
    return std::string(p);
  };
  const int64_t local_rows = cached_local_rows_;
  const int64_t hits = cache_hits(), total = hits + cache_misses();
  const int64_t local_hits = local_cache_counters_->hits.load(std::memory_order_relaxed);
  const int64_t local_total = local_hits + local_cache_counters_->misses.load(std::memory_order_relaxed);
  // (A cache ranked by presampled batches holds remote rows beyond the halo too.)
  const char* label = options_.cache_from_counts ? "presampled row cache: " : "halo cache: ";
  std::string report;
  if (total > 0) {
    report = StrCat(label, hits, " of ", total, " remote rows (", percent(hits, total), " %) from its ",
                    static_cast<int64_t>(cache_->size()) - local_rows, " rows of '", cache_->field(), "'");
  }
  if (local_total > 0) {
    report += StrCat(report.empty() ? label : "; ", local_hits, " of ", local_total, " local rows (",
                     percent(local_hits, local_total), " %) from its ", local_rows, " most-read local rows of '",
                     cache_->field(), "' instead of the disk");
  }
  return report;
}

absl::Status DistGraph::InstallCache(std::shared_ptr<const RowCache> cache) {
  cache_ = std::move(cache);
  cached_local_rows_ = 0;
  for (int64_t id : cache_->ids()) cached_local_rows_ += book_.PartOf(id) == options_.machine_id ? 1 : 0;
  for (int p = 0; p < config_.num_parts; ++p) {
    if (!is_local(p)) {
      sources_[p] = std::make_shared<CachingGraphSource>(sources_[p], cache_, cache_counters_);
    } else if (LocalRowsOnDisk()) {
      sources_[p] = std::make_shared<CachingGraphSource>(sources_[p], cache_, local_cache_counters_);
    }
  }
  return absl::OkStatus();
}

bool DistGraph::AllOwnedBy(std::span<const int64_t> ids, int part) const {
  const int64_t lo = book_.start(part), hi = book_.end(part);
  for (int64_t v : ids) {
    if (v < lo || v >= hi) return false;
  }
  return true;
}

absl::Status DistGraph::GroupByPart(std::span<const int64_t> ids, const core::RangePartitionBook& book,
                                    const char* what, std::vector<std::vector<int64_t>>* positions) const {
  positions->assign(config_.num_parts, {});
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t v = ids[i];
    if (!book.Contains(v)) {
      return absl::InvalidArgumentError(StrCat(what, " ID ", v, " is outside graph '", config_.graph_name, "' [0, ",
                                               book.end(config_.num_parts - 1), ")"));
    }
    (*positions)[book.PartOf(v)].push_back(static_cast<int64_t>(i));
  }
  return absl::OkStatus();
}

namespace {
// ids[positions[p][i]] for every partition: what each source is asked for.
std::vector<std::vector<int64_t>> IdsByPart(std::span<const int64_t> ids,
                                            const std::vector<std::vector<int64_t>>& positions) {
  std::vector<std::vector<int64_t>> out(positions.size());
  for (size_t p = 0; p < positions.size(); ++p) {
    out[p].reserve(positions[p].size());
    for (int64_t i : positions[p]) out[p].push_back(ids[i]);
  }
  return out;
}
}  // namespace

namespace {

// A typed answer lists its edges relation by relation, each relation's in seed order; blocks
// want them grouped by seed. Reorders `e` so that each seed's edges are contiguous, in `seeds`
// order, and within a seed relation by relation (a stable counting sort). Nothing to do on the
// one-type graph (no etype column).
absl::Status GroupBySeed(std::span<const int64_t> seeds, core::EdgeDir dir, core::SampledEdges* e) {
  if (e->etype.empty()) return absl::OkStatus();
  const size_t n = e->size();
  const std::vector<int64_t>& seed_of = dir == core::EdgeDir::kIn ? e->dst : e->src;
  std::vector<int64_t> at(seeds.size() + 1, 0);
  std::vector<int64_t> slot(n);  // each edge's seed position, then its place
  for (size_t k = 0; k < n;) {
    const int32_t r = e->etype[k];
    size_t j = 0;
    for (; k < n && e->etype[k] == r; ++k) {
      while (j < seeds.size() && seeds[j] != seed_of[k]) ++j;
      if (j == seeds.size()) {
        return absl::InternalError(StrCat("sampled edges of relation ", r, " are not grouped by seed in request order"));
      }
      slot[k] = static_cast<int64_t>(j);
      ++at[j + 1];
    }
  }
  for (size_t j = 0; j < seeds.size(); ++j) at[j + 1] += at[j];
  for (size_t k = 0; k < n; ++k) slot[k] = at[slot[k]]++;
  auto permute = [&](auto& v) {
    std::remove_reference_t<decltype(v)> sorted(n);
    for (size_t k = 0; k < n; ++k) sorted[slot[k]] = v[k];
    v = std::move(sorted);
  };
  permute(e->src);
  permute(e->dst);
  permute(e->eid);
  permute(e->etype);
  return absl::OkStatus();
}

}  // namespace

absl::Status DistGraph::SampleNeighbors(std::span<const int64_t> seeds, const core::SampleOptions& options,
                                        core::SampledEdges* out) const {
  if (!seeds.empty() && book_.Contains(seeds[0])) {
    const int p = book_.PartOf(seeds[0]);
    if (AllOwnedBy(seeds, p)) {
      // One owner (always so with one partition): no merge, no copies (but a typed answer's
      // regrouping).
      RETURN_IF_ERROR(NamePartition(
          p, core::WaitFor([&](core::Done done) { sources_[p]->SampleNeighbors(seeds, options, out, std::move(done)); })));
      return NamePartition(p, GroupBySeed(seeds, options.dir, out));
    }
  }
  std::vector<std::vector<int64_t>> positions;
  RETURN_IF_ERROR(GroupByPart(seeds, book_, "node", &positions));
  const int np = config_.num_parts;
  const std::vector<std::vector<int64_t>> ids = IdsByPart(seeds, positions);
  std::vector<core::SampledEdges> parts(np);
  RETURN_IF_ERROR(ForEachPart(positions, [&](int p, core::Done done) {
    sources_[p]->SampleNeighbors(ids[p], options, &parts[p], std::move(done));
  }));
  bool typed = false;
  for (int p = 0; p < np; ++p) {
    RETURN_IF_ERROR(NamePartition(p, GroupBySeed(ids[p], options.dir, &parts[p])));
    typed = typed || !parts[p].etype.empty();
  }
  out->src.clear();
  out->dst.clear();
  out->eid.clear();
  out->etype.clear();
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
  if (typed) out->etype.resize(total);
  for (int p = 0; p < np; ++p) {
    const auto& pos = positions[p];
    const auto& e = parts[p];
    for (size_t j = 0; j < pos.size(); ++j) {
      const int64_t from = run_start[p][j], n = run_start[p][j + 1] - from, to = offset[pos[j]];
      std::copy_n(e.src.data() + from, n, out->src.data() + to);
      std::copy_n(e.dst.data() + from, n, out->dst.data() + to);
      std::copy_n(e.eid.data() + from, n, out->eid.data() + to);
      if (typed && n > 0) {
        if (e.etype.size() != e.size()) return absl::InternalError(StrCat("partition ", p, " answered no edge types"));
        std::copy_n(e.etype.data() + from, n, out->etype.data() + to);
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<core::FieldSchema> DistGraph::NodeFieldSchema(const std::string& field) const {
  std::vector<std::string> names;
  for (const auto& f : config_.node_fields) {
    if (f.key() == field) return f;
    names.push_back(f.key());
  }
  return absl::NotFoundError(StrCat("graph '", config_.graph_name, "' has no node field '", field,
                                    "'; node fields: ", names.empty() ? "(none)" : base::StrJoin(names, ", ")));
}

absl::StatusOr<size_t> DistGraph::NodeRowBytes(const std::string& field) const {
  ASSIGN_OR_RETURN(core::FieldSchema f, NodeFieldSchema(field));
  return f.row_bytes();
}

absl::Status DistGraph::GatherRows(const core::FieldRef& field, size_t row_bytes, const core::RangePartitionBook& book,
                                   std::span<const int64_t> ids, char* out) const {
  std::vector<std::vector<int64_t>> positions;
  RETURN_IF_ERROR(GroupByPart(ids, book, field.kind == core::FieldRef::Kind::kNode ? "node" : "edge", &positions));
  const std::vector<std::vector<int64_t>> part_ids = IdsByPart(ids, positions);
  return ForEachPart(positions, [&](int p, core::Done done) {
    sources_[p]->GatherRows(field, row_bytes, part_ids[p], positions[p], out, std::move(done));
  });
}

absl::Status DistGraph::PullNodeRows(const std::string& field, std::span<const int64_t> ids, char* out) const {
  ASSIGN_OR_RETURN(core::FieldSchema f, NodeFieldSchema(field));
  const core::FieldRef ref{core::FieldRef::Kind::kNode, f.node_type, f.name};
  return GatherRows(ref, f.row_bytes(), book_, ids, out);
}

absl::StatusOr<core::FieldSchema> DistGraph::EdgeFieldSchema(const std::string& field) const {
  for (const core::FieldSchema& f : config_.edge_fields) {
    if (f.key() == field) return f;  // a typed field by "SRC:REL:DST/NAME"
  }
  std::vector<std::string> names;
  for (const core::FieldSchema& f : config_.edge_fields) names.push_back(f.key());
  return absl::NotFoundError(StrCat("graph '", config_.graph_name, "' has no edge field '", field,
                                    "'; edge fields: ", names.empty() ? "(none)" : base::StrJoin(names, ", ")));
}

absl::Status DistGraph::PullEdgeRows(const std::string& field, std::span<const int64_t> eids, char* out) const {
  ASSIGN_OR_RETURN(core::FieldSchema f, EdgeFieldSchema(field));
  ASSIGN_OR_RETURN(core::RangePartitionBook edges, config_.EdgeBook());
  return GatherRows(core::FieldRef{core::FieldRef::Kind::kEdge, f.edge_type, f.name}, f.row_bytes(), edges, eids, out);
}

absl::Status DistGraph::Degrees(std::span<const int64_t> ids, core::EdgeDir dir, int64_t* out) const {
  std::vector<std::vector<int64_t>> positions;
  RETURN_IF_ERROR(GroupByPart(ids, book_, "node", &positions));
  const std::vector<std::vector<int64_t>> part_ids = IdsByPart(ids, positions);
  std::vector<std::vector<int64_t>> answers(positions.size());
  for (size_t p = 0; p < positions.size(); ++p) answers[p].resize(positions[p].size());
  RETURN_IF_ERROR(ForEachPart(positions, [&](int p, core::Done done) {
    sources_[p]->Degrees(part_ids[p], dir, answers[p].data(), std::move(done));
  }));
  for (size_t p = 0; p < positions.size(); ++p) {
    for (size_t i = 0; i < positions[p].size(); ++i) out[positions[p][i]] = answers[p][i];
  }
  return absl::OkStatus();
}

absl::Status DistGraph::FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) const {
  ASSIGN_OR_RETURN(core::RangePartitionBook edges, config_.EdgeBook());
  std::vector<std::vector<int64_t>> positions;
  RETURN_IF_ERROR(GroupByPart(eids, edges, "edge", &positions));
  const std::vector<std::vector<int64_t>> part_ids = IdsByPart(eids, positions);
  std::vector<std::vector<int64_t>> srcs(positions.size()), dsts(positions.size());
  for (size_t p = 0; p < positions.size(); ++p) {
    srcs[p].resize(positions[p].size());
    dsts[p].resize(positions[p].size());
  }
  RETURN_IF_ERROR(ForEachPart(positions, [&](int p, core::Done done) {
    sources_[p]->FindEdges(part_ids[p], srcs[p].data(), dsts[p].data(), std::move(done));
  }));
  for (size_t p = 0; p < positions.size(); ++p) {
    for (size_t i = 0; i < positions[p].size(); ++i) {
      src[positions[p][i]] = srcs[p][i];
      dst[positions[p][i]] = dsts[p][i];
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> DistGraph::PullWholeNodeField(const std::string& field) const {
  ASSIGN_OR_RETURN(core::FieldSchema f, NodeFieldSchema(field));
  const size_t rb = f.row_bytes();
  int type = -1;  // an untyped field has a row for every node
  if (!f.node_type.empty()) {
    ASSIGN_OR_RETURN(type, node_types_.TypeId(f.node_type));
  }
  const int64_t rows = type < 0 ? config_.num_nodes : node_types_.count(type);
  std::string out(static_cast<size_t>(rows) * rb, '\0');
  constexpr int64_t kChunk = 1 << 20;
  std::vector<int64_t> ids;
  for (int64_t start = 0; start < rows; start += kChunk) {
    const int64_t end = std::min(rows, start + kChunk);
    ids.resize(end - start);
    for (int64_t v = start; v < end; ++v) ids[v - start] = type < 0 ? v : node_types_.ToHomogeneous(type, v);
    RETURN_IF_ERROR(PullNodeRows(field, ids, out.data() + start * rb));
  }
  return out;
}

}  // namespace fanout::sampler

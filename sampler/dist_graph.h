// A partitioned graph as one process of machine k sees it: a router over one GraphSource per
// partition. The partition book routes every node ID to its owner; machine k's own partition is
// a LocalGraphSource over its memory-mapped files (no RPC), every other partition a
// RemoteGraphSource over gRPC's asynchronous API, optionally behind the halo row cache. One call
// starts every other partition's part on a pool of P - 1 threads started with the graph, does
// the local part on the calling thread meanwhile, waits, and merges: no thread is started per
// call, and the same code path serves any sources (tests use fakes, see FromSources).
#pragma once

#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/ip_config.h"
#include "base/thread_pool.h"
#include "core/graph_source.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "core/sampling.h"
#include "core/type_map.h"
#include "rpc/client_options.h"
#include "sampler/row_cache.h"

namespace fanout::sampler {

// Where the servers of each partition listen (base/ip_config.h).
using base::FormatServerList;
using base::ParseServerList;
using base::ServerMap;

struct DistGraphOptions {
  int machine_id = 0;                 // this process's machine = its local partition; -1: none
  bool read_local_files = true;       // false: the local partition too goes through its servers
  ServerMap servers;                  // required for every partition not read from files
  rpc::ClientOptions client;       // deadline per call, retries, message limit
  // TLS and token files (--tls-*, --auth-token-file): loaded by Open into the clients (unless
  // the caller has loaded them into client.security already, so that a process reads them
  // once), and handed on to sampler processes.
  base::SecurityOptions security;
  double connect_timeout_seconds = 30;  // Open() waits this long for every server to answer
  // Node field whose remote rows this process keeps in memory: the rows of the local
  // partition's halo (graph/halo_nids.npy), pulled once by Open, at most cache_max_bytes of them
  // (the halo nodes with the most edges into the partition first). Later pulls of that field
  // fetch only the uncached remote rows. The cache is not updated by pushes to remote servers:
  // use it for fields that do not change during the job (features). "" or 0 bytes: no cache.
  // With the local partition's fields read from disk (local_row_cache_bytes >= 0), the local
  // nodes compete for the same budget by the same count, and the local rows it keeps are read
  // from it instead of the disk (one copy per machine in shared memory; a static cache of what
  // sampling reads most is what keeps a job off the disk, where a dynamic one sees mostly rows
  // read once: docs/benchmarks.md).
  std::string cache_field;
  int64_t cache_max_bytes = 0;
  // true: the rows are ranked by how often this process's own batches take them, counted by
  // presampling (fanout-train --feature-cache-rows presample): remote nodes beyond the halo
  // compete too, the halo's edge count breaking ties. Open then builds no cache; its owner
  // presamples through the graph and calls BuildCacheFromCounts. A process mapping such a cache
  // (shared_cache_fd) takes the IDs the file holds, as it cannot presample the same way.
  bool cache_from_counts = false;
  // -1: map the local partition's node fields. >= 0: read them from disk behind a row cache of
  // this many bytes (core::StoreOptions::row_cache_bytes), as servers do with --feature-cache-mb,
  // so that a machine's features need not fit in its memory.
  int64_t local_row_cache_bytes = -1;
  // That cache's policy (fanout-launch --features-cache-policy; LRU for comparison).
  core::CachePolicy local_row_cache_policy = core::CachePolicy::kS3Fifo;
  // The halo cache in shared memory (RowCache::InSharedMemory), for processes that map it: a
  // trainer's, whose sampler processes then map it instead of each pulling a copy.
  bool cache_in_shared_memory = false;
  // A sampler process: its trainer's halo cache to map (a memfd; -1: pull its own). The rows
  // must be those this process would choose (checked). Passed as fanout-sampler --halo-cache-fd.
  int shared_cache_fd = -1;
};

// Thread-safe: every method may be called concurrently.
class DistGraph {
 public:
  // Opens the local partition's files and connects to every remote partition's servers, checking
  // that each answers its metadata with the graph and partition the config says. Errors name the
  // partition, the address and what failed.
  static absl::StatusOr<std::unique_ptr<DistGraph>> Open(const core::PartitionConfig& config,
                                                         const DistGraphOptions& options);
  // A router over the given sources (sources[p] answers for partition p), as machine
  // `machine_id` of `config` sees the graph: for tests, and for callers that build their own
  // sources. No cache; `local` (optional) is machine_id's partition store.
  static absl::StatusOr<std::unique_ptr<DistGraph>> FromSources(
      const core::PartitionConfig& config, int machine_id, std::vector<std::shared_ptr<core::GraphSource>> sources,
      std::shared_ptr<const core::PartitionStore> local = nullptr);

  const core::PartitionConfig& config() const { return config_; }
  const core::RangePartitionBook& node_book() const { return book_; }
  // The graph's node types (one, "_N", for a graph without types).
  const core::TypeMap& node_types() const { return node_types_; }
  int machine_id() const { return options_.machine_id; }
  int num_parts() const { return config_.num_parts; }
  int64_t num_nodes() const { return config_.num_nodes; }
  // True when partition p is read from local files.
  bool is_local(int p) const { return local_ != nullptr && p == options_.machine_id; }
  // The local partition's store, read from its files; null when every partition is remote.
  const core::PartitionStore* local_store() const { return local_.get(); }
  // Who answers for partition p (for logs and tests).
  const core::GraphSource& source(int p) const { return *sources_[p]; }

  // DGL's sample_neighbors over the whole graph: `seeds` (distinct, as a block's destination
  // nodes are) may belong to any partitions; the edges come back grouped by seed in `seeds` order
  // (a seed's edges contiguous; on a typed graph, relation by relation within a seed, with the
  // etype column). Out-of-graph IDs are INVALID_ARGUMENT.
  absl::Status SampleNeighbors(std::span<const int64_t> seeds, const core::SampleOptions& options,
                               core::SampledEdges* out) const;

  // Gathers rows of node field `field` for `ids` (any partitions) into `out`, row i at
  // out + i * row_bytes (the caller sizes it: ids.size() * RowBytes(field)). Fields are named by
  // FieldSchema::key(): a typed field as "TYPE/NAME", for IDs of that type only.
  absl::Status PullNodeRows(const std::string& field, std::span<const int64_t> ids, char* out) const;
  absl::StatusOr<core::FieldSchema> NodeFieldSchema(const std::string& field) const;
  absl::StatusOr<size_t> NodeRowBytes(const std::string& field) const;
  // The same for edge fields: rows of `field` for global edge IDs `eids` (any partitions), row i
  // at out + i * row bytes.
  absl::Status PullEdgeRows(const std::string& field, std::span<const int64_t> eids, char* out) const;
  absl::StatusOr<core::FieldSchema> EdgeFieldSchema(const std::string& field) const;
  // In- or out-degrees of any nodes, and the endpoints of any edges, routed to their owners.
  absl::Status Degrees(std::span<const int64_t> ids, core::EdgeDir dir, int64_t* out) const;
  absl::Status FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) const;

  // With cache_from_counts: builds the cache from `taken` (one count per node of the graph: how
  // often presampled batches took it as an input node, sampler::PresampleInputCounts). Call once,
  // before the graph is shared with other threads or processes. FAILED_PRECONDITION when the
  // graph has a cache already or was not opened with cache_from_counts.
  absl::Status BuildCacheFromCounts(const std::vector<int64_t>& taken);
  // True while a cache_from_counts graph waits for BuildCacheFromCounts: it has a cache to build
  // (a field, a budget, and remote partitions or local features on disk).
  bool awaits_cache() const { return options_.cache_from_counts && cache_ == nullptr && WantsCache(); }

  // The remote rows cached by Open (null without a cache), and how many remote rows of the
  // cached field later pulls found in it and asked from servers.
  const RowCache* row_cache() const { return cache_.get(); }
  // How many of its rows are the local partition's (LocalRowsOnDisk; else 0).
  int64_t cached_local_rows() const { return cached_local_rows_; }
  // The memfd of a halo cache in shared memory (cache_in_shared_memory), or -1.
  int shared_cache_fd() const { return cache_ != nullptr ? cache_->fd() : -1; }
  int64_t cache_hits() const { return cache_counters_->hits.load(std::memory_order_relaxed); }
  int64_t cache_misses() const { return cache_counters_->misses.load(std::memory_order_relaxed); }
  // The same for the local rows it holds when the local features are read from disk
  // (local_row_cache_bytes >= 0): rows found, and rows read through the local store.
  int64_t local_cache_hits() const { return local_cache_counters_->hits.load(std::memory_order_relaxed); }
  int64_t local_cache_misses() const { return local_cache_counters_->misses.load(std::memory_order_relaxed); }
  // Counts rows found in the cache by a reader that looks them up itself (sampler/machine_rows.h)
  // into the figures above: `remote` of remote partitions, `local` of the local partition's.
  void CountCacheHits(int64_t remote, int64_t local) const {
    cache_counters_->hits.fetch_add(remote, std::memory_order_relaxed);
    local_cache_counters_->hits.fetch_add(local, std::memory_order_relaxed);
  }
  // What the halo cache did in this process, for a log line: "halo cache: 812 of 1000 remote rows
  // (81.2 %) from its 6927 rows of 'paper/feat'"; "" without a cache or before any remote row.
  std::string HaloCacheReport() const;

  // Every row of a node field over the whole graph, partition by partition (for small fields
  // such as split masks); pulled in chunks. A typed field's rows are its type's nodes in ID
  // order, i.e. row i is type-wise ID i (node_types().ToHomogeneous gives its ID).
  absl::StatusOr<std::string> PullWholeNodeField(const std::string& field) const;

 private:
  DistGraph(core::PartitionConfig config, DistGraphOptions options, core::RangePartitionBook book,
            core::TypeMap node_types);
  bool AllOwnedBy(std::span<const int64_t> ids, int part) const;
  // The local partition's node fields are read from disk (local_row_cache_bytes >= 0): the halo
  // cache then holds the local nodes most read too.
  bool LocalRowsOnDisk() const { return local_ != nullptr && options_.local_row_cache_bytes >= 0; }
  // Splits `ids` by owner: positions[p] = positions in `ids` owned by partition p.
  absl::Status GroupByPart(std::span<const int64_t> ids, const core::RangePartitionBook& book, const char* what,
                           std::vector<std::vector<int64_t>>* positions) const;
  // Starts start(p, done) for every partition with positions, remote ones first and this
  // machine's last (a local source works on the calling thread while the RPCs are in flight),
  // and waits for all. Returns the first error in partition order.
  absl::Status ForEachPart(const std::vector<std::vector<int64_t>>& positions,
                           const std::function<void(int, core::Done)>& start) const;
  // Rows of `field` for `ids`, routed by `book` (nodes' or edges'), row i at out + i * row_bytes.
  absl::Status GatherRows(const core::FieldRef& field, size_t row_bytes, const core::RangePartitionBook& book,
                          std::span<const int64_t> ids, char* out) const;
  // Chooses the cache's rows (by `taken` when it has one count per node, else by the halo's edges
  // into the partition), pulls them and installs the cache; or maps the trainer's.
  absl::Status BuildCache(const std::vector<int64_t>& taken);
  // Whether Open was asked for a cache this graph can hold.
  bool WantsCache() const;
  // How many of the local partition's in-edges (every relation's) come from each of `nodes`
  // (edges[i] for the node of index i).
  std::vector<int64_t> EdgesIntoPartition(const IdMap& nodes) const;
  // Pulls the rows of `ref` (its type's nodes among the cache's) into `rows`, the cache's rows.
  absl::Status FillCache(const RowCache& cache, const core::FieldRef& ref, char* rows);
  // Makes `cache` answer the remote partitions' gathers of its field.
  absl::Status InstallCache(std::shared_ptr<const RowCache> cache);
  void StartPool();

  core::PartitionConfig config_;
  DistGraphOptions options_;
  core::RangePartitionBook book_;
  core::TypeMap node_types_;
  std::shared_ptr<const core::PartitionStore> local_;
  std::vector<std::shared_ptr<core::GraphSource>> sources_;  // [part]
  std::shared_ptr<const RowCache> cache_;
  int64_t cached_local_rows_ = 0;
  std::shared_ptr<CacheCounters> cache_counters_ = std::make_shared<CacheCounters>();
  // The local partition's rows the cache answered and missed (LocalRowsOnDisk).
  std::shared_ptr<CacheCounters> local_cache_counters_ = std::make_shared<CacheCounters>();
  // P - 1 threads, started once: the remote parts of a call start here (see ForEachPart).
  std::unique_ptr<base::ThreadPool> pool_;
};

}  // namespace fanout::sampler

// One partition of a partitioned graph, as fanout-partition wrote it, mapped from its .npy files:
// what a graph server serves and what a sampler reads directly for its own machine's partition.
// Read-only files are shared with every other process mapping them; node fields that receive
// pushes are mapped copy-on-write, so the files never change.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/disk_rows.h"
#include "core/npy.h"
#include "core/partition_book.h"
#include "core/partition_config.h"
#include "core/shared_rows.h"
#include "core/sparse_optim.h"

namespace fanout::core {

enum class EdgeDir { kIn, kOut };

// How a store holds its node fields.
struct StoreOptions {
  // -1: map them (shared with every process mapping the files; pushes copy-on-write). >= 0: read
  // the node fields of the files with pread, behind one row cache of this many bytes
  // (core/disk_rows.h), so that the partition's features need not fit in memory; such fields
  // take no pushes. Fields created at run time stay in memory either way.
  int64_t row_cache_bytes = -1;
  CachePolicy row_cache_policy = CachePolicy::kS3Fifo;
};
enum class PushOp { kAssign, kAdd };

// Thread-safe: every method may be called concurrently. Pushes to a node field take that
// field's writer lock; gathers of it take the reader lock.
class PartitionStore {
 public:
  // Maps partition `part_id` of `config`. Checks every file's dtype and shape against the config.
  static absl::StatusOr<std::unique_ptr<PartitionStore>> Open(const PartitionConfig& config, int part_id,
                                                              const StoreOptions& options = {});

  // With StoreOptions::row_cache_bytes >= 0: the row cache's figures over every field read from
  // disk (hits, misses, bytes and reads from disk, bytes and rows held); zeros otherwise.
  RowCacheStats row_cache_stats() const;

  const PartitionConfig& config() const { return config_; }
  int part_id() const { return part_id_; }
  const RangePartitionBook& node_book() const { return node_book_; }
  const RangePartitionBook& edge_book() const { return edge_book_; }
  int64_t node_start() const { return node_book_.start(part_id_); }
  int64_t node_end() const { return node_book_.end(part_id_); }
  int64_t edge_start() const { return edge_book_.start(part_id_); }
  int64_t edge_end() const { return edge_book_.end(part_id_); }
  int64_t num_inner_nodes() const { return node_end() - node_start(); }
  int64_t num_inner_edges() const { return edge_end() - edge_start(); }
  // Typed graphs (core/type_map.h): node and edge types of the whole graph; 1 each on the
  // one-type graph. Inner edges of relation r are [edge_type_range(r).first, .second).
  const TypeMap& node_types() const { return node_types_; }
  const TypeMap& edge_types() const { return edge_types_; }
  int num_edge_types() const { return edge_types_.num_types(); }
  std::pair<int64_t, int64_t> edge_type_range(int etype) const { return edge_types_.Range(etype, part_id_); }

  // OK if every ID is a node (edge) of this partition; otherwise INVALID_ARGUMENT naming the
  // first ID that is not, and whether it is outside the graph or which partition owns it.
  absl::Status CheckOwnedNodes(std::span<const int64_t> ids) const;
  absl::Status CheckOwnedEdges(std::span<const int64_t> ids) const;

  // The schema of a node (edge) field; NOT_FOUND names the field and lists the valid ones.
  absl::StatusOr<FieldSchema> NodeFieldSchema(const std::string& name) const;
  absl::StatusOr<FieldSchema> EdgeFieldSchema(const std::string& name) const;

  // Copies the rows of owned nodes (edges) `ids` of field `name` into `out`, row after row
  // (resized to ids.size() * row bytes). A typed node field is named by its key, "TYPE/NAME", and
  // holds only nodes of its type (INVALID_ARGUMENT naming the first ID of another type).
  absl::Status GatherNodeRows(const std::string& name, std::span<const int64_t> ids, std::string* out) const;
  absl::Status GatherEdgeRows(const std::string& name, std::span<const int64_t> ids, std::string* out) const;
  // Like GatherNodeRows, but scatters: the row of ids[i] goes to out + dst_rows[i] * row bytes,
  // in a matrix the caller sized (a sampler filling its own rows of a batch's input features).
  absl::Status GatherNodeRowsAt(const std::string& name, std::span<const int64_t> ids,
                                std::span<const int64_t> dst_rows, char* out) const;
  absl::Status GatherEdgeRowsAt(const std::string& name, std::span<const int64_t> ids,
                                std::span<const int64_t> dst_rows, char* out) const;
  // The rows of node field `name` of the partition's files as mapped in this process, row i
  // node base + i, for a reader on this machine that copies rows itself instead of asking for
  // them (sampler/machine_rows.h). Null rows (and no error) when the field is read from disk
  // (StoreOptions::row_cache_bytes) or was created at run time; NOT_FOUND for an unknown field.
  // A push into the field from this process (none of fanout's do: servers take pushes) changes
  // the rows under such a reader.
  struct MappedRows {
    const char* rows = nullptr;
    int64_t base = 0, end = 0;
    size_t row_bytes = 0;
  };
  absl::StatusOr<MappedRows> MappedNodeRows(const std::string& name) const;
  // Writes rows into a node field: `data` holds ids.size() rows in the field's dtype. kAdd adds
  // element-wise (numeric fields). Repeated IDs are applied in order.
  absl::Status PushNodeRows(const std::string& name, std::span<const int64_t> ids, const void* data,
                            size_t bytes, PushOp op);

  // Adds a node field that lives in memory only (a Python script's DistTensor): zero-filled rows
  // for every node of the partition, read and written like a field of the files until the store
  // goes. OK and *created false when a created field of that name has the same schema;
  // ALREADY_EXISTS when the name is a field of the files or a created field of another schema;
  // RESOURCE_EXHAUSTED when created fields would pass `max_total_bytes` together.
  // The rows live in shared memory that a process of the same user on this machine can map
  // (core/shared_rows.h; in the heap where no memfd could be made).
  absl::Status CreateNodeField(const FieldSchema& schema, int64_t max_total_bytes, bool* created);
  // How to map created field `key`'s rows, and which nodes' rows they are ([base, end), row i
  // node base + i); NOT_FOUND for a field of the files or one kept in the heap.
  struct CreatedShare {
    SharedRowsInfo rows;
    int64_t base = 0, end = 0;
  };
  absl::StatusOr<CreatedShare> CreatedFieldShare(const std::string& key) const;
  // One sparse optimizer step (core/sparse_optim.h) on the rows of float32 field `rows_field`
  // (created, [dim] per row) for distinct owned `ids`, with their state in float32 field
  // `state_field` ([SparseStateWidth] per row) and `grads` ([ids.size(), dim]), both fields
  // locked for the step. Errors name the field and the bad ID.
  absl::Status ApplySparseUpdate(const std::string& rows_field, const std::string& state_field,
                                 std::span<const int64_t> ids, const float* grads,
                                 const SparseOptimizerOptions& options);

  // Degrees of owned nodes (in: stored in-edges; out: out-edges anywhere in the graph), over
  // every relation.
  absl::Status Degrees(std::span<const int64_t> ids, EdgeDir dir, int64_t* out) const;
  // Endpoints (global node IDs) of owned edges.
  absl::Status FindEdges(std::span<const int64_t> eids, int64_t* src, int64_t* dst) const;

  // The neighbours of owned node `gid` (precondition: owned) along `dir`: global neighbour IDs
  // and global edge IDs, `degree` of each, stored as int32 or int64 (the config's ID widths),
  // read as int64 through nbr(i) and eid(i). For in-edges the edge IDs are consecutive from `first_eid`
  // and `eids` is null. `etype` picks the in-edges of one relation; without it (-1) the graph
  // must have one relation (precondition), and out-edges take -1 only. Out-edges need
  // LoadOutEdges() to have succeeded first (precondition).
  struct Adjacency {
    IdView nbrs;
    IdView eids;  // empty for in-edges
    int64_t first_eid = 0;
    int64_t degree = 0;
    int64_t nbr(int64_t i) const { return nbrs[i]; }
    int64_t eid(int64_t i) const { return eids ? eids[i] : first_eid + i; }
  };
  Adjacency Neighbors(int64_t gid, EdgeDir dir, int etype = -1) const;
  // Starts loading the index-pointer entries Neighbors(gid, dir) will read, so that a loop over
  // many nodes overlaps their cache misses. Precondition: owned (and out-edges loaded for kOut).
  void PrefetchNeighbors(int64_t gid, EdgeDir dir, int etype = -1) const {
    __builtin_prefetch(IdView::Of(dir == EdgeDir::kIn ? indptr_ : out_.indptr).address(IndexRow(gid, etype)));
  }
  // The out-edge index (out_indptr, out_indices, out_eids) is mapped the first time a call needs
  // it (out-degrees, out-neighbour sampling), so a job that samples in-edges only never maps it.
  // Thread-safe; every call after the first returns the first one's result. Errors name the file.
  absl::Status LoadOutEdges() const;
  bool out_edges_loaded() const { return out_loaded_.load(std::memory_order_acquire); }

  // Per-edge weights of field `name` for owned edges as doubles (any numeric dtype, one value
  // per edge): weights[eid - edge_start()]. Errors name the field when it is missing, not a
  // scalar per edge, or holds a negative or non-finite value.
  absl::StatusOr<std::shared_ptr<const std::vector<double>>> EdgeWeights(const std::string& name) const;

 private:
  struct Field {
    FieldSchema schema;
    // Row i is node (edge) base + i; a typed node field's rows are its type's range [base, end).
    int64_t base = 0, end = 0;
    NpyArray data;                  // mapped or owned rows; empty when read from disk
    std::unique_ptr<DiskRows> disk;  // StoreOptions::row_cache_bytes >= 0: the file's rows
    std::shared_ptr<SharedRows> shared;  // a created field's rows in shared memory (`data` views them)
    size_t row_bytes() const { return disk ? disk->row_bytes() : data.row_bytes(); }
    // Readers (gathers) share it; PushNodeRows writes rows under it exclusively. It guards the
    // rows' bytes, not `data` the object (its shape and mapping never change), so `data` carries
    // no annotation.
    mutable absl::Mutex mu;
  };
  PartitionStore(PartitionConfig config, int part_id, RangePartitionBook nodes, RangePartitionBook edges,
                 TypeMap node_types, TypeMap edge_types)
      : config_(std::move(config)),
        part_id_(part_id),
        node_book_(std::move(nodes)),
        edge_book_(std::move(edges)),
        node_types_(std::move(node_types)),
        edge_types_(std::move(edge_types)) {}
  // The index-pointer row of owned node `gid` in relation `etype`'s run (-1 and 0: the first).
  int64_t IndexRow(int64_t gid, int etype) const {
    return gid - node_start() + (etype > 0 ? etype * num_inner_nodes() : 0);
  }
  absl::StatusOr<Field*> FindField(const std::map<std::string, std::unique_ptr<Field>>& fields,
                                   const std::string& kind, const std::string& name) const;
  // A node field of the files, else a created one.
  absl::StatusOr<Field*> FindNodeField(const std::string& name) const;
  absl::Status CheckOwned(std::span<const int64_t> ids, const RangePartitionBook& book,
                          const char* what) const;
  // OK when every ID (already owned) has a row in `f`: always for untyped fields; for a typed
  // one, INVALID_ARGUMENT naming the first ID of another type.
  absl::Status CheckFieldRows(const Field& f, std::span<const int64_t> ids) const;
  // Copies rows ids[i] - f.base of `f` under its reader lock; the IDs are already checked.
  absl::Status GatherRows(const Field& f, std::span<const int64_t> ids, std::string* out) const;
  // Row ids[i] - f.base of `f` to out + dst_rows[i] * row bytes (row i when dst_rows is empty),
  // under its reader lock; the IDs are already checked.
  absl::Status GatherRowsAt(const Field& f, std::span<const int64_t> ids, std::span<const int64_t> dst_rows,
                            char* out) const;

  PartitionConfig config_;
  int part_id_;
  RangePartitionBook node_book_, edge_book_;
  TypeMap node_types_, edge_types_;
  NpyArray indptr_, indices_;
  struct OutEdges {
    NpyArray indptr, indices, eids;
  };
  // Written once, under out_once_; read only after out_loaded_ (or LoadOutEdges) says so.
  mutable OutEdges out_;
  mutable absl::once_flag out_once_;
  mutable absl::Status out_status_;
  mutable std::atomic<bool> out_loaded_{false};
  std::map<std::string, std::unique_ptr<Field>> node_fields_, edge_fields_;
  std::shared_ptr<RowCache> row_cache_;  // null unless node fields are read from disk
  // Node fields created at run time (CreateNodeField). Entries are only ever added, so a Field*
  // found under the lock stays valid after it (map nodes do not move).
  mutable absl::Mutex created_mu_;
  std::map<std::string, std::unique_ptr<Field>> created_ ABSL_GUARDED_BY(created_mu_);
  int64_t created_bytes_ ABSL_GUARDED_BY(created_mu_) = 0;
  // Created fields in shared memory (one descriptor each); beyond kMaxSharedFields, in the heap,
  // so that no number of created fields can run the server out of descriptors.
  int shared_fields_ ABSL_GUARDED_BY(created_mu_) = 0;
  static constexpr int kMaxSharedFields = 256;
  // Created fields of any size, zero bytes included: the byte budget alone would let empty
  // fields add map entries without end.
  static constexpr size_t kMaxCreatedFields = 4096;
  mutable absl::Mutex weights_mu_;
  mutable std::map<std::string, std::shared_ptr<const std::vector<double>>> weights_ ABSL_GUARDED_BY(weights_mu_);
};

}  // namespace fanout::core

// Rows of a node field for a fixed set of remote nodes, held in this process's memory: a
// machine keeps the features of its halo (the remote sources of its partition's edges, the
// remote nodes its samples reach most) so that a mini-batch pulls only the other remote rows
// over the network. DistDGL fetches every remote row on every batch.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph_source.h"
#include "sampler/id_map.h"

namespace fanout::sampler {

// Immutable once filled; Find and row are then thread-safe. `fields`: the field keys whose rows it
// holds ("feat"; on a typed graph "TYPE/feat" of one or more types whose rows are the same
// width, keyed by graph-wide node ID, which no two types share).
class RowCache {
 public:
  // Room for one row of `row_bytes` per ID (distinct IDs); the rows start zeroed and are filled
  // through mutable_row.
  RowCache(std::vector<std::string> fields, size_t row_bytes, std::vector<int64_t> ids);
  // The same, with the rows in a memfd (fd()) that other processes can map instead of pulling the
  // rows again: a trainer's sampler processes share their trainer's one copy. The file holds the
  // rows, then the IDs, so that a process mapping it can check they are the ones it chose.
  static absl::StatusOr<std::shared_ptr<RowCache>> InSharedMemory(std::vector<std::string> fields, size_t row_bytes,
                                                                  std::vector<int64_t> ids);
  // Maps, read-only, a filled cache another process made with InSharedMemory (`fd`, borrowed);
  // FAILED_PRECONDITION unless it holds exactly `ids` with rows of `row_bytes`.
  static absl::StatusOr<std::shared_ptr<RowCache>> MapShared(std::vector<std::string> fields, size_t row_bytes,
                                                             std::vector<int64_t> ids, int fd);
  // The same for a cache whose rows the process mapping it cannot choose itself (its trainer
  // ranked them by presampled batches): the IDs are the ones the file holds. FAILED_PRECONDITION
  // unless the file is whole rows of `row_bytes` and their distinct IDs; the caller checks the IDs.
  static absl::StatusOr<std::shared_ptr<RowCache>> MapSharedAsWritten(std::vector<std::string> fields,
                                                                      size_t row_bytes, int fd);
  ~RowCache();
  RowCache(const RowCache&) = delete;
  RowCache& operator=(const RowCache&) = delete;
  // The memfd holding the rows (InSharedMemory), or -1.
  int fd() const { return fd_; }

  const std::vector<std::string>& fields() const { return fields_; }
  bool Holds(const std::string& key) const;
  // The keys as one string for messages: "paper/feat", "author/feat, paper/feat".
  std::string field() const;
  size_t row_bytes() const { return row_bytes_; }
  const std::vector<int64_t>& ids() const { return index_.ids(); }
  size_t size() const { return index_.size(); }
  size_t bytes() const { return bytes_; }

  // The slot of `id`, or -1 when it is not cached.
  int64_t Find(int64_t id) const { return index_.Find(id); }
  const char* row(int64_t slot) const { return rows_ + slot * row_bytes_; }
  // Not for a cache mapped with MapShared (read-only).
  char* mutable_row(int64_t slot) { return rows_ + slot * row_bytes_; }

 private:
  RowCache(std::vector<std::string> fields, size_t row_bytes, const std::vector<int64_t>& ids, bool allocate);

  std::vector<std::string> fields_;
  size_t row_bytes_;
  IdMap index_;
  std::vector<char> heap_;  // the rows, unless mapped
  char* rows_ = nullptr;
  size_t bytes_ = 0;
  void* map_ = nullptr;  // the mapping of a shared cache (rows then IDs)
  size_t map_bytes_ = 0;
  int fd_ = -1;  // owned when InSharedMemory made it
};

// How many remote rows of the cached field were found in a cache, and how many were asked of
// the source behind it.
struct CacheCounters {
  std::atomic<int64_t> hits{0}, misses{0};
};

// A GraphSource decorator: gathers of a field the cache holds copy the cached rows from memory and ask
// the source behind it only for the others; every other call passes through.
class CachingGraphSource final : public core::ForwardingGraphSource {
 public:
  CachingGraphSource(std::shared_ptr<core::GraphSource> inner, std::shared_ptr<const RowCache> cache,
                     std::shared_ptr<CacheCounters> counters);

  std::string Describe() const override;
  void GatherRows(const core::FieldRef& field, size_t row_bytes, std::span<const int64_t> ids,
                  std::span<const int64_t> positions, char* out, core::Done done) override;

 private:
  std::shared_ptr<const RowCache> cache_;
  std::shared_ptr<CacheCounters> counters_;
};

// Which of the `candidates` (distinct node IDs) to cache under a budget of `max_rows`: all of them
// when they fit, else the ones most taken by presampled batches (taken[i] for candidates[i]; empty:
// not presampled), then those with the most edges into the partition (edge_counts[i]; empty when
// everything fits), ties broken by ID. Returns sorted IDs.
std::vector<int64_t> ChooseCachedRows(const std::vector<int64_t>& candidates, const std::vector<int64_t>& taken,
                                      const std::vector<int64_t>& edge_counts, size_t max_rows);

}  // namespace fanout::sampler

// Rows of one node field for a fixed set of remote nodes, held in this process's memory: a
// machine keeps the features of its halo (the remote sources of its partition's edges, the
// remote nodes its samples reach most) so that a mini-batch pulls only the other remote rows
// over the network. DistDGL fetches every remote row on every batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sampler/id_map.h"

namespace fanout::sampler {

// Immutable once filled; Find and row are then thread-safe.
class RowCache {
 public:
  // Room for one row of `row_bytes` per ID (distinct IDs); the rows start zeroed and are filled
  // through mutable_row.
  RowCache(std::string field, size_t row_bytes, std::vector<int64_t> ids);

  const std::string& field() const { return field_; }
  size_t row_bytes() const { return row_bytes_; }
  const std::vector<int64_t>& ids() const { return index_.ids(); }
  size_t size() const { return index_.size(); }
  size_t bytes() const { return rows_.size(); }

  // The slot of `id`, or -1 when it is not cached.
  int64_t Find(int64_t id) const { return index_.Find(id); }
  const char* row(int64_t slot) const { return rows_.data() + slot * row_bytes_; }
  char* mutable_row(int64_t slot) { return rows_.data() + slot * row_bytes_; }

 private:
  std::string field_;
  size_t row_bytes_;
  IdMap index_;
  std::vector<char> rows_;
};

// Which of a partition's halo nodes to cache under a budget of `max_rows`: all of them when they
// fit, else the ones with the most edges into the partition (edge_counts[i] for halo[i]), ties
// broken by ID. Returns sorted IDs.
std::vector<int64_t> ChooseCachedHalo(const std::vector<int64_t>& halo,
                                      const std::vector<int64_t>& edge_counts, size_t max_rows);

}  // namespace fanout::sampler

// The feature rows that every process of a machine can read in place: its partition's rows of
// the field, mapped from the partition's files (page cache: one copy per machine), and the halo
// cache's (a memfd the trainer filled and its sampler processes map). A sampler process that
// knows the trainer reads these leaves them out of a batch (MiniBatch::feature_slots says where
// each input row is), so that its batch file holds only the rows it fetched from other machines
// or from disk; the trainer copies the rest into the batch when it takes it (Complete). The batch
// files, up to `prefetch` + 2 per sampler process, were a quarter of a machine's memory on the
// products-scale job (docs/benchmarks.md, issue 40).
//
// Slots: [0, local_rows()) are the local partition's nodes in ID order (node node_start + s),
// then the halo cache's slots. Both sides build the same slots from the same graph options;
// the trainer passes num_slots() to its sampler processes, which check it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sampler/dist_graph.h"
#include "sampler/minibatch.h"
#include "sampler/row_cache.h"

namespace fanout::sampler {

class BufferPool;

// Immutable; thread-safe. Borrows the graph's local store and halo cache: the graph must
// outlive it.
class MachineRows {
 public:
  // The rows of node field `field` that `graph` holds in memory: its local partition's when they
  // are mapped from the files (not read from disk), and, with `with_cache`, its halo cache's
  // when it holds the field with rows of the same width. Null when there are none, or on a typed
  // graph (whose features are one field per type: not built yet).
  static std::shared_ptr<const MachineRows> Of(const DistGraph& graph, const std::string& field, bool with_cache);

  int64_t num_slots() const { return local_rows_ + cache_rows_; }
  int64_t local_rows() const { return local_rows_; }
  size_t row_bytes() const { return row_bytes_; }

  // The slot holding `id`'s row, or -1.
  int64_t Slot(int64_t id) const {
    if (id >= local_base_ && id < local_base_ + local_rows_) return id - local_base_;
    if (cache_ == nullptr) return -1;
    const int64_t s = cache_->Find(id);
    return s < 0 ? -1 : local_rows_ + s;
  }
  // True when the slot is a row of the halo cache (not the local partition's mapped field).
  bool InCache(int64_t slot) const { return slot >= local_rows_; }
  const char* Row(int64_t slot) const {
    return slot < local_rows_ ? local_ + slot * row_bytes_ : cache_->row(slot - local_rows_);
  }

  // Puts a batch whose sampler left rows here together: mb->features becomes one row per input
  // node, in `pool`'s memory (the slot's row, or the next fetched row for a slot of -1), and
  // mb->feature_slots is emptied. A batch without slots is left as it is. INVALID_ARGUMENT (the
  // batch is left as it was) when the slots and the fetched rows do not fit together, or a slot
  // is outside [-1, num_slots()).
  absl::Status Complete(MiniBatch* mb, BufferPool* pool) const;

 private:
  MachineRows() = default;

  const char* local_ = nullptr;
  int64_t local_base_ = 0, local_rows_ = 0;
  const RowCache* cache_ = nullptr;
  int64_t cache_rows_ = 0;
  size_t row_bytes_ = 0;
};

}  // namespace fanout::sampler

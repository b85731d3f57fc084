#include "sampler/machine_rows.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/strings.h"
#include "sampler/buffer_pool.h"

namespace fanout::sampler {

using base::StrCat;

std::shared_ptr<const MachineRows> MachineRows::Of(const DistGraph& graph, const std::string& field, bool with_cache) {
  if (field.empty() || graph.config().typed()) return nullptr;
  std::shared_ptr<MachineRows> m(new MachineRows());
  if (const core::PartitionStore* local = graph.local_store(); local != nullptr) {
    absl::StatusOr<core::PartitionStore::MappedRows> mapped = local->MappedNodeRows(field);
    if (mapped.ok() && mapped->rows != nullptr) {
      m->local_ = mapped->rows;
      m->local_base_ = mapped->base;
      m->local_rows_ = mapped->end - mapped->base;
      m->row_bytes_ = mapped->row_bytes;
    }
  }
  const RowCache* cache = graph.row_cache();
  if (with_cache && cache != nullptr && cache->Holds(field) && cache->size() > 0 &&
      (m->local_ == nullptr || cache->row_bytes() == m->row_bytes_)) {
    m->cache_ = cache;
    m->cache_rows_ = static_cast<int64_t>(cache->size());
    m->row_bytes_ = cache->row_bytes();
  }
  if (m->num_slots() == 0 || m->row_bytes_ == 0) return nullptr;
  return m;
}

absl::Status MachineRows::Complete(MiniBatch* mb, BufferPool* pool) const {
  if (mb->feature_slots.empty()) return absl::OkStatus();
  const int64_t* slots = std::as_const(mb->feature_slots).data();
  const Rows& fetched = mb->features;
  const int64_t n = static_cast<int64_t>(mb->feature_slots.size());
  if (mb->blocks.empty() || static_cast<size_t>(n) != mb->input_nodes().size()) {
    return absl::InvalidArgumentError(
        StrCat("the batch has ", n, " feature slots for ", mb->blocks.empty() ? 0 : mb->input_nodes().size(),
               " input nodes"));
  }
  if (fetched.row_bytes() != row_bytes_) {
    return absl::InvalidArgumentError(StrCat("the batch's feature rows are ", fetched.row_bytes(),
                                             " bytes, the machine's rows ", row_bytes_));
  }
  const int64_t slots_out = num_slots();
  int64_t misses = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t s = slots[i];
    if (s < -1 || s >= slots_out) {
      return absl::InvalidArgumentError(StrCat("input ", i, " of the batch names row slot ", s, ", outside [-1, ",
                                               slots_out, ")"));
    }
    misses += s < 0 ? 1 : 0;
  }
  if (misses != fetched.rows || (misses > 0 && fetched.data == nullptr)) {
    return absl::InvalidArgumentError(StrCat("the batch leaves ", misses, " input rows to be fetched but carries ",
                                             fetched.rows, " rows"));
  }
  const size_t rb = row_bytes_;
  std::shared_ptr<char[]> buf = pool->Get(std::max<size_t>(8, static_cast<size_t>(n) * rb));
  char* out = buf.get();
  const char* next = static_cast<const char*>(fetched.data);
  // Rows lie anywhere in the partition's mapping and the cache: start loading a few ahead.
  constexpr int64_t kAhead = 8;
  for (int64_t i = 0; i < std::min(n, kAhead); ++i) {
    if (slots[i] >= 0) __builtin_prefetch(Row(slots[i]));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (i + kAhead < n && slots[i + kAhead] >= 0) __builtin_prefetch(Row(slots[i + kAhead]));
    const int64_t s = slots[i];
    const char* src;
    if (s < 0) {
      src = next;
      next += rb;
    } else {
      src = Row(s);
    }
    std::memcpy(out + static_cast<size_t>(i) * rb, src, rb);
  }
  Rows whole;
  whole.dtype = fetched.dtype;
  whole.codec = fetched.codec;
  whole.cols = fetched.cols;
  whole.rows = n;
  whole.data = out;
  whole.owner = std::move(buf);
  mb->features = std::move(whole);
  mb->feature_slots = Int64Array();
  return absl::OkStatus();
}

}  // namespace fanout::sampler

// Global node ID -> compact local index, in order of first insertion: the relabelling DGL's
// to_block does. Open addressing with linear probing over a power-of-two table; one instance is
// reused batch after batch (Reset keeps the allocation). Not thread-safe.
#pragma once

#include <cstdint>
#include <algorithm>
#include <vector>

namespace fanout::sampler {

class IdMap {
 public:
  // Empties the map and sizes the table for up to `expected` distinct IDs (it grows past that).
  void Reset(size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2) cap <<= 1;
    if (keys_.size() != cap) {
      keys_.assign(cap, kEmpty);
      values_.resize(cap);
    } else {
      std::fill(keys_.begin(), keys_.end(), kEmpty);
    }
    mask_ = cap - 1;
    ids_.clear();
  }

  // The local index of `id`, inserting it (as the next index) when new. IDs must be >= 0.
  int64_t Insert(int64_t id) {
    size_t h = Hash(id) & mask_;
    while (true) {
      int64_t k = keys_[h];
      if (k == id) return values_[h];
      if (k == kEmpty) break;
      h = (h + 1) & mask_;
    }
    const int64_t v = static_cast<int64_t>(ids_.size());
    keys_[h] = id;
    values_[h] = v;
    ids_.push_back(id);
    if (ids_.size() * 2 > keys_.size()) Grow();
    return v;
  }

  // Distinct IDs in insertion order (ids()[local index] = global ID).
  const std::vector<int64_t>& ids() const { return ids_; }
  std::vector<int64_t> TakeIds() { return std::move(ids_); }
  size_t size() const { return ids_.size(); }

 private:
  static constexpr int64_t kEmpty = -1;
  static size_t Hash(int64_t id) {
    uint64_t x = static_cast<uint64_t>(id) * 0x9e3779b97f4a7c15ULL;
    return static_cast<size_t>(x ^ (x >> 29));
  }
  void Grow() {
    std::vector<int64_t> ids = std::move(ids_);
    keys_.assign(keys_.size() * 2, kEmpty);
    values_.resize(keys_.size());
    mask_ = keys_.size() - 1;
    ids_.clear();
    for (int64_t id : ids) Insert(id);
  }

  std::vector<int64_t> keys_, values_;
  std::vector<int64_t> ids_;
  size_t mask_ = 0;
};

}  // namespace fanout::sampler

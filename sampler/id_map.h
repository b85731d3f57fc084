// Global node ID -> compact local index, in order of first insertion: the relabelling DGL's
// to_block does. Open addressing with linear probing over a power-of-two table of (key, value)
// slots, so a lookup costs one cache miss; one instance is reused batch after batch (Reset keeps
// the allocation). Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace fanout::sampler {

class IdMap {
 public:
  // Empties the map and sizes the table for about `expected` distinct IDs (it grows past that).
  void Reset(size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2) cap <<= 1;
    if (slots_.size() < cap) slots_.resize(cap);
    // A table larger than needed is kept but only its first `cap` slots are used, so clearing
    // costs O(expected), not O(largest table so far).
    std::fill(slots_.begin(), slots_.begin() + cap, Slot{kEmpty, 0});
    mask_ = cap - 1;
    ids_.clear();
  }

  // The local index of `id`, inserting it (as the next index) when new. IDs must be >= 0.
  int64_t Insert(int64_t id) {
    size_t h = Hash(id) & mask_;
    while (true) {
      Slot& s = slots_[h];
      if (s.key == id) return s.value;
      if (s.key == kEmpty) break;
      h = (h + 1) & mask_;
    }
    const int64_t v = static_cast<int64_t>(ids_.size());
    slots_[h] = Slot{id, v};
    ids_.push_back(id);
    if (ids_.size() * 2 > mask_ + 1) Grow();
    return v;
  }

  // The local index of `id`, or -1 when it was never inserted.
  int64_t Find(int64_t id) const {
    if (slots_.empty()) return -1;
    for (size_t h = Hash(id) & mask_;; h = (h + 1) & mask_) {
      const Slot& s = slots_[h];
      if (s.key == id) return s.value;
      if (s.key == kEmpty) return -1;
    }
  }

  // Starts loading the slot `id` hashes to (call a few inserts ahead).
  void Prefetch(int64_t id) const { __builtin_prefetch(&slots_[Hash(id) & mask_]); }

  // Distinct IDs in insertion order (ids()[local index] = global ID).
  const std::vector<int64_t>& ids() const { return ids_; }
  std::vector<int64_t> TakeIds() { return std::move(ids_); }
  size_t size() const { return ids_.size(); }

 private:
  static constexpr int64_t kEmpty = -1;
  struct Slot {
    int64_t key;
    int64_t value;
  };
  static size_t Hash(int64_t id) {
    uint64_t x = static_cast<uint64_t>(id) * 0x9e3779b97f4a7c15ULL;
    return static_cast<size_t>(x ^ (x >> 29));
  }
  void Grow() {
    std::vector<int64_t> ids = std::move(ids_);
    Reset((mask_ + 1));
    for (int64_t id : ids) Insert(id);
  }

  std::vector<Slot> slots_;
  std::vector<int64_t> ids_;
  size_t mask_ = 0;
};

// The slot of each node a trainer's feature cache holds (SamplerOptions::cached_nodes): slot i
// holds ids()[i]. Every sampler process keeps one, so its size matters: a dense table of 4 bytes
// per node of the graph when that is smaller than an IdMap's 40 or so bytes per cached node (a
// cache of more than about a tenth of the nodes), else an IdMap. Immutable; thread-safe.
class NodeSlots {
 public:
  // `ids` distinct and in [0, num_nodes); fewer than 2^31 of them.
  NodeSlots(std::vector<int64_t> ids, int64_t num_nodes) {
    if (num_nodes > 0 && static_cast<uint64_t>(num_nodes) * sizeof(int32_t) < ids.size() * 40) {
      dense_.assign(static_cast<size_t>(num_nodes), -1);
      for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] >= 0 && ids[i] < num_nodes) dense_[static_cast<size_t>(ids[i])] = static_cast<int32_t>(i);
      }
      ids_ = std::move(ids);
    } else {
      map_.Reset(ids.size());
      for (int64_t id : ids) map_.Insert(id);
    }
  }

  // The slot of `id`, or -1 when it is not cached.
  int64_t Find(int64_t id) const {
    if (dense_.empty()) return id >= 0 ? map_.Find(id) : -1;  // the IdMap takes IDs >= 0 only
    return id >= 0 && static_cast<uint64_t>(id) < dense_.size() ? dense_[static_cast<size_t>(id)] : -1;
  }
  void Prefetch(int64_t id) const {
    if (dense_.empty()) {
      map_.Prefetch(id);
    } else if (id >= 0 && static_cast<uint64_t>(id) < dense_.size()) {
      __builtin_prefetch(&dense_[static_cast<size_t>(id)]);
    }
  }
  const std::vector<int64_t>& ids() const { return dense_.empty() ? map_.ids() : ids_; }
  size_t size() const { return ids().size(); }
  bool dense() const { return !dense_.empty(); }

 private:
  std::vector<int64_t> ids_;    // dense form only (the IdMap keeps its own)
  std::vector<int32_t> dense_;  // node -> slot, -1 for none; empty in the IdMap form
  IdMap map_;
};

}  // namespace fanout::sampler

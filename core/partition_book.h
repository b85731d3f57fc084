// The range partition book: partition k owns the contiguous global IDs [start_k, end_k).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace fanout::core {

// Immutable after construction; thread-safe.
class RangePartitionBook {
 public:
  // `bounds` holds K+1 non-decreasing offsets starting at 0: partition k owns
  // [bounds[k], bounds[k+1]). Empty partitions are allowed.
  static absl::StatusOr<RangePartitionBook> FromBounds(std::vector<int64_t> bounds);
  // From DGL-style ranges [[s0,e0],[s1,e1],...] that must tile [0, N) in order.
  static absl::StatusOr<RangePartitionBook> FromRanges(
      const std::vector<std::pair<int64_t, int64_t>>& ranges);

  int num_parts() const { return static_cast<int>(bounds_.size()) - 1; }
  int64_t num_ids() const { return bounds_.back(); }
  int64_t start(int part) const { return bounds_[part]; }
  int64_t end(int part) const { return bounds_[part + 1]; }
  int64_t size(int part) const { return end(part) - start(part); }
  const std::vector<int64_t>& bounds() const { return bounds_; }

  bool Contains(int64_t gid) const { return gid >= 0 && gid < num_ids(); }
  // Owner of `gid`; requires Contains(gid). O(log K).
  int PartOf(int64_t gid) const;
  // Checked variant; the error names the ID and the valid range.
  absl::StatusOr<int> CheckedPartOf(int64_t gid) const;
  // OK if every ID is owned by `part`; otherwise INVALID_ARGUMENT naming the first ID at fault,
  // its index in `ids` and its owner ("node ID 7 (index 2) belongs to partition 1, ...").
  // `what` is "node" or "edge".
  absl::Status CheckOwned(std::span<const int64_t> ids, int part, const char* what) const;
  int64_t ToLocal(int64_t gid) const { return gid - bounds_[PartOf(gid)]; }
  int64_t ToGlobal(int part, int64_t local) const { return bounds_[part] + local; }

 private:
  explicit RangePartitionBook(std::vector<int64_t> b) : bounds_(std::move(b)) {}
  std::vector<int64_t> bounds_;
};

}  // namespace fanout::core

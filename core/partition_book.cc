#include "core/partition_book.h"

#include <algorithm>

#include "base/check.h"
#include "base/strings.h"

namespace fanout::core {

absl::StatusOr<RangePartitionBook> RangePartitionBook::FromBounds(std::vector<int64_t> bounds) {
  if (bounds.size() < 2) {
    return absl::InvalidArgumentError("a partition book needs at least one partition");
  }
  if (bounds[0] != 0) {
    return absl::InvalidArgumentError(base::StrCat("partition 0 starts at ", bounds[0], ", not 0"));
  }
  for (size_t k = 1; k < bounds.size(); ++k) {
    if (bounds[k] < bounds[k - 1]) {
      return absl::InvalidArgumentError(base::StrCat("partition ", k - 1, " range [", bounds[k - 1],
                                                     ", ", bounds[k], ") is decreasing"));
    }
  }
  return RangePartitionBook(std::move(bounds));
}

absl::StatusOr<RangePartitionBook> RangePartitionBook::FromRanges(
    const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  std::vector<int64_t> bounds{0};
  for (size_t k = 0; k < ranges.size(); ++k) {
    if (ranges[k].first != bounds.back()) {
      return absl::InvalidArgumentError(base::StrCat("partition ", k, " starts at ", ranges[k].first,
                                                     " but the previous one ends at ", bounds.back()));
    }
    bounds.push_back(ranges[k].second);
  }
  return FromBounds(std::move(bounds));
}

int RangePartitionBook::PartOf(int64_t gid) const {
  FANOUT_DCHECK(Contains(gid)) << gid;
  // First bound strictly greater than gid, minus one; skips empty partitions correctly.
  auto it = std::upper_bound(bounds_.begin() + 1, bounds_.end(), gid);
  return static_cast<int>(it - bounds_.begin()) - 1;
}

absl::StatusOr<int> RangePartitionBook::CheckedPartOf(int64_t gid) const {
  if (!Contains(gid)) {
    return absl::OutOfRangeError(base::StrCat("ID ", gid, " is outside [0, ", num_ids(), ")"));
  }
  return PartOf(gid);
}

absl::Status RangePartitionBook::CheckOwned(std::span<const int64_t> ids, int part, const char* what) const {
  const int64_t lo = start(part), hi = end(part);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (id >= lo && id < hi) continue;
    if (!Contains(id)) {
      return absl::InvalidArgumentError(base::StrCat(what, " ID ", id, " (index ", i, ") is outside the graph [0, ",
                                               num_ids(), ")"));
    }
    return absl::InvalidArgumentError(base::StrCat(what, " ID ", id, " (index ", i, ") belongs to partition ", PartOf(id),
                                             ", not to partition ", part, " which owns [", lo, ", ", hi, ")"));
  }
  return absl::OkStatus();
}

}  // namespace fanout::core

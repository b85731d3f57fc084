#include "sampler/seed_split.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/check.h"
#include "core/random.h"

namespace fanout::sampler {

std::vector<std::vector<int64_t>> SplitSeeds(std::span<const int64_t> ids, const core::RangePartitionBook& book,
                                             int trainers_per_machine) {
  FANOUT_CHECK(trainers_per_machine >= 1);
  const int machines = book.num_parts();
  const int world = machines * trainers_per_machine;
  const int64_t total = static_cast<int64_t>(ids.size());
  std::vector<int64_t> size(world);
  for (int r = 0; r < world; ++r) size[r] = total / world + (r < total % world ? 1 : 0);

  // IDs are sorted and partitions own contiguous ranges: partition p's IDs are one run.
  std::vector<size_t> begin(machines + 1, ids.size());
  for (int p = machines - 1; p >= 0; --p) {
    begin[p] = std::lower_bound(ids.begin(), ids.end(), book.start(p)) - ids.begin();
  }
  std::vector<std::vector<int64_t>> machine_ids(machines);
  std::vector<int64_t> quota(machines, 0), pool;
  for (int p = 0; p < machines; ++p) {
    for (int t = 0; t < trainers_per_machine; ++t) quota[p] += size[p * trainers_per_machine + t];
    const size_t own = begin[p + 1] - begin[p];
    const size_t keep = std::min<size_t>(own, static_cast<size_t>(quota[p]));
    machine_ids[p].assign(ids.begin() + begin[p], ids.begin() + begin[p] + keep);
    pool.insert(pool.end(), ids.begin() + begin[p] + keep, ids.begin() + begin[p + 1]);
  }
  size_t next = 0;
  for (int p = 0; p < machines; ++p) {
    while (static_cast<int64_t>(machine_ids[p].size()) < quota[p]) machine_ids[p].push_back(pool[next++]);
    std::sort(machine_ids[p].begin(), machine_ids[p].end());
  }
  FANOUT_CHECK(next == pool.size());
  std::vector<std::vector<int64_t>> out(world);
  for (int p = 0; p < machines; ++p) {
    size_t at = 0;
    for (int t = 0; t < trainers_per_machine; ++t) {
      const int r = p * trainers_per_machine + t;
      out[r].assign(machine_ids[p].begin() + at, machine_ids[p].begin() + at + size[r]);
      at += size[r];
    }
  }
  return out;
}

SeedArray::SeedArray(std::vector<int64_t> ids)
    : ids_(std::make_shared<const std::vector<int64_t>>(std::move(ids))), size_(static_cast<int64_t>(ids_->size())) {}

SeedArray SeedArray::Range(int64_t first, int64_t size) {
  FANOUT_CHECK(size >= 0);
  SeedArray a;
  a.first_ = first;
  a.size_ = size;
  return a;
}

SeedArray SeedArray::Of(std::vector<int64_t> ids) {
  for (size_t i = 1; i < ids.size(); ++i) {
    if (ids[i] != ids[0] + static_cast<int64_t>(i)) return SeedArray(std::move(ids));
  }
  return ids.empty() ? SeedArray() : Range(ids[0], static_cast<int64_t>(ids.size()));
}

std::vector<int64_t> SeedArray::ToVector() const {
  if (ids_ != nullptr) return *ids_;
  std::vector<int64_t> out(static_cast<size_t>(size_));
  std::iota(out.begin(), out.end(), first_);
  return out;
}

namespace {

// Fisher-Yates over the front `count` positions of n seeds (`at(i)`: seed i), as if on a copy:
// the copy itself when count is a large part of n, else only the positions a swap moved.
template <typename At>
std::vector<int64_t> Shuffled(int64_t n, At at, int64_t count, bool shuffle, uint64_t seed, int64_t epoch, int rank) {
  FANOUT_CHECK(count >= 0 && count <= n);
  std::vector<int64_t> out;
  if (!shuffle) {
    out.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) out[i] = at(i);
    return out;
  }
  uint64_t state = core::SplitMix64(seed ^ core::SplitMix64(static_cast<uint64_t>(epoch) * 0x10001 +
                                                            static_cast<uint64_t>(rank) + 1));
  auto next = [&](int64_t i) {  // the position swapped into i, in [i, n)
    state = core::SplitMix64(state);
    const uint64_t left = static_cast<uint64_t>(n - i);
    return i + static_cast<int64_t>((static_cast<unsigned __int128>(state) * left) >> 64);
  };
  if (count > n / 8) {
    out.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out[i] = at(i);
    for (int64_t i = 0; i < count; ++i) std::swap(out[i], out[next(i)]);
    out.resize(static_cast<size_t>(count));
    return out;
  }
  // Positions at or after i whose seed a swap changed (position i is never read after step i).
  std::unordered_map<int64_t, int64_t> moved;
  moved.reserve(static_cast<size_t>(count));
  auto value = [&](int64_t p) {
    const auto it = moved.find(p);
    return it != moved.end() ? it->second : at(p);
  };
  out.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t j = next(i);
    const int64_t vi = value(i);
    out[i] = value(j);
    if (j != i) moved[j] = vi;
  }
  return out;
}

}  // namespace

std::vector<int64_t> EpochSeeds(std::span<const int64_t> mine, int64_t count, bool shuffle, uint64_t seed,
                                int64_t epoch, int rank) {
  return Shuffled(static_cast<int64_t>(mine.size()), [&](int64_t i) { return mine[i]; }, count, shuffle, seed, epoch,
                  rank);
}

std::vector<int64_t> EpochSeeds(const SeedArray& mine, int64_t count, bool shuffle, uint64_t seed, int64_t epoch,
                                int rank) {
  if (!mine.is_range()) return EpochSeeds(mine.list(), count, shuffle, seed, epoch, rank);
  const int64_t first = mine.first();
  return Shuffled(mine.size(), [first](int64_t i) { return first + i; }, count, shuffle, seed, epoch, rank);
}

std::vector<int64_t> MaskToIds(const std::string& mask) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] != 0) ids.push_back(static_cast<int64_t>(i));
  }
  return ids;
}

}  // namespace fanout::sampler

#include "sampler/seed_split.h"

#include <algorithm>
#include <string>

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

std::vector<int64_t> EpochSeeds(std::span<const int64_t> mine, int64_t count, bool shuffle, uint64_t seed,
                                int64_t epoch, int rank) {
  FANOUT_CHECK(count <= static_cast<int64_t>(mine.size()));
  std::vector<int64_t> out(mine.begin(), mine.end());
  if (shuffle) {
    uint64_t state = core::SplitMix64(seed ^ core::SplitMix64(static_cast<uint64_t>(epoch) * 0x10001 +
                                                              static_cast<uint64_t>(rank) + 1));
    // Fisher-Yates, front `count` positions only.
    for (int64_t i = 0; i < count; ++i) {
      state = core::SplitMix64(state);
      const uint64_t n = static_cast<uint64_t>(out.size() - i);
      const int64_t j = i + static_cast<int64_t>((static_cast<unsigned __int128>(state) * n) >> 64);
      std::swap(out[i], out[j]);
    }
  }
  out.resize(count);
  return out;
}

std::vector<int64_t> MaskToIds(const std::string& mask) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] != 0) ids.push_back(static_cast<int64_t>(i));
  }
  return ids;
}

}  // namespace fanout::sampler

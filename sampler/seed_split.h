// Which seeds each trainer of a job trains on. Every trainer gets the same number of seeds per
// epoch (so every trainer runs the same number of steps and no collective waits forever),
// preferring seeds its own machine's partition owns.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/partition_book.h"

namespace fanout::sampler {

// Splits `ids` (sorted ascending, distinct; e.g. the training nodes) among num_machines *
// trainers_per_machine trainers; rank r runs on machine r / trainers_per_machine, which hosts
// partition r / trainers_per_machine. Sizes differ by at most one (the first total % W ranks get
// one more). Each machine first takes the IDs its partition owns, up to its trainers' total; the
// surplus of other machines fills the rest, in ID order. Inside a machine the list is cut into
// contiguous slices. Deterministic; the union over ranks is `ids`, without repeats.
std::vector<std::vector<int64_t>> SplitSeeds(std::span<const int64_t> ids, const core::RangePartitionBook& book,
                                             int trainers_per_machine);

// The seeds every trainer uses per epoch: the smallest rank's share, total / world_size.
inline int64_t SeedsPerEpoch(int64_t total, int world_size) { return total / world_size; }

// The seeds of one epoch for one trainer: `mine` shuffled with a generator seeded from (seed,
// epoch, rank) when `shuffle`, cut to `count` (so a rank with one extra seed leaves a different
// one out each epoch).
std::vector<int64_t> EpochSeeds(std::span<const int64_t> mine, int64_t count, bool shuffle, uint64_t seed,
                                int64_t epoch, int rank);

// The IDs whose row of a uint8/bool mask is non-zero, ascending.
std::vector<int64_t> MaskToIds(const std::string& mask);

}  // namespace fanout::sampler

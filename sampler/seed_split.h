// Which seeds each trainer of a job trains on. Every trainer gets the same number of seeds per
// epoch (so every trainer runs the same number of steps and no collective waits forever),
// preferring seeds its own machine's partition owns.
#pragma once

#include <cstdint>
#include <memory>
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

// A trainer's seeds: a list (training nodes, a script's edge IDs), or the range [first, first +
// size) that a rank's positive edges are (RankEdgeSeeds): two numbers instead of 8 bytes per
// stored edge in the trainer and in each of its samplers, threads or processes. Copies share
// the list.
class SeedArray {
 public:
  SeedArray() = default;
  SeedArray(std::vector<int64_t> ids);  // NOLINT(google-explicit-constructor): a list is a SeedArray
  static SeedArray Range(int64_t first, int64_t size);
  // `ids` as a range when they are one (first, first + 1, ...), else as the list.
  static SeedArray Of(std::vector<int64_t> ids);

  int64_t size() const { return size_; }
  bool is_range() const { return ids_ == nullptr; }
  int64_t first() const { return first_; }  // a range's first ID (0 for a list)
  int64_t operator[](int64_t i) const { return ids_ != nullptr ? (*ids_)[i] : first_ + i; }
  // A list's IDs (empty for a range).
  std::span<const int64_t> list() const { return ids_ != nullptr ? std::span<const int64_t>(*ids_) : std::span<const int64_t>(); }
  std::vector<int64_t> ToVector() const;

 private:
  std::shared_ptr<const std::vector<int64_t>> ids_;  // null: the range
  int64_t first_ = 0, size_ = 0;
};

// The seeds of one epoch for one trainer: `mine` shuffled with a generator seeded from (seed,
// epoch, rank) when `shuffle`, cut to `count` (so a rank with one extra seed leaves a different
// one out each epoch). Memory is O(count) when count is a small part of `mine` (a draw of
// --edges-per-epoch positives among a partition's edges), with the same result.
std::vector<int64_t> EpochSeeds(std::span<const int64_t> mine, int64_t count, bool shuffle, uint64_t seed,
                                int64_t epoch, int rank);
std::vector<int64_t> EpochSeeds(const SeedArray& mine, int64_t count, bool shuffle, uint64_t seed, int64_t epoch,
                                int rank);
inline std::vector<int64_t> EpochSeeds(const std::vector<int64_t>& mine, int64_t count, bool shuffle, uint64_t seed,
                                       int64_t epoch, int rank) {
  return EpochSeeds(std::span<const int64_t>(mine), count, shuffle, seed, epoch, rank);
}

// The IDs whose row of a uint8/bool mask is non-zero, ascending.
std::vector<int64_t> MaskToIds(const std::string& mask);

}  // namespace fanout::sampler

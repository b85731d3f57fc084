// The offline partitioner: assigns nodes to K partitions (METIS, random or a user file),
// relabels IDs into contiguous per-partition ranges, and writes <name>.json plus part<k>/ folders.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/process_stats.h"
#include "core/partition_config.h"
#include "partition/dataset.h"
#include "partition/config_record.h"
#include "partition/edge_split.h"
#include "partition/partition_options.h"

namespace fanout::partition {

// Checks `options`; num_nodes < 0 (not read yet) skips the checks that need it.
absl::Status ValidatePartitionOptions(const PartitionOptions& options, int64_t num_nodes);

// RESOURCE_EXHAUSTED, naming where the node count came from, when the partitioner's per-node
// arrays alone would not fit in `usable_bytes` (base::UsableMemoryBytes(); <= 0: unknown, OK):
// IDs that are not 0..N-1 fail here, before the output folder is claimed.
absl::Status CheckNodeCountFits(const Dataset& d, int64_t usable_bytes);
// The same for `num_nodes` (from `source`) split over `ranks` processes (fanout-partition
// --distributed), each with `usable_bytes`.
absl::Status CheckNodeCountFits(int64_t num_nodes, const std::string& source, int64_t usable_bytes, int ranks);

// Partitions `dataset` and writes the result atomically (nothing at out_dir unless complete).
absl::StatusOr<PartitionSummary> PartitionDataset(const Dataset& dataset,
                                                  const PartitionOptions& options);

// The node -> partition assignment alone (exposed for tests and the benchmark).
absl::StatusOr<std::vector<int32_t>> AssignPartitions(const Dataset& dataset,
                                                      const PartitionOptions& options,
                                                      std::string* note);

}  // namespace fanout::partition

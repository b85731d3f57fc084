// fanout-partition --distributed: the partitioner as P cooperating MPI ranks (mpirun -np P), for
// graphs that do not fit one machine. Each rank reads a slice of the input (slice_input.h), the
// assignment comes from PT-Scotch's parallel graph partitioner (or is random, or read from a
// file), and edges, features and labels move to their partition's rank by MPI all-to-all; every
// rank writes the partitions it owns (partition k is rank k % P's). The output is the layout
// fanout-partition writes on one machine, byte for byte the same for the same assignment.
// docs/partitioning.md has the design and the memory model.
#pragma once

#include "partition/partitioner.h"
#include "partition/input_files.h"

namespace fanout::partition {

// Runs this process as one rank: initialises MPI, partitions, finalises. Returns the exit
// status (0, 1 on error, 2 for a usage error); rank 0 prints progress, the summary and the error
// (naming the rank that failed), the other ranks print nothing.
int RunDistributedPartition(const ReadOptions& read, const PartitionOptions& options, int* argc, char*** argv);

}  // namespace fanout::partition

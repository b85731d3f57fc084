// The METIS input built from a dataset, and the METIS call, kept apart so the benchmark can time
// exactly the call fanout-partition makes (bench/metis_baseline.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "partition/dataset.h"
#include "partition/partition_options.h"

namespace fanout::partition {

// A symmetric graph without self loops or duplicate edges, in METIS's CSR arrays (METIS's
// idx_t is 32-bit in Debian's build), with `ncon` vertex weights per node.
struct MetisGraph {
  std::vector<int32_t> xadj;
  std::vector<int32_t> adjncy;
  std::vector<int32_t> vwgt;             // num_nodes * ncon, row-major
  int32_t ncon = 1;
  std::vector<std::string> constraints;  // what each weight column balances

  std::string Describe(const PartitionOptions& o) const;
};

// Builds the METIS input: the input edges symmetrised, and vertex weights for the balance
// constraints in `o` (nodes; training nodes with balance_train and a split; in-edges with
// balance_edges). Fails with a clear message past METIS's 32-bit limits.
absl::StatusOr<MetisGraph> BuildMetisGraph(const Dataset& d, const PartitionOptions& o);

// METIS_PartGraphKway with o.num_parts, o.seed and the objective in `o`.
absl::StatusOr<std::vector<int32_t>> RunMetis(MetisGraph& g, const PartitionOptions& o);

}  // namespace fanout::partition

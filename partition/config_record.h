// What both partitioners (partitioner.h, distributed.h) write into <name>.json and report: the
// partition config's header, schema and "build" record, the stored ID widths, and the run's
// summary.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/process_stats.h"
#include "core/partition_config.h"
#include "partition/dataset.h"
#include "partition/partition_options.h"

namespace fanout::partition {

// Sets cfg's node_id_dtype and edge_id_dtype for a graph of `num_nodes` nodes and `num_edges`
// stored edges by options.id_width; INVALID_ARGUMENT when --id-width 32 cannot hold them.
absl::Status ChooseIdDTypes(const PartitionOptions& options, int64_t num_nodes, int64_t num_edges,
                            core::PartitionConfig* cfg);

struct PartitionSummary {
  std::string config_path;             // OUT/<name>.json
  int64_t num_nodes = 0;
  int64_t num_edges = 0;               // stored edges, after reverse/self-loop/duplicate handling
  int64_t input_edges = 0;
  int64_t self_loops = 0;              // found among the edges (removed or kept per the options)
  int64_t duplicates = 0;              // found (removed or kept)
  int64_t edge_cut = 0;                // stored edges whose source lives in another partition
  std::vector<int64_t> part_nodes, part_edges, part_train, part_halo;
  std::vector<base::PhaseTimer::Phase> phases;
  double total_seconds = 0;
  int64_t peak_rss_bytes = 0;
  std::vector<int64_t> rank_peak_rss_bytes;  // --distributed: every rank's peak, in rank order
  std::string peak_phase;                    // --distributed: the phase the largest peak was reached in
  std::string metis_note;              // e.g. the constraints used
  std::string types_note;              // typed graphs: node types and stored edge types with counts
  // With an edge split: distinct node pairs, and how many train / valid / test.
  int64_t link_pairs = 0, link_train = 0, link_valid = 0, link_test = 0;

  // Human-readable multi-line report.
  std::string ToString() const;
};

// The relation --add-reverse-edges stores for `e` on a typed graph: (DST, rev_REL, SRC), as DGL
// names it.
inline core::CanonicalEdgeType ReverseRelation(const core::CanonicalEdgeType& e) { return {e.dst, "rev_" + e.rel, e.src}; }

// The config's "build" record (what was done and measured) as JSON text: the summary's figures
// and the options that shaped the output; `extra`, a JSON object's text (or ""), adds keys.
std::string BuildRecord(const PartitionSummary& summary, const PartitionOptions& options, const std::string& tool,
                        const std::string& input_layout, bool typed, const std::string& extra = "");

// The partition config's header as both partitioners fill it: graph name, node count, parts,
// halo hops, method (from `options`) and node bounds.
void SetConfigHeader(const std::string& name, int64_t num_nodes, const std::vector<int64_t>& node_bounds,
                     const PartitionOptions& options, core::PartitionConfig* cfg);

// The partition config's schema, as both partitioners fill it.
struct ConfigSchema {
  const GraphTypes* types = nullptr;  // node types and the input relations (none: the one-type graph)
  bool reverse_types = false;         // a typed graph storing rev_REL for each relation
  // Per type (then per stored relation, reverse ones last), one [begin, end) per partition.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> node_type_ranges, edge_type_ranges;
  std::vector<core::FieldSchema> node_fields, edge_fields;  // as read
  std::vector<int> mask_types;  // node types that get the split's masks (-1: every node); none without a split
};
// Sets cfg's node and edge types with their ranges and its fields: node fields, then
// train_mask, val_mask and test_mask (uint8) for each mask type, and edge fields.
void SetConfigSchema(ConfigSchema schema, core::PartitionConfig* cfg);

// Writes `cfg` with its "build" record (BuildRecord) as the partition config at `path`.
absl::Status WriteConfigFile(const core::PartitionConfig& cfg, const std::string& build, const std::string& path);

}  // namespace fanout::partition

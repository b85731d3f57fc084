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
#include "partition/edge_split.h"

namespace fanout::partition {

enum class PartMethod { kMetis, kRandom, kFile };
// The width of the stored node and edge IDs (indices, out_indices, out_eids): kAuto stores each
// as int32 where the graph's IDs of that kind fit (half the bytes per stored edge), k64 always
// int64, k32 int32 or an error.
enum class IdWidth { kAuto, k32, k64 };

struct PartitionOptions {
  std::string out_dir;                 // required; gets <graph_name>.json and part<k>/
  std::string graph_name;              // default: the dataset's folder name
  int num_parts = 0;                   // required, in [1, num_nodes]
  PartMethod method = PartMethod::kMetis;
  std::string assignment_file;         // kFile: one partition ID per node (text or .npy)
  bool add_reverse_edges = false;      // store (v, u) for every input (u, v); self loops once
  bool remove_self_loops = false;      // default keeps them (and reports how many)
  bool remove_duplicate_edges = false; // default keeps them (and reports how many)
  bool balance_train = true;           // METIS constraint: training nodes per part (needs a split)
  bool balance_edges = false;          // METIS constraint: in-edges per part
  bool objective_volume = false;       // METIS objective: communication volume instead of cut
  int halo_hops = 1;                   // 0 or 1
  uint64_t seed = 0;                   // METIS and random partitioning seed
  int num_threads = 0;                 // threads for sorting and writing; 0 = all cores
  bool overwrite = false;              // replace an out_dir this tool wrote (base/staging_dir.h)
  IdWidth id_width = IdWidth::kAuto;   // --id-width
  // The most IDs of one kind that are stored as int32 (all of int32's; tests lower it to try
  // the int64 fallback on a small graph).
  int64_t int32_id_limit = std::numeric_limits<int32_t>::max();
  bool quiet = false;                  // no progress lines on stderr
  // --distributed: the graph is contracted by label propagation until at most this many edges
  // are left for PT-Scotch (whose memory grows with its input), then refined on the way back.
  int64_t scotch_max_edges = int64_t{2} << 20;
  // Link prediction: node pairs held out of the stored graph, with negatives (edge_split.h);
  // its seed is `seed`.
  EdgeSplitOptions edge_split;
  // --feature-dtype: node field 'feat' stored as this (core/feature_codec.h); unset keeps its dtype.
  std::optional<core::FeatureStorage> feature_storage;
  // --hard-negative-field: an integer edge field [E, H] of input node IDs (-1: none), each input
  // edge's hard negatives (alternatives to its destination for link prediction). Stored as int64
  // new node IDs; a reverse edge's row is all -1 (its destination is the input edge's source).
  std::string hard_negative_field;
};

// Sets cfg's node_id_dtype and edge_id_dtype for a graph of `num_nodes` nodes and `num_edges`
// stored edges by options.id_width; INVALID_ARGUMENT when --id-width 32 cannot hold them.
absl::Status ChooseIdDTypes(const PartitionOptions& options, int64_t num_nodes, int64_t num_edges,
                            core::PartitionConfig* cfg);

// Checks `options`; num_nodes < 0 (not read yet) skips the checks that need it.
absl::Status ValidatePartitionOptions(const PartitionOptions& options, int64_t num_nodes);

// RESOURCE_EXHAUSTED, naming where the node count came from, when the partitioner's per-node
// arrays alone would not fit in `usable_bytes` (base::UsableMemoryBytes(); <= 0: unknown, OK):
// IDs that are not 0..N-1 fail here, before the output folder is claimed.
absl::Status CheckNodeCountFits(const Dataset& d, int64_t usable_bytes);
// The same for `num_nodes` (from `source`) split over `ranks` processes (fanout-partition
// --distributed), each with `usable_bytes`.
absl::Status CheckNodeCountFits(int64_t num_nodes, const std::string& source, int64_t usable_bytes, int ranks);

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

// Partitions `dataset` and writes the result atomically (nothing at out_dir unless complete).
absl::StatusOr<PartitionSummary> PartitionDataset(const Dataset& dataset,
                                                  const PartitionOptions& options);

// The node -> partition assignment alone (exposed for tests and the benchmark).
absl::StatusOr<std::vector<int32_t>> AssignPartitions(const Dataset& dataset,
                                                      const PartitionOptions& options,
                                                      std::string* note);

}  // namespace fanout::partition

// What fanout-partition is asked to do: the options of the serial and distributed partitioners
// and of the METIS input they build (kept apart from partitioner.h so that metis_graph.h, which
// partitioner.cc uses, need not include it).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "core/feature_codec.h"
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

}  // namespace fanout::partition

// The whole graph's ID maps between fanout's IDs and the input's own, written beside the partition
// config (OUT/id_maps/): what a script that speaks the user's IDs (fanout.pyg, as PyG's
// Partitioner keeps them) maps through at its boundary, and what fanout.distributed's
// partition_graph(return_mapping=True) returns, as DGL does. Each partition's
// graph/orig_{nids,eids}.npy map only its own IDs; a machine holds one partition, yet a batch
// names nodes and edges of every partition.
//
// Files (int64 .npy, read mapped):
//   id_maps/orig_nids.npy  [N]   fanout node ID -> input node ID (type-wise on a typed graph)
//   id_maps/new_nids.npy   [N]   node_type_offsets[t] + input ID of a type-t node -> fanout ID
//   id_maps/orig_eids.npy  [E]   fanout edge ID -> input edge (as graph/orig_eids.npy: on a
//                                one-type graph e >= input edges is the reverse of e - input
//                                edges; typed, the row among its relation's input edges)
//   id_maps/new_eids.npy   [E']  edge_type_offsets[r] + input edge of stored type r -> fanout ID,
//                                -1 where no stored edge has it (held out for link prediction,
//                                a removed duplicate or self loop, a self loop's reverse)
//   id_maps/id_maps.json         the offsets and sizes; written last, so its presence means the
//                                arrays are whole.
// 16 bytes a node and 16 a stored edge on disk; the arrays are mapped, so a process holds only
// the pages it touches.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "core/partition_config.h"

namespace fanout::partition {

inline constexpr const char* kIdMapsDir = "id_maps";
inline constexpr const char* kIdMapsMeta = "id_maps.json";

// Writes `cfg.base_dir`/id_maps/ from every partition's graph/orig_nids.npy and orig_eids.npy
// (all must be readable from here). The outputs are file-backed mappings, so no whole-graph array
// sits in this process's anonymous memory (the distributed partitioner's rank 0 runs it too).
// Errors name the partition file at fault; on error nothing is left that looks valid (the meta
// file is written last).
absl::Status WriteIdMaps(const core::PartitionConfig& cfg);

// fanout-partition --write-id-maps CONFIG: the maps of a partition made before they existed,
// written into a temporary folder beside the config and renamed to id_maps/. Refuses when
// id_maps/ exists (nothing is replaced that the user did not ask to delete).
absl::Status WriteIdMapsFor(const std::string& config_path);

}  // namespace fanout::partition

// The partition config `<name>.json` that fanout-partition writes and every other process reads.
// Its keys follow DGL's partition config (graph_name, num_nodes, num_edges, num_parts, halo_hops,
// part_method, node_map, edge_map, part-K) so existing tooling recognises it, plus fanout's own
// format version, field schemas and the list of every file of every partition.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/feature_codec.h"
#include "core/partition_book.h"
#include "core/type_map.h"

namespace fanout::core {

// Version 2 adds the ID widths (node_id_dtype, edge_id_dtype); version 1 partitions, whose ID
// arrays are all int64, still load.
inline constexpr int kPartitionFormatVersion = 2;
inline constexpr int kOldestPartitionFormatVersion = 1;

// Name, element type and per-row shape of a node or edge field (a field of N rows with shape
// [N, 100] has row_shape {100}; a label vector has row_shape {}).
struct FieldSchema {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> row_shape;
  // Typed graphs: the node type whose nodes the rows are (in each partition, one row per node of
  // that type, in ID order); "" = every node of the partition.
  std::string node_type;
  // Node features stored compressed (core/feature_codec.h): `dtype` and `row_shape` are then the
  // stored ones (int16 [dim] for bfloat16, uint8 [dim + 8] for int8) and readers decode.
  FeatureCodec codec = FeatureCodec::kNone;
  // Typed graphs' edge fields: the relation ("SRC:REL:DST") whose edges the rows are (in each
  // partition, one row per stored edge of that relation, in edge ID order); "" = every edge.
  std::string edge_type;

  // What names the field in files and maps: "TYPE/NAME" for a typed field (TYPE a node type, or
  // for an edge field SRC:REL:DST), else NAME.
  std::string key() const {
    const std::string& type = node_type.empty() ? edge_type : node_type;
    return type.empty() ? name : type + "/" + name;
  }

  // Elements in one row (the product of row_shape; 1 for a scalar per row) and its size in bytes.
  int64_t row_elems() const {
    int64_t n = 1;
    for (int64_t d : row_shape) n *= d;
    return n;
  }
  size_t row_bytes() const { return static_cast<size_t>(row_elems()) * DTypeSize(dtype); }
  // Values per row once decoded (row_elems() unless the field has a codec).
  int64_t decoded_elems() const { return CodecDecodedElems(codec, row_elems()); }
};

// File names inside `part<k>/`, relative to that folder.
struct PartFiles {
  // The ID arrays marked * hold node IDs in the config's node_id_dtype, and those marked + edge
  // IDs or edge offsets in its edge_id_dtype: int32 where the graph's IDs fit, int64 otherwise.
  static constexpr const char* kIndptr = "graph/indptr.npy";        // + [R n_k + 1], in-edge CSC
  static constexpr const char* kIndices = "graph/indices.npy";      // * [m_k], global src IDs
  static constexpr const char* kOrigNids = "graph/orig_nids.npy";   // int64 [n_k]
  static constexpr const char* kOrigEids = "graph/orig_eids.npy";   // int64 [m_k]
  static constexpr const char* kHaloNids = "graph/halo_nids.npy";   // int64 [h_k], sorted
  static constexpr const char* kOutIndptr = "graph/out_indptr.npy";  // + [n_k + 1]
  static constexpr const char* kOutIndices = "graph/out_indices.npy";  // *, global dst IDs
  static constexpr const char* kOutEids = "graph/out_eids.npy";     // +, global edge IDs
  // `field` is a FieldSchema::key(): a typed field lives in node_data/TYPE/NAME.npy.
  static std::string NodeData(const std::string& field) { return "node_data/" + field + ".npy"; }
  static std::string EdgeData(const std::string& field) { return "edge_data/" + field + ".npy"; }
};

struct PartitionConfig {
  int format_version = kPartitionFormatVersion;
  std::string graph_name;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  int num_parts = 0;
  int halo_hops = 1;
  std::string part_method;
  std::vector<int64_t> node_bounds;  // K+1 offsets of the node ranges
  std::vector<int64_t> edge_bounds;  // K+1 offsets of the edge ranges
  std::vector<FieldSchema> node_fields;
  std::vector<FieldSchema> edge_fields;
  // The width of the stored node IDs (indices, out_indices) and of the edge IDs and offsets
  // (out_eids, indptr, out_indptr): int32 or int64. Version 1 configs have neither key: int64.
  DType node_id_dtype = DType::kInt64;
  DType edge_id_dtype = DType::kInt64;
  int64_t num_classes = 0;  // 0 when the dataset has no labels
  // Node and edge types (core/type_map.h): their names in schema order and each type's
  // [begin, end) IDs per partition (DistDGL's ntypes/etypes and node_map/edge_map). Empty: the
  // one-type graph, node type "_N" and edge type "_N:_E:_N" over every ID (what fanout-partition
  // writes today; Load fills them in either case).
  std::vector<std::string> node_types;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> node_type_ranges;  // [type][part]
  std::vector<CanonicalEdgeType> edge_types;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> edge_type_ranges;  // [type][part]
  // Typed graphs partitioned with --edge-split: the relations whose pairs link/ holds
  // ("SRC:REL:DST", each one of edge_types, in --link-etype's order); empty otherwise (a one-type
  // graph's link/ is its edges'). Written as "link_etypes" (and as "link_etype" when there is
  // one, which partitions made before several relations could be split carry alone).
  std::vector<std::string> link_etypes;
  // Folder holding the config file; partition paths are relative to it. Set by Load.
  std::string base_dir;

  // Absolute (or base-relative) path of a file of partition `part`.
  std::string PartPath(int part, const std::string& relative) const;
  std::string PartDirName(int part) const { return "part" + std::to_string(part); }
  absl::StatusOr<RangePartitionBook> NodeBook() const;
  absl::StatusOr<RangePartitionBook> EdgeBook() const;
  // The node (edge) types as a TypeMap over node_bounds (edge_bounds): one "_N" ("_N:_E:_N")
  // type when none are listed.
  absl::StatusOr<TypeMap> NodeTypes() const;
  absl::StatusOr<TypeMap> EdgeTypes() const;
  // More than one node type or relation.
  bool typed() const { return node_types.size() > 1 || edge_types.size() > 1; }
  // The schema of a node (edge) field, by key (a typed field: "TYPE/NAME"); NOT_FOUND names the
  // field and lists the valid ones.
  absl::StatusOr<FieldSchema> NodeField(const std::string& name) const;
  absl::StatusOr<FieldSchema> EdgeField(const std::string& name) const;
};

// NOT_FOUND: "no node field 'x' (this graph has: feat, label)"; `kind` is "node" or "edge".
absl::Status UnknownFieldError(const std::string& kind, const std::string& name, std::vector<std::string> names);

// Parses and validates `path`; errors name the file and the key at fault.
absl::StatusOr<PartitionConfig> LoadPartitionConfig(const std::string& path);

// Serialises `config` with `extra_json` (a JSON object text, may be empty) merged in under
// the "build" key. Writes exactly the text; the caller handles atomic placement.
absl::StatusOr<std::string> PartitionConfigToJson(const PartitionConfig& config,
                                                  const std::string& extra_json);

}  // namespace fanout::core

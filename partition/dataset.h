// A node-classification dataset in memory, as the readers produce it and the partitioner
// consumes it. Large arrays are memory-mapped when the input is .npy, owned when parsed from text.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/feature_codec.h"
#include "core/npy.h"
#include "core/type_map.h"

namespace fanout::partition {

// A named per-node or per-edge field; row i belongs to node (edge) i in input order. A typed
// node field (node_type set) has a row per node of its type: row i is that type's node i.
struct Field {
  std::string name;
  core::NpyArray data;
  std::string node_type;
  core::FeatureCodec codec = core::FeatureCodec::kNone;  // `data` is stored compressed (CompressNodeFeatures)
  // Typed graphs' edge fields: the relation ("SRC:REL:DST") whose input edges the rows are, in
  // its input order ("" = every input edge).
  std::string edge_type;
};

// A graph's node and edge types, as every reader builds them (empty for the one-type graph).
// Input node IDs are type-major: type t's node i is input node node_type_offsets[t] + i. Input
// edge rows are relation-major likewise (edge_type_offsets, R + 1 entries).
struct GraphTypes {
  std::vector<std::string> node_types;
  std::vector<int64_t> node_type_offsets;
  std::vector<core::CanonicalEdgeType> edge_types;
  std::vector<int64_t> edge_type_offsets;

  bool typed() const { return !node_types.empty(); }
  // Type of input node `v` / input edge row `row` (0 on the one-type graph).
  int NodeTypeOf(int64_t v) const;
  int EdgeTypeOf(int64_t row) const;
  // Index of node type `name`, or -1.
  int NodeTypeIndex(const std::string& name) const;
  // Nodes of type t.
  int64_t TypeCount(int t) const { return node_type_offsets[t + 1] - node_type_offsets[t]; }
};

// Building blocks of the typed readers, each checked and named by `source` in errors: a node type
// appended with its count; relation `triplet` (src_type, relation, dst_type) of known node types,
// a valid name, not listed before; the sub-folders of `dir` (which may be absent), each of which
// must be a node type (`types_source` says where the types came from).
absl::Status AddNodeType(GraphTypes* g, const std::string& name, int64_t count, const std::string& source);
absl::StatusOr<core::CanonicalEdgeType> CheckRelation(const GraphTypes& g, const std::vector<std::string>& triplet,
                                                      const std::string& source);
absl::StatusOr<std::vector<std::pair<int, std::string>>> TypeFolders(const GraphTypes& g, const std::string& types_source,
                                                                     const std::string& dir);

struct Dataset : GraphTypes {
  std::string name;        // default graph name (the input folder's name)
  std::string layout;      // "ogb", "ogb-hetero", "plain", "npy-hetero" or "dgl-chunked", for the summary
  std::string input_dir;   // folder read from ("" if built in memory); never written over
  std::vector<std::string> inputs;  // every other file read (never written over either)
  int64_t num_nodes = 0;
  std::string num_nodes_source;  // where num_nodes came from (a file, a flag), for messages
  // Input edges as an int64 [E, 2] array, row e = (src, dst).
  core::NpyArray edges;
  std::string edges_source;  // file the edges came from, for messages
  std::vector<Field> node_fields;  // "feat" and "label" when present, then extras
  std::vector<Field> edge_fields;  // "feat" when present, then extras
  // Training split as node indices; empty vectors when the dataset has no split.
  bool has_split = false;
  std::vector<int64_t> train_idx, valid_idx, test_idx;
  int64_t num_classes = 0;  // max label + 1, 0 without labels

  int64_t num_edges() const { return edges.rows(); }
  // Rows a node field must have: its type's node count, or every node.
  int64_t FieldRows(const Field& f) const;
  // Rows an edge field must have: its relation's input edges, or every input edge; -1 for a
  // relation the graph does not have.
  int64_t EdgeFieldRows(const Field& f) const;
  // Index of the relation "SRC:REL:DST" among edge_types, or -1.
  int EdgeTypeIndex(const std::string& canonical) const;
  const Field* FindNodeField(const std::string& name) const;
};

// The stored edge set before relabelling: the input edges, then (with reverse edges) the
// reverse of every input edge. Virtual edge v < E is input row v; v >= E is input row v - E
// reversed. The original edge ID saved for each stored edge is v itself.
class EdgeView {
 public:
  EdgeView(const Dataset& d, bool reverse)
      : e_(d.edges.data_as<int64_t>()), num_input_(d.num_edges()), reverse_(reverse) {}
  int64_t size() const { return reverse_ ? 2 * num_input_ : num_input_; }
  int64_t src(int64_t v) const { return v < num_input_ ? e_[2 * v] : e_[2 * (v - num_input_) + 1]; }
  int64_t dst(int64_t v) const { return v < num_input_ ? e_[2 * v + 1] : e_[2 * (v - num_input_)]; }
  int64_t input_row(int64_t v) const { return v < num_input_ ? v : v - num_input_; }
  bool is_reverse(int64_t v) const { return v >= num_input_; }

 private:
  const int64_t* e_;
  int64_t num_input_;
  bool reverse_;
};

// Checks the cross-file invariants every reader must guarantee: edges in [0, N), node fields
// with N rows (a typed field: its type's count), edge fields with E rows; on a typed graph, the
// type offsets tile [0, N) and [0, E), and every edge's ends are of its relation's types. (Split indices are checked where they are read.) Errors
// name the file and row, and where N came from.
absl::Status ValidateDataset(const Dataset& d);
// The edge fields' part of it: rows per input edge, or on a typed graph per edge of the relation
// each field names (every edge field of a typed graph names one). The partitioner checks this
// before anything is written, for datasets built in memory too.
absl::Status ValidateEdgeFields(const Dataset& d);

// PyG's NormalizeFeatures, applied to node field `field` in place: the field's minimum is
// subtracted from every element, then each row is divided by its sum (a sum below 1 counts as 1,
// so all-zero rows stay zero). The result is float32 [N, ...] (owned). INVALID_ARGUMENT, naming
// the file, for a missing field or one that is not numeric (bool, float16).
absl::Status NormalizeNodeFeatures(Dataset* d, const std::string& field = "feat");

// --feature-dtype: stores node field `field` (every type's, on a typed graph) as `to`
// (core/feature_codec.h), in memory, for the partitioner to write. The field must be numeric with
// rows of one dimension; int8 refuses a row holding a NaN or infinity, naming the file and row.
absl::Status CompressNodeFeatures(Dataset* d, core::FeatureStorage to, const std::string& field = "feat");

}  // namespace fanout::partition

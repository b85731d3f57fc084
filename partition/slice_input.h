// A dataset opened for reading in slices, as each rank of the distributed partitioner reads it:
// only headers are read here; arrays are mapped and their rows touched only where a rank reads
// its slice (and those pages are dropped after), so no rank holds the whole input.
//
// Layouts: the plain .npy layout (edges.npy as [E, 2] or PyG's [2, E], node_feat.npy,
// node_label.npy, node_data/*.npy, edge_feat.npy, edge_data/*.npy, {train,valid,test}_idx.npy),
// and DGL's chunked graph format with one node and one edge type (metadata.json naming .npy
// or text chunks; see docs/partitioning.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/npy.h"
#include "core/type_map.h"
#include "partition/readers.h"

namespace fanout::partition {

// One logical array stored as one or more .npy chunks, concatenated along the first axis.
class ChunkedArray {
 public:
  static absl::StatusOr<ChunkedArray> Open(const std::vector<std::string>& paths);
  int64_t rows() const { return rows_; }
  core::DType dtype() const { return dtype_; }
  // The shape after the first axis.
  const std::vector<int64_t>& row_shape() const { return row_shape_; }
  size_t row_bytes() const { return row_bytes_; }
  // For messages: the file holding row `row`, and the row inside it.
  std::string Where(int64_t row) const;
  // Copies rows [begin, end) to `out` (row_bytes() each), then lets their mapped pages go.
  void CopyRows(int64_t begin, int64_t end, char* out) const;
  // Row `row` in place (for scattered reads; DropAll() lets their pages go after).
  const char* Row(int64_t row) const;
  void DropAll() const;
  // Rows [begin, end) of a 1-D integer array (or of one column of a 2-D one) as int64.
  absl::StatusOr<std::vector<int64_t>> ReadInts(int64_t begin, int64_t end, int column = 0) const;
  const std::string& first_path() const { return chunks_.front().path(); }
  // The first row of each chunk, then rows().
  const std::vector<int64_t>& starts() const { return starts_; }
  std::vector<std::string> paths() const;

 private:
  std::vector<core::NpyArray> chunks_;
  std::vector<int64_t> starts_;  // first row of each chunk, then rows_
  int64_t rows_ = 0;
  core::DType dtype_ = core::DType::kUInt8;
  std::vector<int64_t> row_shape_;
  size_t row_bytes_ = 0;
};

struct SliceField {
  std::string name;
  ChunkedArray data;
  std::string node_type;  // typed graphs: the node type whose nodes it has a row for ("" = every node)
};

// A split file: node indices, type-wise on a typed graph (type >= 0).
struct SplitFile {
  std::string path;
  int type = -1;
};

struct SliceInput {
  std::string name;             // the input folder's name (the default graph name)
  std::string layout;           // "plain" or "dgl-chunked"
  int64_t num_nodes = -1;       // -1: not known from the files (the largest edge endpoint + 1)
  std::string num_nodes_source;
  int64_t num_edges = 0;
  std::string edges_source;
  // Edges: [E, 2] rows, or [2, E] (edges_columns: sources then destinations), or, for DGL's
  // chunked format, chunks of [e, 2].
  ChunkedArray edges;
  bool edges_columns = false;
  // DGL's chunked format with text edge chunks ("src dst" lines): the files, and the first edge
  // row of each (then num_edges), from metadata.json's num_edges_per_chunk. `edges` is unused.
  std::vector<std::string> edge_text_files;
  std::vector<int64_t> edge_text_starts;
  std::vector<SliceField> node_fields;  // "feat", "label" when present, then extras
  std::vector<SliceField> edge_fields;
  // Split files (1-D integer node IDs); a missing one is an empty set.
  bool has_split = false;
  std::vector<std::vector<SplitFile>> split_files{3};  // train, valid, test
  // Typed graphs (the typed .npy layout; empty otherwise), as partition::Dataset has them: node
  // IDs type-major, edge rows relation-major. `edges` then holds one chunk per relation, in
  // type-wise IDs that ReadEdgeSlice turns into input IDs.
  std::vector<std::string> node_types;
  std::vector<int64_t> node_type_offsets;  // T + 1
  std::vector<core::CanonicalEdgeType> edge_types;
  std::vector<int64_t> edge_type_offsets;  // R + 1
  std::vector<std::pair<int, int>> edge_type_ends;  // per relation: its (source, destination) node type
  bool typed() const { return !node_types.empty(); }
  // Index of node type `name`, or -1.
  int NodeTypeIndex(const std::string& name) const;
  int NodeTypeOf(int64_t v) const;
  int EdgeTypeOf(int64_t row) const;
  std::vector<std::string> inputs;  // every file read, for the output-safety checks
};

// Opens the input (headers only). Errors name the file; other layouts get an error saying what
// --distributed reads and how to convert.
absl::StatusOr<SliceInput> OpenSliceInput(const ReadOptions& read);

// Input edges [begin, end) as (src, dst) pairs, int64.
absl::StatusOr<std::vector<int64_t>> ReadEdgeSlice(const SliceInput& in, int64_t begin, int64_t end);

}  // namespace fanout::partition

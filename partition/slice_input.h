// The one reader of the .npy-based input layouts, for both partitioners: each rank of the
// distributed one reads a slice of the input, the serial one (ReadDataset) one slice covering
// everything. Only headers are read on opening; arrays are mapped and their rows touched only
// where a slice is read (and those pages are dropped after), so no rank holds the whole input.
//
// Layouts: the plain layout (edges.npy as [E, 2] or PyG's [2, E], or edges.{csv,tsv,txt}[.gz]
// text, which only the serial tool reads; node_feat.npy, node_label.npy, node_data/*.npy,
// edge_feat.npy, edge_data/*.npy, {train,valid,test}_idx.npy), the typed .npy layout
// (num_nodes.json, edges/SRC___REL___DST.npy, node_data/TYPE/*.npy, split/TYPE/*_idx.npy), and
// DGL's chunked graph format with one node and one edge type (metadata.json naming .npy or text
// chunks). OGB's csv.gz layouts are read by readers.cc alone. See README "Dataset layouts".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/npy.h"
#include "core/type_map.h"
#include "partition/dataset.h"
#include "partition/input_files.h"

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
  std::string edge_type;  // typed graphs' edge fields: the relation (SRC:REL:DST) whose edges it has a row for
};

// A split file: node indices, type-wise on a typed graph (type >= 0).
struct SplitFile {
  std::string path;
  int type = -1;
};

// One file of input edges: an integer .npy of [e, 2] rows (DGL's layout) or [2, e] columns (PyG's
// edge_index), or text with one "src,dst" pair per line (.csv/.tsv/.txt, optionally .gz).
struct EdgeFile {
  enum class Form { kRows, kColumns, kText };
  std::string path;
  Form form = Form::kRows;
  int64_t rows = -1;   // -1: a text file whose edge count is known only once it is read
  core::NpyArray npy;  // the mapped array (.npy forms)
};

// Typed graphs (the typed .npy layout) have GraphTypes' members set, as partition::Dataset has
// them: node IDs type-major, edge rows relation-major (one edge file per relation).
struct SliceInput : GraphTypes {
  std::string name;             // the input folder's name (the default graph name)
  std::string layout;           // "plain", "npy-hetero" or "dgl-chunked"
  int64_t num_nodes = -1;       // -1: not known from the files (the largest edge endpoint + 1)
  std::string num_nodes_source;
  int64_t num_edges = 0;        // -1 while a text edge file's count is unknown (sliceable() is false)
  std::string edges_source;
  // The input edges, file after file: one file in the plain layout, one per relation in the typed
  // one (in type-wise IDs, which ReadEdgeSlice turns into input IDs), one per chunk in DGL's.
  std::vector<EdgeFile> edge_files;
  std::vector<int64_t> edge_starts;  // the first edge row of each file, then num_edges
  // Whether ranks can read slices of the edges: false for a text edge file of unknown length,
  // which only the serial tool reads (whole).
  bool sliceable() const { return num_edges >= 0; }
  // For messages: the file holding input edge row `row`, and the row inside it.
  std::string EdgeWhere(int64_t row) const;
  std::vector<SliceField> node_fields;  // "feat", "label" when present, then extras
  std::vector<SliceField> edge_fields;
  // Split files (1-D integer node IDs); a missing one is an empty set.
  bool has_split = false;
  std::vector<std::vector<SplitFile>> split_files{3};  // train, valid, test
  std::vector<std::string> inputs;  // every file read, for the output-safety checks
};

// Opens the input (headers only). Errors name the file; NOT_FOUND when the folder holds none of
// these layouts.
absl::StatusOr<SliceInput> OpenSliceInput(const ReadOptions& read);

// Input edges [begin, end) as (src, dst) pairs, int64, checked against their node types' counts
// on a typed graph. Needs in.sliceable().
absl::StatusOr<std::vector<int64_t>> ReadEdgeSlice(const SliceInput& in, int64_t begin, int64_t end);

}  // namespace fanout::partition

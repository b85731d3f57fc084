// Dataset readers (README.md, "Dataset layouts"). ReadDataset reads OGB's raw node-property
// layout (raw/edge.csv.gz, raw/node-feat.csv.gz, ..., split/<name>/{train,valid,test}.csv.gz) and
// OGB's heterogeneous one itself; the .npy layouts (plain: edges.npy or edges.{csv,tsv,txt}[.gz],
// node_feat.npy, node_label.npy, {train,valid,test}_idx.npy, edge_feat.npy, node_data/, edge_data/;
// typed: num_nodes.json, edges/SRC___REL___DST.npy, ...) and DGL's chunked format it reads through
// partition/slice_input.h, the reader --distributed uses, as one slice covering everything.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "partition/dataset.h"

namespace fanout::partition {

struct ReadOptions {
  std::string input_dir;  // required
  std::string split;      // OGB split folder; empty: the only folder under split/ (if any)
  int64_t num_nodes = -1; // plain layout: node count; -1 infers it (feature rows, else max ID+1)
  // edges.npy: "rows" = [E, 2] (DGL, a row per edge), "columns" = [2, E] (PyG's edge_index, a
  // row of sources then a row of destinations), "auto" = columns when the shape is [2, E] with
  // E != 2, else rows.
  std::string edge_layout = "auto";
};

// Detects the layout and reads it. Errors name the file and line (text) or row (.npy) at fault.
absl::StatusOr<Dataset> ReadDataset(const ReadOptions& options);

// The plain layout's text edge files, in the order they are looked for.
inline constexpr const char* kPlainTextEdgeFiles[] = {"edges.csv",    "edges.tsv",    "edges.txt",
                                                      "edges.csv.gz", "edges.tsv.gz", "edges.txt.gz"};

// Whether an edge array of `shape` at `path` is [2, E] columns (PyG's edge_index) rather than
// [E, 2] rows, as `layout` says ("rows", "columns" or "auto"; see ReadOptions). Errors name the
// file, the shape or the flag.
absl::StatusOr<bool> EdgeColumns(const std::string& path, const std::vector<int64_t>& shape, const std::string& layout);

// Node pairs from a file: an integer .npy of [n, 2] rows (or PyG's [2, n]), or text with one
// "src,dst" per line (.csv/.tsv/.txt, optionally .gz). Every ID must be in [0, num_nodes); errors
// name the file and the row or line. Returns int64 [n, 2].
absl::StatusOr<core::NpyArray> ReadNodePairs(const std::string& path, int64_t num_nodes);
// A 2-D integer .npy of node IDs in [0, num_nodes), as int64.
absl::StatusOr<core::NpyArray> ReadNodeMatrix(const std::string& path, int64_t num_nodes);

// Reads a node -> partition assignment (one integer per line, or an integer .npy of N
// entries), checking the length and that every value is in [0, num_parts).
absl::StatusOr<std::vector<int32_t>> ReadAssignment(const std::string& path, int64_t num_nodes,
                                                    int num_parts);

}  // namespace fanout::partition

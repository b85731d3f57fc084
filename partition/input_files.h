// The small readers every input layout shares (partition/slice_input.h for the .npy layouts,
// readers.cc for OGB's): text records and their errors, integer columns, edge lists as text,
// integer .npy arrays as int64, node pairs and node matrices for link prediction, and a
// node -> partition assignment. Errors name the file and the line (text) or row (.npy) at fault.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/text_reader.h"
#include "core/npy.h"

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

// The plain layout's text edge files, in the order they are looked for.
inline constexpr const char* kPlainTextEdgeFiles[] = {"edges.csv",    "edges.tsv",    "edges.txt",
                                                      "edges.csv.gz", "edges.tsv.gz", "edges.txt.gz"};

// The integer dtypes the readers take for IDs, labels and assignments (int64, int32, int16, uint8),
// and element i of such an array at `p`, as int64.
bool IsIntegerDType(core::DType t);
int64_t IntAt(const char* p, core::DType dtype, int64_t i);

// Text records: a line that is blank or starts with '#' is skipped; an error about a line reads
// "<file>:<line>: <what>".
bool IsBlankOrComment(std::string_view line);
absl::Status LineError(const base::LineReader& r, const std::string& what);

// Calls fn(reader, line, fields) for every line of `path` that is not blank or a comment, with
// the line split into CSV/TSV fields; stops at the first error fn returns.
template <typename Fn>
absl::Status ForEachRecord(const std::string& path, Fn fn) {
  ASSIGN_OR_RETURN(auto r, base::LineReader::Open(path));
  std::vector<std::string_view> fields;
  std::string_view line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, r->Next(&line));
    if (!more) return absl::OkStatus();
    if (IsBlankOrComment(line)) continue;
    base::SplitFields(line, &fields);
    RETURN_IF_ERROR(fn(*r, line, fields));
  }
}

// How many values to reserve for `path` when a count file (untrusted) says it holds `rows` rows
// of `per_row` values: no more than the file could hold (a value takes at least two bytes of
// text, "0\n", and deflate expands at most ~1032x), so a corrupt or hostile count cannot make
// the reader allocate terabytes, or overflow computing how much.
size_t ReserveFor(const std::string& path, int64_t rows, int64_t per_row);

// One integer per line (the first field). `limit` > 0 requires values in [0, limit).
absl::StatusOr<std::vector<int64_t>> ReadIntColumn(const std::string& path, int64_t limit,
                                                   const std::string& limit_name);

// Bounds on the two ends of edges read from text: IDs in [0, src) and [0, dst), each named in
// errors; a bound <= 0 checks nothing.
struct EndLimits {
  int64_t src = 0, dst = 0;
  std::string src_name = "num_nodes", dst_name = "num_nodes";
};

// "src,dst" per line. `num_nodes` > 0 checks the IDs against it. `max_id_line`, when given,
// gets the line of the largest ID (for messages about a node count inferred from it).
// `expected` >= 0 is the edge count a count file gave.
absl::StatusOr<core::NpyArray> ReadEdgesText(const std::string& path, const EndLimits& limits, int64_t expected,
                                             int64_t* max_id_line = nullptr);
absl::StatusOr<core::NpyArray> ReadEdgesText(const std::string& path, int64_t num_nodes, int64_t expected,
                                             int64_t* max_id_line = nullptr);

// Maps an integer .npy and returns it as int64 (converted into an owned copy if narrower).
absl::StatusOr<core::NpyArray> MapAsInt64(const std::string& path);

// Whether an edge array of `shape` at `path` is [2, E] columns (PyG's edge_index) rather than
// [E, 2] rows, as `layout` says ("rows", "columns" or "auto"; see ReadOptions). Errors name the
// file, the shape or the flag.
absl::StatusOr<bool> EdgeColumns(const std::string& path, const std::vector<int64_t>& shape, const std::string& layout);

// Makes `edges` the [E, 2] array every reader produces, from the layout `layout` names. A [2, E]
// array (PyG's edge_index) is copied transposed.
absl::Status OrientEdges(const std::string& path, const std::string& layout, core::NpyArray* edges);

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

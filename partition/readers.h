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
#include "partition/input_files.h"

namespace fanout::partition {

// Detects the layout and reads it. Errors name the file and line (text) or row (.npy) at fault.
absl::StatusOr<Dataset> ReadDataset(const ReadOptions& options);

}  // namespace fanout::partition

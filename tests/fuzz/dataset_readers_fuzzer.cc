// Fuzzes the dataset readers (partition/readers.cc) end to end through their public entry points,
// ReadDataset and ReadAssignment, on a folder built from the input. The input is text parts
// separated by "%%" lines (fuzz_util.h); the first part picks the layout:
//   ogb:    num-node-list, edge.csv, num-edge-list, node-feat, node-label, edge-feat, then the
//           split's train, valid, test (raw/*.csv.gz; gzip is optional, as in the real reader)
//   plain:  edges (.npy when it starts with numpy's magic, else .csv), node_feat.npy,
//           node_label.npy, train_idx.npy, valid_idx.npy, test_idx.npy, edge_feat.npy,
//           node_data/extra.npy, edge_data/extra.npy
//   assign: num_nodes, num_parts, the assignment (.npy when it starts with the magic, else text)
//   hetero: OGB's heterogeneous layout: num-node-dict, triplet-type-list, then relation
//           a___r___b's edge.csv, num-edge-list, edge_reltype, node-feat/a, node-label/a and
//           split/s/a/{train,valid}
//   typed-npy: num_nodes.json, edges/a___r___b.npy, node_data/a/feat.npy, node_data/a/label.npy,
//           split/a/train_idx.npy, edges/b___s___a.npy
// An empty part leaves its file out. What a reader accepts must hold the dataset's invariants.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "base/strings.h"
#include "base/text_reader.h"
#include "partition/readers.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace fs = std::filesystem;
using fanout::fuzz::WriteFile;

bool IsNpy(std::string_view s) { return s.substr(0, 6) == "\x93NUMPY"; }

void Put(const fs::path& path, std::string_view data) {
  if (data.empty()) return;
  fs::create_directories(path.parent_path());
  WriteFile(path.string(), data);
}

int64_t ParseOr(std::string_view s, int64_t fallback) {
  int64_t v;
  return fanout::base::ParseInt64(fanout::base::StripSpaces(s.substr(0, s.find('\n'))), &v) ? v
                                                                                            : fallback;
}

void CheckDataset(const fanout::partition::Dataset& d) {
  FANOUT_CHECK(d.num_nodes >= 0);
  FANOUT_CHECK(d.edges.shape().size() == 2 && d.edges.shape()[1] == 2);
  const int64_t* e = d.edges.data_as<int64_t>();
  for (int64_t i = 0; i < 2 * d.num_edges(); ++i) FANOUT_CHECK(e[i] >= 0 && e[i] < d.num_nodes);
  for (const auto& f : d.node_fields) FANOUT_CHECK(f.data.rows() == d.FieldRows(f)) << f.name;
  if (d.typed()) {
    FANOUT_CHECK(d.node_type_offsets.size() == d.node_types.size() + 1 && d.node_type_offsets.back() == d.num_nodes);
    FANOUT_CHECK(d.edge_type_offsets.size() == d.edge_types.size() + 1 && d.edge_type_offsets.back() == d.num_edges());
    for (int64_t i = 0; i < d.num_edges(); ++i) {
      const auto& t = d.edge_types[d.EdgeTypeOf(i)];
      FANOUT_CHECK(d.node_types[d.NodeTypeOf(e[2 * i])] == t.src && d.node_types[d.NodeTypeOf(e[2 * i + 1])] == t.dst);
    }
  }
  for (const auto& f : d.edge_fields) FANOUT_CHECK(f.data.rows() == d.num_edges()) << f.name;
  for (const auto* idx : {&d.train_idx, &d.valid_idx, &d.test_idx}) {
    for (int64_t v : *idx) FANOUT_CHECK(v >= 0 && v < d.num_nodes);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path dir = fs::path(fanout::fuzz::TempDir()) / "dataset";
  std::vector<std::string_view> parts =
      fanout::fuzz::SplitParts(std::string_view(reinterpret_cast<const char*>(data), size));
  std::string_view mode = fanout::base::StripSpaces(parts[0].substr(0, parts[0].find('\n')));
  parts.erase(parts.begin());
  parts.resize(9);  // missing parts are empty: their files are left out
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);

  if (mode == "assign") {
    int64_t num_nodes = ParseOr(parts[0], 4);
    int num_parts = static_cast<int>(ParseOr(parts[1], 2));
    fs::path path = dir / (IsNpy(parts[2]) ? "assignment.npy" : "assignment.txt");
    WriteFile(path.string(), parts[2]);
    auto a = fanout::partition::ReadAssignment(path.string(), num_nodes, num_parts);
    if (a.ok()) {
      FANOUT_CHECK(static_cast<int64_t>(a->size()) == num_nodes);
      for (int32_t p : *a) FANOUT_CHECK(p >= 0 && p < num_parts);
    }
    return 0;
  }
  if (mode == "ogb") {
    const char* raw[] = {"num-node-list.csv.gz", "edge.csv.gz",      "num-edge-list.csv.gz",
                         "node-feat.csv.gz",     "node-label.csv.gz", "edge-feat.csv.gz"};
    for (int i = 0; i < 6; ++i) Put(dir / "raw" / raw[i], parts[i]);
    // The reader recognises the layout by raw/edge.csv.gz.
    fs::create_directories(dir / "raw");
    if (parts[1].empty()) WriteFile((dir / "raw" / "edge.csv.gz").string(), "");
    const char* split[] = {"train.csv.gz", "valid.csv.gz", "test.csv.gz"};
    for (int i = 0; i < 3; ++i) Put(dir / "split" / "s" / split[i], parts[6 + i]);
  } else if (mode == "hetero") {
    const fs::path rel = dir / "raw" / "relations" / "a___r___b";
    const fs::path files[] = {dir / "raw" / "num-node-dict.csv.gz",  dir / "raw" / "triplet-type-list.csv.gz",
                              rel / "edge.csv.gz",                    rel / "num-edge-list.csv.gz",
                              rel / "edge_reltype.csv.gz",            dir / "raw" / "node-feat" / "a" / "node-feat.csv.gz",
                              dir / "raw" / "node-label" / "a" / "node-label.csv.gz",
                              dir / "split" / "s" / "a" / "train.csv.gz", dir / "split" / "s" / "a" / "valid.csv.gz"};
    for (int i = 0; i < 9; ++i) Put(files[i], parts[i]);
    // The reader recognises the layout by raw/num-node-dict.csv.gz.
    if (parts[0].empty()) Put(files[0], "a,b\n1,1\n");
  } else if (mode == "typed-npy") {
    const fs::path files[] = {dir / "num_nodes.json",           dir / "edges" / "a___r___b.npy",
                              dir / "node_data" / "a" / "feat.npy", dir / "node_data" / "a" / "label.npy",
                              dir / "split" / "a" / "train_idx.npy", dir / "edges" / "b___s___a.npy"};
    for (int i = 0; i < 6; ++i) Put(files[i], parts[i]);
    if (parts[0].empty()) Put(files[0], "{\"a\": 2, \"b\": 1}");
  } else {
    Put(dir / (IsNpy(parts[0]) ? "edges.npy" : "edges.csv"), parts[0]);
    if (parts[0].empty()) WriteFile((dir / "edges.csv").string(), "");
    const char* files[] = {"node_feat.npy", "node_label.npy", "train_idx.npy",
                           "valid_idx.npy", "test_idx.npy",   "edge_feat.npy",
                           "node_data/extra.npy", "edge_data/extra.npy"};
    for (int i = 0; i < 8; ++i) Put(dir / files[i], parts[1 + i]);
  }
  fanout::partition::ReadOptions options;
  options.input_dir = dir.string();
  auto d = fanout::partition::ReadDataset(options);
  if (d.ok()) CheckDataset(*d);
  return 0;
}

#include "partition/readers.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/progress.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/text_reader.h"
#include "core/shape.h"
#include "partition/slice_input.h"

namespace fanout::partition {
namespace {

namespace fs = std::filesystem;
using core::DType;
using base::LineReader;
using core::NpyArray;
using base::StrCat;

absl::StatusOr<int64_t> ReadSingleInt(const std::string& path) {
  ASSIGN_OR_RETURN(auto v, ReadIntColumn(path, 0, ""));
  if (v.size() != 1) {
    return absl::InvalidArgumentError(StrCat(
        path, ": expected exactly one number, found ", v.size(),
        v.size() > 1 ? " (graph-property datasets with many graphs are not supported)" : ""));
  }
  if (v[0] < 0) return absl::InvalidArgumentError(StrCat(path, ": negative count ", v[0]));
  return v[0];
}

// A float matrix, one row per line, every row with the same number of columns.
absl::StatusOr<NpyArray> ReadFloatMatrix(const std::string& path, int64_t expected_rows,
                                         const std::string& rows_name) {
  std::vector<float> v;
  int64_t cols = -1, rows = 0;
  base::Progress progress("fanout-partition", StrCat("reading ", path), expected_rows);
  RETURN_IF_ERROR(ForEachRecord(path, [&](const LineReader& r, std::string_view,
                                          const std::vector<std::string_view>& fields) {
    if (cols < 0) {
      cols = static_cast<int64_t>(fields.size());
      v.reserve(ReserveFor(path, expected_rows, cols));
    }
    if (static_cast<int64_t>(fields.size()) != cols) {
      return LineError(r, StrCat("has ", fields.size(), " values, earlier rows have ", cols));
    }
    for (size_t c = 0; c < fields.size(); ++c) {
      float x;
      if (!base::ParseFloat(fields[c], &x)) {
        return LineError(r, StrCat("column ", c + 1, ": '", fields[c].substr(0, 40), "' is not a number"));
      }
      v.push_back(x);
    }
    ++rows;
    if (expected_rows > 0 && rows > expected_rows) {
      return LineError(r, StrCat("more rows than the ", expected_rows, " ", rows_name));
    }
    progress.Update(rows);
    return absl::OkStatus();
  }));
  if (expected_rows >= 0 && rows != expected_rows) {
    return absl::InvalidArgumentError(StrCat(path, ": has ", rows, " rows but the graph has ",
                                             expected_rows, " ", rows_name,
                                             rows < expected_rows ? " (file truncated?)" : ""));
  }
  return NpyArray::Adopt(std::move(v), {rows, cols < 0 ? 0 : cols});
}

// Labels, one per line; "nan" (unlabelled in some OGB datasets) becomes -1.
absl::StatusOr<NpyArray> ReadLabels(const std::string& path, int64_t num_nodes) {
  std::vector<int64_t> v;
  v.reserve(ReserveFor(path, num_nodes, 1));
  RETURN_IF_ERROR(ForEachRecord(path, [&](const LineReader& r, std::string_view,
                                          const std::vector<std::string_view>& fields) {
    if (fields.size() != 1) {
      return LineError(r, StrCat("has ", fields.size(),
                                 " columns; one label per node expected (multi-label datasets "
                                 "are not supported)"));
    }
    int64_t y;
    float f;
    if (base::ParseInt64(fields[0], &y)) {
    } else if (base::ParseFloat(fields[0], &f) &&
               (std::isnan(f) || (f == std::floor(f) && std::fabs(f) < 0x1p63f))) {
      // (Outside int64, converting the float would be undefined behaviour.)
      y = std::isnan(f) ? -1 : static_cast<int64_t>(f);
    } else {
      return LineError(r, StrCat("label '", fields[0].substr(0, 40), "' is not an integer"));
    }
    if (y < -1) return LineError(r, StrCat("label ", y, " is negative"));
    v.push_back(y);
    return absl::OkStatus();
  }));
  if (static_cast<int64_t>(v.size()) != num_nodes) {
    return absl::InvalidArgumentError(StrCat(path, ": has ", v.size(), " labels but the graph has ",
                                             num_nodes, " nodes"));
  }
  return NpyArray::Adopt(std::move(v), {num_nodes});
}

absl::StatusOr<std::vector<int64_t>> ReadIndexNpy(const std::string& path, int64_t num_nodes,
                                                  const std::string& limit_name) {
  ASSIGN_OR_RETURN(NpyArray a, MapAsInt64(path));
  if (a.shape().size() != 1) {
    return absl::InvalidArgumentError(StrCat(path, ": expected a 1-D index array"));
  }
  const int64_t* p = a.data_as<int64_t>();
  for (int64_t i = 0; i < a.rows(); ++i) {
    if (p[i] < 0 || p[i] >= num_nodes) {
      return absl::InvalidArgumentError(StrCat(path, " row ", i, ": index ", p[i],
                                               " is outside [0, ", num_nodes, ") (", limit_name, ")"));
    }
  }
  return std::vector<int64_t>(p, p + a.rows());
}

int64_t NumClasses(const NpyArray& labels) {
  const int64_t* y = labels.data_as<int64_t>();
  int64_t m = -1;
  for (int64_t i = 0; i < labels.rows(); ++i) m = std::max(m, y[i]);
  return m + 1;
}

absl::StatusOr<std::string> PickSplit(const fs::path& split_root, const std::string& wanted) {
  std::error_code ec;
  std::vector<std::string> names;
  if (fs::is_directory(split_root, ec)) {
    for (const auto& e : fs::directory_iterator(split_root, ec)) {
      if (e.is_directory()) names.push_back(e.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  if (!wanted.empty()) {
    if (std::find(names.begin(), names.end(), wanted) == names.end()) {
      return absl::NotFoundError(StrCat("--split ", wanted, ": no folder ", (split_root / wanted).string(),
                                        " (found: ", names.empty() ? "none" : base::StrJoin(names, ", "), ")"));
    }
    return wanted;
  }
  if (names.size() > 1) {
    return absl::InvalidArgumentError(StrCat(split_root.string(), " has several splits (",
                                             base::StrJoin(names, ", "), "); choose one with --split"));
  }
  return names.empty() ? std::string() : names[0];
}

absl::StatusOr<Dataset> ReadOgb(const fs::path& dir, const ReadOptions& opt) {
  Dataset d;
  d.layout = "ogb";
  fs::path raw = dir / "raw";
  d.num_nodes_source = (raw / "num-node-list.csv.gz").string();
  ASSIGN_OR_RETURN(d.num_nodes, ReadSingleInt(d.num_nodes_source));
  int64_t num_edges = -1;
  std::error_code ec;
  if (fs::exists(raw / "num-edge-list.csv.gz", ec)) {
    ASSIGN_OR_RETURN(num_edges, ReadSingleInt((raw / "num-edge-list.csv.gz").string()));
  }
  d.edges_source = (raw / "edge.csv.gz").string();
  ASSIGN_OR_RETURN(d.edges, ReadEdgesText(d.edges_source, d.num_nodes, num_edges));
  if (fs::exists(raw / "node-feat.csv.gz", ec)) {
    ASSIGN_OR_RETURN(NpyArray f, ReadFloatMatrix((raw / "node-feat.csv.gz").string(), d.num_nodes, "nodes"));
    d.node_fields.push_back({"feat", std::move(f)});
  }
  if (fs::exists(raw / "node-label.csv.gz", ec)) {
    ASSIGN_OR_RETURN(NpyArray y, ReadLabels((raw / "node-label.csv.gz").string(), d.num_nodes));
    d.num_classes = NumClasses(y);
    d.node_fields.push_back({"label", std::move(y)});
  }
  if (fs::exists(raw / "edge-feat.csv.gz", ec)) {
    ASSIGN_OR_RETURN(NpyArray f, ReadFloatMatrix((raw / "edge-feat.csv.gz").string(), d.num_edges(), "edges"));
    d.edge_fields.push_back({"feat", std::move(f)});
  }
  ASSIGN_OR_RETURN(std::string split, PickSplit(dir / "split", opt.split));
  // OGB's link-property datasets keep {train,valid,test}.pt (torch pickles of held-out edges) in
  // their split folder: no node split; scripts/ogb_link_split.py converts them for
  // --edge-split-files.
  if (!split.empty() && !fs::exists(dir / "split" / split / "train.csv.gz", ec) &&
      fs::exists(dir / "split" / split / "valid.pt", ec)) {
    split.clear();
  }
  if (!split.empty()) {
    fs::path s = dir / "split" / split;
    ASSIGN_OR_RETURN(d.train_idx, ReadIntColumn((s / "train.csv.gz").string(), d.num_nodes, "num_nodes"));
    ASSIGN_OR_RETURN(d.valid_idx, ReadIntColumn((s / "valid.csv.gz").string(), d.num_nodes, "num_nodes"));
    ASSIGN_OR_RETURN(d.test_idx, ReadIntColumn((s / "test.csv.gz").string(), d.num_nodes, "num_nodes"));
    d.has_split = true;
  }
  return d;
}

// One line of comma-separated names (num-node-dict's header, a triplet) per record of `path`.
absl::StatusOr<std::vector<std::vector<std::string>>> ReadRecords(const std::string& path) {
  std::vector<std::vector<std::string>> out;
  RETURN_IF_ERROR(ForEachRecord(path, [&](const LineReader&, std::string_view, const std::vector<std::string_view>& f) {
    out.emplace_back();
    for (std::string_view x : f) out.back().emplace_back(base::StripSpaces(x));
    return absl::OkStatus();
  }));
  return out;
}

// Limits for a relation's two ends, named by type.
EndLimits RelationLimits(const Dataset& d, const core::CanonicalEdgeType& t) {
  const int st = d.NodeTypeIndex(t.src), dt = d.NodeTypeIndex(t.dst);
  return EndLimits{d.TypeCount(st), d.TypeCount(dt), StrCat("the ", t.src, " nodes"), StrCat("the ", t.dst, " nodes")};
}

// Appends relation `t` with `local`, its [n, 2] edges in type-wise IDs (already range-checked),
// to `edges` in input node IDs.
void AppendRelation(Dataset* d, core::CanonicalEdgeType t, const NpyArray& local, std::vector<int64_t>* edges) {
  const int64_t so = d->node_type_offsets[d->NodeTypeIndex(t.src)], dof = d->node_type_offsets[d->NodeTypeIndex(t.dst)];
  const int64_t* p = local.data_as<int64_t>();
  for (int64_t i = 0; i < local.rows(); ++i) {
    edges->push_back(p[2 * i] + so);
    edges->push_back(p[2 * i + 1] + dof);
  }
  d->edge_types.push_back(std::move(t));
  if (d->edge_type_offsets.empty()) d->edge_type_offsets.push_back(0);
  d->edge_type_offsets.push_back(static_cast<int64_t>(edges->size() / 2));
}

// OGB's heterogeneous raw layout, as ogbn-mag ships it (README "Dataset layouts"). Types keep the
// files' order: node types as num-node-dict lists them, relations as triplet-type-list does.
absl::StatusOr<Dataset> ReadOgbHetero(const fs::path& dir, const ReadOptions& opt) {
  Dataset d;
  d.layout = "ogb-hetero";
  const fs::path raw = dir / "raw";
  std::error_code ec;
  d.num_nodes_source = (raw / "num-node-dict.csv.gz").string();
  ASSIGN_OR_RETURN(auto dict, ReadRecords(d.num_nodes_source));
  if (dict.size() != 2 || dict[0].size() != dict[1].size() || dict[0].empty()) {
    return absl::InvalidArgumentError(StrCat(d.num_nodes_source,
                                             ": expected two lines, node type names then their counts"));
  }
  for (size_t t = 0; t < dict[0].size(); ++t) {
    int64_t count;
    if (!base::ParseInt64(dict[1][t], &count)) {
      return absl::InvalidArgumentError(StrCat(d.num_nodes_source, ": the count of '", dict[0][t], "' is '",
                                               dict[1][t], "', not a node count"));
    }
    RETURN_IF_ERROR(AddNodeType(&d, dict[0][t], count, d.num_nodes_source));
  }
  d.num_nodes = d.node_type_offsets.back();
  auto count_of = [&](int t) { return d.TypeCount(t); };

  const std::string triplets = (raw / "triplet-type-list.csv.gz").string();
  ASSIGN_OR_RETURN(auto lines, ReadRecords(triplets));
  if (lines.empty()) return absl::InvalidArgumentError(StrCat(triplets, ": lists no relations"));
  std::vector<int64_t> edges;
  d.edges_source = (raw / "relations").string();
  for (size_t r = 0; r < lines.size(); ++r) {
    const std::vector<std::string>& l = lines[r];
    ASSIGN_OR_RETURN(core::CanonicalEdgeType type, CheckRelation(d, l, StrCat(triplets, " relation ", r)));
    const fs::path rel = raw / "relations" / StrCat(l[0], "___", l[1], "___", l[2]);
    int64_t expected = -1;
    if (fs::exists(rel / "num-edge-list.csv.gz", ec)) {
      ASSIGN_OR_RETURN(expected, ReadSingleInt((rel / "num-edge-list.csv.gz").string()));
    }
    ASSIGN_OR_RETURN(NpyArray e, ReadEdgesText((rel / "edge.csv.gz").string(), RelationLimits(d, type),
                                               expected));
    // edge_reltype names each edge's relation by its triplet index: it must be this one.
    if (fs::exists(rel / "edge_reltype.csv.gz", ec)) {
      ASSIGN_OR_RETURN(std::vector<int64_t> types, ReadIntColumn((rel / "edge_reltype.csv.gz").string(), 0, ""));
      if (static_cast<int64_t>(types.size()) != e.rows()) {
        return absl::InvalidArgumentError(StrCat((rel / "edge_reltype.csv.gz").string(), ": has ", types.size(),
                                                 " lines for ", e.rows(), " edges"));
      }
      for (size_t i = 0; i < types.size(); ++i) {
        if (types[i] != static_cast<int64_t>(r)) {
          return absl::InvalidArgumentError(StrCat((rel / "edge_reltype.csv.gz").string(), " edge ", i, ": relation ",
                                                   types[i], ", but this folder is relation ", r, " of ", triplets));
        }
      }
    }
    AppendRelation(&d, std::move(type), e, &edges);
  }
  const int64_t m = static_cast<int64_t>(edges.size() / 2);
  d.edges = NpyArray::Adopt(std::move(edges), {m, 2});

  // Features and labels per type; a type without them has none (a folder for an unknown type is
  // an error, not something to skip silently).
  for (const std::string kind : {"node-feat", "node-label"}) {
    ASSIGN_OR_RETURN(auto folders, TypeFolders(d, d.num_nodes_source, (raw / kind).string()));
    for (const auto& [t, dir] : folders) {
      const fs::path folder(dir);
      const std::string file = (folder / StrCat(kind, ".csv.gz")).string();
      if (kind == "node-feat") {
        ASSIGN_OR_RETURN(NpyArray f, ReadFloatMatrix(file, count_of(t), StrCat(d.node_types[t], " nodes")));
        d.node_fields.push_back({"feat", std::move(f), d.node_types[t]});
      } else {
        ASSIGN_OR_RETURN(NpyArray y, ReadLabels(file, count_of(t)));
        d.num_classes = std::max(d.num_classes, NumClasses(y));
        d.node_fields.push_back({"label", std::move(y), d.node_types[t]});
      }
    }
  }
  ASSIGN_OR_RETURN(std::string split, PickSplit(dir / "split", opt.split));
  if (!split.empty()) {
    ASSIGN_OR_RETURN(auto folders, TypeFolders(d, d.num_nodes_source, (dir / "split" / split).string()));
    for (const auto& [t, type_dir] : folders) {
      const fs::path folder(type_dir);
      for (auto [file, out] : {std::pair{"train.csv.gz", &d.train_idx}, {"valid.csv.gz", &d.valid_idx},
                               {"test.csv.gz", &d.test_idx}}) {
        if (!fs::exists(folder / file, ec)) continue;
        ASSIGN_OR_RETURN(std::vector<int64_t> ids,
                         ReadIntColumn((folder / file).string(), count_of(t), StrCat("the ", d.node_types[t], " nodes")));
        for (int64_t v : ids) out->push_back(v + d.node_type_offsets[t]);
        d.has_split = true;
      }
    }
    for (auto* idx : {&d.train_idx, &d.valid_idx, &d.test_idx}) std::sort(idx->begin(), idx->end());
  }
  return d;
}

// A field's rows as one array: its file mapped, or its chunks copied into one. Labels become
// int64 (MapAsInt64) and must be 1-D.
absl::StatusOr<NpyArray> WholeField(const SliceField& f) {
  const std::vector<std::string> paths = f.data.paths();
  if (f.name == "label" && f.data.row_shape().size() != 0) {
    return absl::InvalidArgumentError(StrCat(paths[0], ": labels must be a 1-D integer array"));
  }
  if (paths.size() == 1) return f.name == "label" ? MapAsInt64(paths[0]) : NpyArray::Map(paths[0]);
  std::vector<int64_t> shape = {f.data.rows()};
  shape.insert(shape.end(), f.data.row_shape().begin(), f.data.row_shape().end());
  if (f.name == "label") {
    ASSIGN_OR_RETURN(std::vector<int64_t> y, f.data.ReadInts(0, f.data.rows()));
    return NpyArray::Adopt(std::move(y), shape);
  }
  NpyArray a = NpyArray::Owned(f.data.dtype(), shape);
  f.data.CopyRows(0, f.data.rows(), static_cast<char*>(a.mutable_data()));
  return a;
}

// The input's edges as one int64 [E, 2] array: edges.npy mapped when it is that already; text
// parsed with its IDs checked against a known node count (`max_id_line` gets the line of the
// largest ID); otherwise one slice of every edge.
absl::StatusOr<NpyArray> WholeEdges(SliceInput& in, int64_t* max_id_line) {
  if (in.edge_files.size() == 1 && !in.typed()) {
    EdgeFile& f = in.edge_files[0];
    if (f.form == EdgeFile::Form::kText && f.rows < 0) {
      return ReadEdgesText(f.path, std::max<int64_t>(in.num_nodes, 0), -1, max_id_line);
    }
    if (f.form == EdgeFile::Form::kRows && f.npy.dtype() == DType::kInt64) return std::move(f.npy);
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> e, ReadEdgeSlice(in, 0, in.num_edges));
  return NpyArray::Adopt(std::move(e), {in.num_edges, 2});
}

// The serial tool's read of an input SliceInput opens: one slice covering everything.
absl::StatusOr<Dataset> ReadWhole(SliceInput in) {
  Dataset d;
  static_cast<GraphTypes&>(d) = in;
  d.layout = in.layout;
  d.name = in.name;
  d.num_nodes = in.num_nodes;
  d.num_nodes_source = in.num_nodes_source;
  d.edges_source = in.edges_source;
  d.inputs = in.inputs;
  int64_t max_id_line = -1;
  ASSIGN_OR_RETURN(d.edges, WholeEdges(in, &max_id_line));
  if (d.num_nodes < 0) {
    // No --num-nodes and no node field: the largest endpoint + 1, with where it is, so that a
    // count far too large (raw or hashed IDs) can be traced.
    const int64_t* e = d.edges.data_as<int64_t>();
    int64_t m = -1, at = -1;
    for (int64_t i = 0; i < 2 * d.num_edges(); ++i) {
      if (e[i] > m) m = e[i], at = i;
    }
    if (m == std::numeric_limits<int64_t>::max()) {
      return absl::InvalidArgumentError(StrCat(d.edges_source, ": node ID ", m,
                                               " is too large (IDs must be below 2^63 - 1)"));
    }
    d.num_nodes = m + 1;
    d.num_nodes_source = StrCat("the largest node ID in ", d.edges_source, ", ", m,
                                max_id_line >= 0 ? StrCat(" on line ", max_id_line) : StrCat(" in edge ", at / 2));
  }
  for (auto [from, to] : {std::pair{&in.node_fields, &d.node_fields}, {&in.edge_fields, &d.edge_fields}}) {
    for (const SliceField& f : *from) {
      ASSIGN_OR_RETURN(NpyArray a, WholeField(f));
      if (f.name == "label" && from == &in.node_fields) d.num_classes = std::max(d.num_classes, NumClasses(a));
      to->push_back({.name = f.name, .data = std::move(a), .node_type = f.node_type, .edge_type = f.edge_type});
    }
  }
  // Split files hold type-wise IDs on a typed graph; each file is optional on its own.
  d.has_split = in.has_split;
  std::vector<int64_t>* idx[3] = {&d.train_idx, &d.valid_idx, &d.test_idx};
  for (int i = 0; i < 3; ++i) {
    for (const SplitFile& file : in.split_files[i]) {
      const int64_t first = file.type < 0 ? 0 : d.node_type_offsets[file.type];
      const int64_t count = file.type < 0 ? d.num_nodes : d.TypeCount(file.type);
      ASSIGN_OR_RETURN(std::vector<int64_t> ids,
                       ReadIndexNpy(file.path, count, file.type < 0 ? "num_nodes" : StrCat("the ", d.node_types[file.type], " nodes")));
      for (int64_t v : ids) idx[i]->push_back(v + first);
    }
    if (d.typed()) std::sort(idx[i]->begin(), idx[i]->end());
  }
  return d;
}

}  // namespace

absl::StatusOr<Dataset> ReadDataset(const ReadOptions& opt) {
  fs::path dir(opt.input_dir);
  std::error_code ec;
  if (opt.input_dir.empty()) return absl::InvalidArgumentError("--input is required");
  if (opt.num_nodes < -1) {
    return absl::InvalidArgumentError(
        StrCat("--num-nodes must be -1 (infer it) or a node count >= 0, got ", opt.num_nodes));
  }
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(StrCat("--input ", opt.input_dir, ": not a readable folder"));
  }
  absl::StatusOr<Dataset> d;
  if (fs::exists(dir / "raw" / "edge.csv.gz", ec)) {
    d = ReadOgb(dir, opt);
  } else if (fs::exists(dir / "raw" / "num-node-dict.csv.gz", ec)) {
    d = ReadOgbHetero(dir, opt);
  } else {
    absl::StatusOr<SliceInput> in = OpenSliceInput(opt);
    if (absl::IsNotFound(in.status())) {
      return absl::NotFoundError(StrCat(
          "--input ", opt.input_dir, ": no dataset found (looked for raw/edge.csv.gz, OGB's layout, ",
          "raw/num-node-dict.csv.gz, OGB's heterogeneous layout, num_nodes.json, the typed .npy layout, ",
          "metadata.json, DGL's chunked format, and edges.npy / edges.csv / edges.tsv, the plain layout; see ",
          "README 'Dataset layouts')"));
    }
    d = in.ok() ? ReadWhole(*std::move(in)) : absl::StatusOr<Dataset>(in.status());
  }
  if (!d.ok()) return d.status();
  d->input_dir = opt.input_dir;
  d->name = fs::absolute(dir).lexically_normal().filename().string();
  if (d->name.empty()) d->name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  RETURN_IF_ERROR(ValidateDataset(*d));
  return d;
}

}  // namespace fanout::partition

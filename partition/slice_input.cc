#include "partition/slice_input.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "base/strings.h"

namespace fanout::partition {

namespace fs = std::filesystem;
using base::StrCat;
using core::DType;
using core::NpyArray;

absl::StatusOr<ChunkedArray> ChunkedArray::Open(const std::vector<std::string>& paths) {
  if (paths.empty()) return absl::InvalidArgumentError("an array with no files");
  ChunkedArray a;
  for (const std::string& p : paths) {
    ASSIGN_OR_RETURN(NpyArray c, NpyArray::Map(p));
    if (c.shape().empty()) return absl::InvalidArgumentError(StrCat(p, ": a 0-d array, expected rows"));
    std::vector<int64_t> rest(c.shape().begin() + 1, c.shape().end());
    if (a.chunks_.empty()) {
      a.dtype_ = c.dtype();
      a.row_shape_ = rest;
      a.row_bytes_ = c.row_bytes();
    } else if (c.dtype() != a.dtype_ || rest != a.row_shape_) {
      return absl::InvalidArgumentError(StrCat(p, ": dtype ", core::DTypeName(c.dtype()), " and row shape [",
                                               base::StrJoin(rest, ", "), "] differ from ", paths[0], "'s ",
                                               core::DTypeName(a.dtype_), " [", base::StrJoin(a.row_shape_, ", "),
                                               "]"));
    }
    a.starts_.push_back(a.rows_);
    a.rows_ += c.rows();
    a.chunks_.push_back(std::move(c));
  }
  a.starts_.push_back(a.rows_);
  return a;
}

std::vector<std::string> ChunkedArray::paths() const {
  std::vector<std::string> out;
  for (const NpyArray& c : chunks_) out.push_back(c.path());
  return out;
}

std::string ChunkedArray::Where(int64_t row) const {
  const size_t c = std::upper_bound(starts_.begin(), starts_.end() - 1, row) - starts_.begin() - 1;
  return StrCat(chunks_[c].path(), " row ", row - starts_[c]);
}

void ChunkedArray::CopyRows(int64_t begin, int64_t end, char* out) const {
  for (size_t c = 0; c < chunks_.size() && begin < end; ++c) {
    const int64_t lo = std::max(begin, starts_[c]), hi = std::min(end, starts_[c + 1]);
    if (lo >= hi) continue;
    const size_t from = (lo - starts_[c]) * row_bytes_, bytes = (hi - lo) * row_bytes_;
    std::memcpy(out, static_cast<const char*>(chunks_[c].data()) + from, bytes);
    chunks_[c].DropPages(from, from + bytes);
    out += bytes;
  }
}

const char* ChunkedArray::Row(int64_t row) const {
  const size_t c = std::upper_bound(starts_.begin(), starts_.end() - 1, row) - starts_.begin() - 1;
  return static_cast<const char*>(chunks_[c].data()) + (row - starts_[c]) * row_bytes_;
}

void ChunkedArray::DropAll() const {
  for (const NpyArray& c : chunks_) c.DropPages(0, c.nbytes());
}

absl::StatusOr<std::vector<int64_t>> ChunkedArray::ReadInts(int64_t begin, int64_t end, int column) const {
  const int64_t cols = row_shape_.empty() ? 1 : row_shape_[0];
  if (row_shape_.size() > 1 || column >= cols) {
    return absl::InvalidArgumentError(StrCat(first_path(), ": expected a 1-D or [n, ", column + 1, "] integer array"));
  }
  if (!IsIntegerDType(dtype_)) {
    return absl::InvalidArgumentError(StrCat(first_path(), ": expected an integer array, found ",
                                             core::DTypeName(dtype_)));
  }
  std::vector<char> raw((end - begin) * row_bytes_);
  CopyRows(begin, end, raw.data());
  std::vector<int64_t> out(end - begin);
  const int64_t stride = static_cast<int64_t>(row_bytes_ / core::DTypeSize(dtype_));
  for (int64_t i = 0; i < end - begin; ++i) out[i] = IntAt(raw.data(), dtype_, i * stride + column);
  return out;
}

namespace {

std::string IfExists(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? p.string() : "";
}

absl::Status AddFieldDir(const fs::path& dir, std::vector<SliceField>* out) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".npy") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    const std::string name = f.stem().string();
    for (const SliceField& e : *out) {
      if (e.name == name) return absl::InvalidArgumentError(StrCat(f.string(), ": field '", name, "' is defined twice"));
    }
    ASSIGN_OR_RETURN(ChunkedArray a, ChunkedArray::Open({f.string()}));
    out->push_back({name, std::move(a)});
  }
  return absl::OkStatus();
}

// An edge .npy, [e, 2] rows or [2, e] columns as `layout` ("rows", "columns", "auto") says.
absl::StatusOr<EdgeFile> OpenEdgeNpy(const std::string& path, const std::string& layout) {
  EdgeFile f;
  f.path = path;
  ASSIGN_OR_RETURN(f.npy, NpyArray::Map(path));
  if (!IsIntegerDType(f.npy.dtype())) {
    return absl::InvalidArgumentError(StrCat(path, ": expected an integer array, found ", core::DTypeName(f.npy.dtype())));
  }
  ASSIGN_OR_RETURN(const bool columns, EdgeColumns(path, f.npy.shape(), layout));
  f.form = columns ? EdgeFile::Form::kColumns : EdgeFile::Form::kRows;
  f.rows = f.npy.shape()[columns ? 1 : 0];
  return f;
}

// Appends `f` to the input's edges.
void AddEdgeFile(SliceInput* in, EdgeFile f) {
  if (in->edge_starts.empty()) in->edge_starts.push_back(0);
  in->num_edges = f.rows < 0 || in->num_edges < 0 ? -1 : in->num_edges + f.rows;
  in->edge_starts.push_back(in->num_edges);
  in->edge_files.push_back(std::move(f));
}

// The plain layout (README "Dataset layouts"): edges.npy, or edges.{csv,tsv,txt}[.gz] text; node
// and edge fields as .npy; {train,valid,test}_idx.npy.
absl::StatusOr<SliceInput> OpenPlain(const fs::path& dir, const ReadOptions& read) {
  SliceInput in;
  in.layout = "plain";
  for (auto [file, name] : {std::pair{"node_feat.npy", "feat"}, {"node_label.npy", "label"}}) {
    if (std::string p = IfExists(dir / file); !p.empty()) {
      ASSIGN_OR_RETURN(ChunkedArray a, ChunkedArray::Open({p}));
      in.node_fields.push_back({name, std::move(a)});
    }
  }
  RETURN_IF_ERROR(AddFieldDir(dir / "node_data", &in.node_fields));
  if (std::string p = IfExists(dir / "edge_feat.npy"); !p.empty()) {
    ASSIGN_OR_RETURN(ChunkedArray a, ChunkedArray::Open({p}));
    in.edge_fields.push_back({"feat", std::move(a)});
  }
  RETURN_IF_ERROR(AddFieldDir(dir / "edge_data", &in.edge_fields));
  in.num_edges = 0;
  if (std::string edges = IfExists(dir / "edges.npy"); !edges.empty()) {
    ASSIGN_OR_RETURN(EdgeFile f, OpenEdgeNpy(edges, read.edge_layout));
    AddEdgeFile(&in, std::move(f));
  } else {
    for (const char* name : kPlainTextEdgeFiles) {
      if (std::string p = IfExists(dir / name); !p.empty()) {
        AddEdgeFile(&in, EdgeFile{.path = p, .form = EdgeFile::Form::kText});
        break;
      }
    }
  }
  in.edges_source = in.edge_files.at(0).path;
  const char* split_names[3] = {"train_idx.npy", "valid_idx.npy", "test_idx.npy"};
  for (int i = 0; i < 3; ++i) {
    if (std::string p = IfExists(dir / split_names[i]); !p.empty()) {
      in.split_files[i] = {{p, -1}};
      in.has_split = true;
    }
  }
  in.num_nodes = read.num_nodes;
  in.num_nodes_source = "--num-nodes";
  if (in.num_nodes < 0 && !in.node_fields.empty()) {
    in.num_nodes = in.node_fields[0].data.rows();
    in.num_nodes_source = in.node_fields[0].data.first_path();
  }
  return in;
}

// DGL's chunked graph format (metadata.json; https://docs.dgl.ai/guide/distributed-preprocessing.html)
// with one node type and one edge type: edges as "csv" (text, "src dst" per line) or "numpy" ([e, 2])
// chunks, node and edge data as "numpy" chunks. Paths are relative to the metadata's folder.
absl::StatusOr<SliceInput> OpenDglChunked(const fs::path& dir, const ReadOptions& read) {
  const std::string meta_path = (dir / "metadata.json").string();
  nlohmann::json m;
  {
    std::ifstream f(meta_path);
    m = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  }
  if (m.is_discarded() || !m.is_object()) return absl::InvalidArgumentError(StrCat(meta_path, ": not a JSON object"));
  auto bad = [&](const std::string& what) { return absl::InvalidArgumentError(StrCat(meta_path, ": ", what)); };
  auto one_of = [&](const char* key) -> absl::StatusOr<std::string> {
    if (!m.contains(key) || !m[key].is_array() || m[key].size() != 1 || !m[key][0].is_string()) {
      return bad(StrCat("'", key, "' must list exactly one type (fanout reads DGL's chunked format with one node "
                        "and one edge type; typed graphs go in the typed .npy layout, docs/partitioning.md)"));
    }
    return m[key][0].get<std::string>();
  };
  ASSIGN_OR_RETURN(const std::string ntype, one_of("node_type"));
  ASSIGN_OR_RETURN(const std::string etype, one_of("edge_type"));
  auto counts = [&](const char* key) -> absl::StatusOr<std::vector<int64_t>> {
    if (!m.contains(key) || !m[key].is_array() || m[key].size() != 1 || !m[key][0].is_array()) {
      return bad(StrCat("'", key, "' must be [[count per chunk, ...]] for the one type"));
    }
    std::vector<int64_t> v;
    for (const auto& x : m[key][0]) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0) return bad(StrCat("'", key, "' holds ", x.dump()));
      v.push_back(x.get<int64_t>());
    }
    return v;
  };
  ASSIGN_OR_RETURN(const std::vector<int64_t> node_chunks, counts("num_nodes_per_chunk"));
  ASSIGN_OR_RETURN(const std::vector<int64_t> edge_chunks, counts("num_edges_per_chunk"));
  auto files = [&](const nlohmann::json& spec, const std::string& what,
                   std::string* format) -> absl::StatusOr<std::vector<std::string>> {
    if (!spec.is_object() || !spec.contains("data") || !spec["data"].is_array() || spec["data"].empty()) {
      return bad(StrCat(what, ": needs a 'data' list of files"));
    }
    *format = spec.contains("format") && spec["format"].is_object() ? spec["format"].value("name", "") : "";
    std::vector<std::string> out;
    for (const auto& p : spec["data"]) {
      if (!p.is_string()) return bad(StrCat(what, ": 'data' holds ", p.dump()));
      fs::path path(p.get<std::string>());
      out.push_back((path.is_absolute() ? path : dir / path).string());
    }
    return out;
  };
  SliceInput in;
  in.layout = "dgl-chunked";
  in.num_nodes = 0;
  for (int64_t c : node_chunks) in.num_nodes += c;
  in.num_nodes_source = StrCat(meta_path, " (num_nodes_per_chunk)");
  if (read.num_nodes >= 0 && read.num_nodes != in.num_nodes) {
    return absl::InvalidArgumentError(StrCat("--num-nodes ", read.num_nodes, " but ", in.num_nodes_source, " sums to ",
                                             in.num_nodes));
  }
  if (!m.contains("edges") || !m["edges"].contains(etype)) return bad(StrCat("'edges' has no entry for ", etype));
  std::string format;
  ASSIGN_OR_RETURN(std::vector<std::string> edge_files, files(m["edges"][etype], StrCat("edges of ", etype), &format));
  if (edge_files.size() != edge_chunks.size()) {
    return bad(StrCat("edges of ", etype, " list ", edge_files.size(), " files but num_edges_per_chunk has ",
                      edge_chunks.size(), " chunks"));
  }
  if (format != "csv" && format != "numpy") return bad(StrCat("edges of ", etype, ": format '", format, "' (read: csv, numpy)"));
  in.edges_source = edge_files[0];
  in.num_edges = 0;
  for (size_t c = 0; c < edge_files.size(); ++c) {
    EdgeFile f{.path = edge_files[c], .form = EdgeFile::Form::kText, .rows = edge_chunks[c]};
    if (format == "numpy") {
      ASSIGN_OR_RETURN(f, OpenEdgeNpy(edge_files[c], "rows"));
      if (f.rows != edge_chunks[c]) {
        return bad(StrCat("edges of ", etype, ": ", edge_files[c], " has ", f.rows,
                          " rows but num_edges_per_chunk says ", edge_chunks[c]));
      }
    }
    AddEdgeFile(&in, std::move(f));
  }
  auto add_fields = [&](const char* key, const std::string& type, std::vector<SliceField>* out,
                        int64_t rows) -> absl::Status {
    if (!m.contains(key) || !m[key].contains(type)) return absl::OkStatus();
    for (const auto& [name, spec] : m[key][type].items()) {
      std::string fmt;
      ASSIGN_OR_RETURN(std::vector<std::string> paths, files(spec, StrCat(key, " ", type, "/", name), &fmt));
      if (fmt != "numpy") return bad(StrCat(key, " ", type, "/", name, ": format '", fmt, "' (read: numpy)"));
      ASSIGN_OR_RETURN(ChunkedArray a, ChunkedArray::Open(paths));
      if (a.rows() != rows) {
        return bad(StrCat(key, " ", type, "/", name, ": ", a.rows(), " rows in its chunks, expected ", rows));
      }
      out->push_back({name, std::move(a)});
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(add_fields("node_data", ntype, &in.node_fields, in.num_nodes));
  RETURN_IF_ERROR(add_fields("edge_data", etype, &in.edge_fields, in.num_edges));
  // "feat" and "label" first, as the other readers give them.
  std::stable_sort(in.node_fields.begin(), in.node_fields.end(), [](const SliceField& a, const SliceField& b) {
    auto rank = [](const std::string& n) { return n == "feat" ? 0 : n == "label" ? 1 : 2; };
    return rank(a.name) < rank(b.name);
  });
  return in;
}

// The typed .npy layout (README "Dataset layouts"): num_nodes.json (types in its order),
// edges/SRC___REL___DST.npy ([e, 2] or [2, e] in type-wise IDs; relations in file-name order),
// node_data/TYPE/NAME.npy, split/TYPE/{train,valid,test}_idx.npy.
absl::StatusOr<SliceInput> OpenTypedNpy(const fs::path& dir, const ReadOptions& read) {
  SliceInput in;
  in.layout = "npy-hetero";
  in.num_nodes_source = (dir / "num_nodes.json").string();
  {
    std::ifstream f(in.num_nodes_source);
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(f, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || j.empty()) {
      return absl::InvalidArgumentError(StrCat(in.num_nodes_source, ": expected a JSON object {\"node type\": count, ...}"));
    }
    for (const auto& [name, count] : j.items()) {
      if (!count.is_number_integer()) {
        return absl::InvalidArgumentError(StrCat(in.num_nodes_source, ": the count of '", name, "' is not an integer"));
      }
      RETURN_IF_ERROR(AddNodeType(&in, name, count.get<int64_t>(), in.num_nodes_source));
    }
  }
  in.num_nodes = in.node_type_offsets.back();
  if (read.num_nodes >= 0 && read.num_nodes != in.num_nodes) {
    return absl::InvalidArgumentError(StrCat("--num-nodes ", read.num_nodes, " but ", in.num_nodes_source, " sums to ", in.num_nodes));
  }
  in.edges_source = (dir / "edges").string();
  std::vector<fs::path> rel_files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "edges", ec)) {
    if (e.path().extension() == ".npy") rel_files.push_back(e.path());
  }
  std::sort(rel_files.begin(), rel_files.end());
  if (rel_files.empty()) return absl::InvalidArgumentError(StrCat(in.edges_source, ": no SRC___REL___DST.npy relation files"));
  in.num_edges = 0;
  for (const fs::path& f : rel_files) {
    // SRC___REL___DST.npy, as OGB names relation folders.
    ASSIGN_OR_RETURN(core::CanonicalEdgeType type,
                     CheckRelation(in, base::StrSplit(f.stem().string(), "___"), StrCat(f.string(), ": name")));
    ASSIGN_OR_RETURN(EdgeFile e, OpenEdgeNpy(f.string(), read.edge_layout));
    in.edge_types.push_back(std::move(type));
    AddEdgeFile(&in, std::move(e));
  }
  in.edge_type_offsets = in.edge_starts;  // one file per relation
  ASSIGN_OR_RETURN(auto field_dirs, TypeFolders(in, in.num_nodes_source, (dir / "node_data").string()));
  for (const auto& [t, folder] : field_dirs) {
    std::vector<SliceField> fields;
    RETURN_IF_ERROR(AddFieldDir(folder, &fields));
    for (SliceField& f : fields) {
      f.node_type = in.node_types[t];
      in.node_fields.push_back(std::move(f));
    }
  }
  // Edge fields: edge_data/SRC___REL___DST/NAME.npy, one row per edge of that relation's file.
  if (std::error_code ec2; fs::is_directory(dir / "edge_data", ec2)) {
    std::vector<fs::path> folders;
    for (const auto& e : fs::directory_iterator(dir / "edge_data", ec2)) {
      if (!e.is_directory()) {
        return absl::InvalidArgumentError(StrCat(e.path().string(), ": edge_data/ holds a folder per relation "
                                                 "(SRC___REL___DST/NAME.npy), not files"));
      }
      folders.push_back(e.path());
    }
    std::sort(folders.begin(), folders.end());
    for (const fs::path& folder : folders) {
      const std::vector<std::string> triplet = base::StrSplit(folder.filename().string(), "___");
      const auto type = triplet.size() != 3 ? in.edge_types.end()
                                            : std::find(in.edge_types.begin(), in.edge_types.end(),
                                                        core::CanonicalEdgeType{triplet[0], triplet[1], triplet[2]});
      if (type == in.edge_types.end()) {
        std::vector<std::string> names;
        for (const auto& t : in.edge_types) names.push_back(t.src + "___" + t.rel + "___" + t.dst);
        return absl::InvalidArgumentError(StrCat(folder.string(), ": not a relation of edges/ (",
                                                 base::StrJoin(names, ", "), ")"));
      }
      std::vector<SliceField> fields;
      RETURN_IF_ERROR(AddFieldDir(folder, &fields));
      for (SliceField& f : fields) {
        f.edge_type = type->ToString();
        in.edge_fields.push_back(std::move(f));
      }
    }
  }
  ASSIGN_OR_RETURN(auto split_dirs, TypeFolders(in, in.num_nodes_source, (dir / "split").string()));
  const char* split_names[3] = {"train_idx.npy", "valid_idx.npy", "test_idx.npy"};
  for (const auto& [t, folder] : split_dirs) {
    for (int i = 0; i < 3; ++i) {
      if (std::string p = IfExists(fs::path(folder) / split_names[i]); !p.empty()) {
        in.split_files[i].push_back({p, t});
        in.has_split = true;
      }
    }
  }
  return in;
}

// Rows [lo, hi) of edge file `f` into `out` as (src, dst) pairs; mapped pages are let go after.
absl::Status ReadEdgeRows(const EdgeFile& f, int64_t lo, int64_t hi, int64_t* out) {
  if (f.form == EdgeFile::Form::kText) {
    ASSIGN_OR_RETURN(NpyArray pairs, ReadNodePairs(f.path, 0));
    if (f.rows >= 0 && pairs.rows() != f.rows) {
      return absl::InvalidArgumentError(StrCat(f.path, ": has ", pairs.rows(),
                                               " edges but metadata.json's num_edges_per_chunk says ", f.rows));
    }
    std::memcpy(out, pairs.data_as<int64_t>() + 2 * lo, (hi - lo) * 2 * sizeof(int64_t));
    return absl::OkStatus();
  }
  const DType dt = f.npy.dtype();
  const size_t es = core::DTypeSize(dt);
  const char* base = static_cast<const char*>(f.npy.data());
  if (f.form == EdgeFile::Form::kRows) {
    const char* p = base + 2 * lo * es;
    if (dt == DType::kInt64) {
      std::memcpy(out, p, (hi - lo) * 2 * sizeof(int64_t));
    } else {
      for (int64_t i = 0; i < 2 * (hi - lo); ++i) out[i] = IntAt(p, dt, i);
    }
    f.npy.DropPages(2 * lo * es, 2 * hi * es);
    return absl::OkStatus();
  }
  // [2, e]: one row of sources, one of destinations.
  for (int side = 0; side < 2; ++side) {
    const char* p = base + (side * f.rows + lo) * es;
    for (int64_t i = 0; i < hi - lo; ++i) out[2 * i + side] = IntAt(p, dt, i);
    f.npy.DropPages((side * f.rows + lo) * es, (side * f.rows + hi) * es);
  }
  return absl::OkStatus();
}

}  // namespace

std::string SliceInput::EdgeWhere(int64_t row) const {
  const size_t c = std::upper_bound(edge_starts.begin(), edge_starts.end() - 1, row) - edge_starts.begin() - 1;
  return StrCat(edge_files[c].path, " row ", row - edge_starts[c]);
}

absl::StatusOr<SliceInput> OpenSliceInput(const ReadOptions& read) {
  const fs::path dir(read.input_dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return absl::NotFoundError(StrCat("--input ", read.input_dir, ": not a readable folder"));
  absl::StatusOr<SliceInput> in;
  if (fs::exists(dir / "metadata.json", ec)) {
    in = OpenDglChunked(dir, read);
  } else if (fs::exists(dir / "num_nodes.json", ec)) {
    in = OpenTypedNpy(dir, read);
  } else if (fs::exists(dir / "edges.npy", ec) ||
             std::any_of(std::begin(kPlainTextEdgeFiles), std::end(kPlainTextEdgeFiles),
                         [&](const char* f) { return fs::exists(dir / f, ec); })) {
    in = OpenPlain(dir, read);
  } else {
    return absl::NotFoundError(StrCat("--input ", read.input_dir,
                                      ": none of num_nodes.json (the typed .npy layout), metadata.json (DGL's chunked "
                                      "format), edges.npy / edges.csv / edges.tsv (the plain layout)"));
  }
  if (!in.ok()) return in.status();
  in->name = fs::absolute(dir).lexically_normal().filename().string();
  if (in->name.empty()) in->name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  in->inputs.push_back(read.input_dir);
  for (const EdgeFile& f : in->edge_files) in->inputs.push_back(f.path);
  for (const auto* fields : {&in->node_fields, &in->edge_fields}) {
    for (const SliceField& f : *fields) {
      for (const std::string& p : f.data.paths()) in->inputs.push_back(p);
    }
  }
  for (const auto& files : in->split_files) {
    for (const SplitFile& f : files) in->inputs.push_back(f.path);
  }
  if (in->num_nodes >= 0) {
    for (const SliceField& f : in->node_fields) {
      const int t = f.node_type.empty() ? -1 : in->NodeTypeIndex(f.node_type);
      const int64_t rows = t < 0 ? in->num_nodes : in->TypeCount(t);
      if (f.data.rows() != rows) {
        return absl::InvalidArgumentError(StrCat(f.data.first_path(), ": node field '", f.name, "' has ", f.data.rows(),
                                                 " rows but ", t < 0 ? "the graph has " : "there are ", rows,
                                                 t < 0 ? StrCat(" nodes (from ", in->num_nodes_source, ")")
                                                       : StrCat(" ", f.node_type, " nodes")));
      }
    }
  }
  for (const SliceField& f : in->edge_fields) {
    // A typed field has a row per edge of its relation (its file under edges/).
    int64_t rows = in->num_edges;
    std::string source = in->edges_source;
    for (size_t r = 0; r < in->edge_types.size() && !f.edge_type.empty(); ++r) {
      if (in->edge_types[r].ToString() != f.edge_type) continue;
      rows = in->edge_type_offsets[r + 1] - in->edge_type_offsets[r];
      source = in->edge_files[r].path;
    }
    if (in->sliceable() && f.data.rows() != rows) {
      return absl::InvalidArgumentError(StrCat(f.data.first_path(), ": edge field '", f.name, "' has ", f.data.rows(),
                                               " rows but ", source, " has ", rows, " edges"));
    }
  }
  return in;
}

absl::StatusOr<std::vector<int64_t>> ReadEdgeSlice(const SliceInput& in, int64_t begin, int64_t end) {
  if (!in.sliceable()) {
    return absl::InvalidArgumentError(StrCat(in.edges_source, ": text edges of unknown count cannot be read in slices"));
  }
  std::vector<int64_t> out(2 * (end - begin));
  const std::vector<int64_t>& at = in.edge_starts;
  for (size_t c = 0; c + 1 < at.size(); ++c) {
    const int64_t lo = std::max(begin, at[c]), hi = std::min(end, at[c + 1]);
    if (lo >= hi) continue;
    RETURN_IF_ERROR(ReadEdgeRows(in.edge_files[c], lo - at[c], hi - at[c], out.data() + 2 * (lo - begin)));
  }
  if (!in.typed()) return out;
  // Relation files hold type-wise IDs: checked against their types' counts, then offset.
  std::vector<std::array<int, 2>> ends;  // per relation: its source and destination node types
  for (const core::CanonicalEdgeType& rel : in.edge_types) ends.push_back({in.NodeTypeIndex(rel.src), in.NodeTypeIndex(rel.dst)});
  for (int64_t i = 0; i < end - begin; ++i) {
    const std::array<int, 2>& rel = ends[in.EdgeTypeOf(begin + i)];
    for (int side = 0; side < 2; ++side) {
      const int t = rel[side];
      const int64_t id = out[2 * i + side], count = in.TypeCount(t);
      if (id < 0 || id >= count) {
        return absl::InvalidArgumentError(StrCat(in.EdgeWhere(begin + i), ": ", side == 0 ? "src " : "dst ", id,
                                                 " is outside [0, ", count, ") (the ", in.node_types[t], " nodes)"));
      }
      out[2 * i + side] = id + in.node_type_offsets[t];
    }
  }
  return out;
}

}  // namespace fanout::partition

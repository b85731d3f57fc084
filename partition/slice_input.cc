#include "partition/slice_input.h"

#include <algorithm>
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
  std::vector<char> raw((end - begin) * row_bytes_);
  CopyRows(begin, end, raw.data());
  std::vector<int64_t> out(end - begin);
  const size_t es = core::DTypeSize(dtype_);
  for (int64_t i = 0; i < end - begin; ++i) {
    const char* p = raw.data() + i * row_bytes_ + column * es;
    switch (dtype_) {
      case DType::kInt64: std::memcpy(&out[i], p, 8); break;
      case DType::kInt32: { int32_t v; std::memcpy(&v, p, 4); out[i] = v; break; }
      case DType::kInt16: { int16_t v; std::memcpy(&v, p, 2); out[i] = v; break; }
      case DType::kUInt8: out[i] = static_cast<uint8_t>(*p); break;
      default:
        return absl::InvalidArgumentError(StrCat(first_path(), ": expected an integer array, found ",
                                                 core::DTypeName(dtype_)));
    }
  }
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
  const std::string edges = IfExists(dir / "edges.npy");
  if (edges.empty()) {
    return absl::InvalidArgumentError(
        StrCat("--input ", read.input_dir, ": --distributed reads edges.npy (the plain .npy layout) or DGL's "
               "chunked format (metadata.json); text edges are read by fanout-partition without --distributed "
               "(docs/partitioning.md says how to convert)"));
  }
  in.edges_source = edges;
  ASSIGN_OR_RETURN(in.edges, ChunkedArray::Open({edges}));
  const std::vector<int64_t>& rs = in.edges.row_shape();
  const bool rows = rs.size() == 1 && rs[0] == 2, columns = rs.size() == 1 && in.edges.rows() == 2;
  if (read.edge_layout == "columns" || (read.edge_layout == "auto" && !rows && columns)) {
    if (!columns) return absl::InvalidArgumentError(StrCat(edges, ": --edge-layout columns expects a [2, E] array"));
    in.edges_columns = true;
    in.num_edges = rs[0];
  } else {
    if (!rows) {
      return absl::InvalidArgumentError(StrCat(edges, ": expected an [E, 2] array of (src, dst) or PyG's [2, E]"));
    }
    in.num_edges = in.edges.rows();
  }
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
      return bad(StrCat("'", key, "' must list exactly one type (--distributed reads one node and one edge type; "
                        "typed graphs go through fanout-partition without --distributed)"));
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
  in.edges_source = edge_files[0];
  in.num_edges = 0;
  for (int64_t c : edge_chunks) in.num_edges += c;
  if (format == "csv") {
    in.edge_text_files = edge_files;
    in.edge_text_starts.push_back(0);
    for (int64_t c : edge_chunks) in.edge_text_starts.push_back(in.edge_text_starts.back() + c);
  } else if (format == "numpy") {
    ASSIGN_OR_RETURN(in.edges, ChunkedArray::Open(edge_files));
    if (in.edges.row_shape() != std::vector<int64_t>{2} || in.edges.rows() != in.num_edges) {
      return bad(StrCat("edges of ", etype, ": expected [e, 2] chunks with ", in.num_edges, " rows in all"));
    }
  } else {
    return bad(StrCat("edges of ", etype, ": format '", format, "' (read: csv, numpy)"));
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
// edges/SRC___REL___DST.npy ([e, 2], type-wise IDs; relations in file-name order), node_data/TYPE/
// NAME.npy, split/TYPE/{train,valid,test}_idx.npy, as partition/readers.cc reads it.
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
    in.node_type_offsets.push_back(0);
    for (const auto& [name, count] : j.items()) {
      if (!count.is_number_integer() || count.get<int64_t>() < 0 || !core::IsTypeName(name) || in.NodeTypeIndex(name) >= 0) {
        return absl::InvalidArgumentError(StrCat(in.num_nodes_source, ": '", name, "' needs a type name listed once with a count >= 0"));
      }
      in.node_types.push_back(name);
      in.node_type_offsets.push_back(in.node_type_offsets.back() + count.get<int64_t>());
    }
  }
  in.num_nodes = in.node_type_offsets.back();
  if (read.num_nodes >= 0 && read.num_nodes != in.num_nodes) {
    return absl::InvalidArgumentError(StrCat("--num-nodes ", read.num_nodes, " but ", in.num_nodes_source, " sums to ", in.num_nodes));
  }
  std::vector<fs::path> rel_files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "edges", ec)) {
    if (e.path().extension() == ".npy") rel_files.push_back(e.path());
  }
  std::sort(rel_files.begin(), rel_files.end());
  if (rel_files.empty()) return absl::InvalidArgumentError(StrCat((dir / "edges").string(), ": no SRC___REL___DST.npy relation files"));
  std::vector<std::string> paths;
  for (const fs::path& f : rel_files) {
    const std::vector<std::string> t = base::StrSplit(f.stem().string(), "___");
    if (t.size() != 3 || in.NodeTypeIndex(t[0]) < 0 || in.NodeTypeIndex(t[2]) < 0 || !core::IsTypeName(t[1])) {
      return absl::InvalidArgumentError(StrCat(f.string(), ": name must be SRC___REL___DST with node types of ",
                                               in.num_nodes_source));
    }
    in.edge_types.push_back({t[0], t[1], t[2]});
    in.edge_type_ends.push_back({in.NodeTypeIndex(t[0]), in.NodeTypeIndex(t[2])});
    paths.push_back(f.string());
  }
  ASSIGN_OR_RETURN(in.edges, ChunkedArray::Open(paths));
  if (in.edges.row_shape() != std::vector<int64_t>{2}) {
    return absl::InvalidArgumentError(StrCat(paths[0], ": --distributed reads relations as [e, 2] arrays"));
  }
  in.edge_type_offsets = in.edges.starts();  // one chunk per relation
  in.num_edges = in.edges.rows();
  in.edges_source = (dir / "edges").string();
  auto folders = [&](const fs::path& root) -> absl::StatusOr<std::vector<std::pair<int, fs::path>>> {
    std::vector<std::pair<int, fs::path>> out;
    std::error_code e2;
    if (!fs::is_directory(root, e2)) return out;
    for (const auto& entry : fs::directory_iterator(root, e2)) {
      const int t = in.NodeTypeIndex(entry.path().filename().string());
      if (t < 0 || !entry.is_directory()) {
        return absl::InvalidArgumentError(StrCat(entry.path().string(), ": not a node type of ", in.num_nodes_source));
      }
      out.push_back({t, entry.path()});
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  ASSIGN_OR_RETURN(auto field_dirs, folders(dir / "node_data"));
  for (const auto& [t, folder] : field_dirs) {
    std::vector<SliceField> fields;
    RETURN_IF_ERROR(AddFieldDir(folder, &fields));
    for (SliceField& f : fields) {
      f.node_type = in.node_types[t];
      in.node_fields.push_back(std::move(f));
    }
  }
  ASSIGN_OR_RETURN(auto split_dirs, folders(dir / "split"));
  const char* split_names[3] = {"train_idx.npy", "valid_idx.npy", "test_idx.npy"};
  for (const auto& [t, folder] : split_dirs) {
    for (int i = 0; i < 3; ++i) {
      if (std::string p = IfExists(folder / split_names[i]); !p.empty()) {
        in.split_files[i].push_back({p, t});
        in.has_split = true;
      }
    }
  }
  return in;
}

}  // namespace

int SliceInput::NodeTypeIndex(const std::string& name) const {
  const auto at = std::find(node_types.begin(), node_types.end(), name);
  return at == node_types.end() ? -1 : static_cast<int>(at - node_types.begin());
}

int SliceInput::NodeTypeOf(int64_t v) const {
  if (!typed()) return 0;
  return static_cast<int>(std::upper_bound(node_type_offsets.begin(), node_type_offsets.end(), v) -
                          node_type_offsets.begin()) - 1;
}

int SliceInput::EdgeTypeOf(int64_t row) const {
  if (!typed()) return 0;
  return static_cast<int>(std::upper_bound(edge_type_offsets.begin(), edge_type_offsets.end(), row) -
                          edge_type_offsets.begin()) - 1;
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
  } else if (fs::exists(dir / "edges.npy", ec)) {
    in = OpenPlain(dir, read);
  } else {
    return absl::InvalidArgumentError(StrCat(
        "--input ", read.input_dir, ": --distributed reads the plain .npy layout (edges.npy), the typed .npy "
        "layout (num_nodes.json) or DGL's chunked format (metadata.json); for OGB's csv.gz and text layouts use "
        "fanout-partition without --distributed, or convert (docs/partitioning.md)"));
  }
  if (!in.ok()) return in.status();
  in->name = fs::absolute(dir).lexically_normal().filename().string();
  if (in->name.empty()) in->name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  in->inputs.push_back(read.input_dir);
  for (const std::string& p : in->edges.paths()) in->inputs.push_back(p);
  for (const std::string& p : in->edge_text_files) in->inputs.push_back(p);
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
      if (!f.node_type.empty()) {
        const int t = in->NodeTypeIndex(f.node_type);
        const int64_t rows = in->node_type_offsets[t + 1] - in->node_type_offsets[t];
        if (f.data.rows() != rows) {
          return absl::InvalidArgumentError(StrCat(f.data.first_path(), ": node field '", f.name, "' has ", f.data.rows(),
                                                   " rows but there are ", rows, " ", f.node_type, " nodes"));
        }
        continue;
      }
      if (f.data.rows() != in->num_nodes) {
        return absl::InvalidArgumentError(StrCat(f.data.first_path(), ": node field '", f.name, "' has ",
                                                 f.data.rows(), " rows but the graph has ", in->num_nodes,
                                                 " nodes (from ", in->num_nodes_source, ")"));
      }
    }
  }
  for (const SliceField& f : in->edge_fields) {
    if (f.data.rows() != in->num_edges) {
      return absl::InvalidArgumentError(StrCat(f.data.first_path(), ": edge field '", f.name, "' has ", f.data.rows(),
                                               " rows but ", in->edges_source, " has ", in->num_edges, " edges"));
    }
  }
  return in;
}

absl::StatusOr<std::vector<int64_t>> ReadEdgeSlice(const SliceInput& in, int64_t begin, int64_t end) {
  std::vector<int64_t> out(2 * (end - begin));
  if (!in.edge_text_files.empty()) {
    // Text chunks: parse each chunk the slice overlaps, keep the rows inside the slice.
    const std::vector<int64_t>& at = in.edge_text_starts;
    for (size_t c = 0; c + 1 < at.size(); ++c) {
      const int64_t lo = std::max(begin, at[c]), hi = std::min(end, at[c + 1]);
      if (lo >= hi) continue;
      ASSIGN_OR_RETURN(NpyArray pairs, ReadNodePairs(in.edge_text_files[c], 0));
      if (pairs.rows() != at[c + 1] - at[c]) {
        return absl::InvalidArgumentError(StrCat(in.edge_text_files[c], ": has ", pairs.rows(),
                                                 " edges but metadata.json's num_edges_per_chunk says ",
                                                 at[c + 1] - at[c]));
      }
      std::memcpy(out.data() + 2 * (lo - begin), pairs.data_as<int64_t>() + 2 * (lo - at[c]),
                  (hi - lo) * 2 * sizeof(int64_t));
    }
    return out;
  }
  if (in.typed()) {
    // Relation chunks in type-wise IDs: checked against their types' counts, then offset.
    ASSIGN_OR_RETURN(std::vector<int64_t> s, in.edges.ReadInts(begin, end, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> d, in.edges.ReadInts(begin, end, 1));
    for (int64_t i = 0; i < end - begin; ++i) {
      const auto [src_type, dst_type] = in.edge_type_ends[in.EdgeTypeOf(begin + i)];
      for (int side = 0; side < 2; ++side) {
        const int ti = side == 0 ? src_type : dst_type;
        const int64_t id = side == 0 ? s[i] : d[i], count = in.node_type_offsets[ti + 1] - in.node_type_offsets[ti];
        if (id < 0 || id >= count) {
          return absl::InvalidArgumentError(StrCat(in.edges.Where(begin + i), ": ", side == 0 ? "src " : "dst ", id,
                                                   " is outside [0, ", count, ") (the ", in.node_types[ti], " nodes)"));
        }
        out[2 * i + side] = id + in.node_type_offsets[ti];
      }
    }
    return out;
  }
  if (!in.edges_columns && in.edges.dtype() == DType::kInt64) {
    in.edges.CopyRows(begin, end, reinterpret_cast<char*>(out.data()));
    return out;
  }
  if (!in.edges_columns) {
    ASSIGN_OR_RETURN(std::vector<int64_t> s, in.edges.ReadInts(begin, end, 0));
    ASSIGN_OR_RETURN(std::vector<int64_t> d, in.edges.ReadInts(begin, end, 1));
    for (int64_t i = 0; i < end - begin; ++i) out[2 * i] = s[i], out[2 * i + 1] = d[i];
    return out;
  }
  // [2, E]: one row of sources, one of destinations; read the slice of each as raw integers.
  ASSIGN_OR_RETURN(NpyArray a, NpyArray::Map(in.edges.first_path()));
  const size_t es = core::DTypeSize(a.dtype());
  const int64_t e = in.num_edges;
  for (int side = 0; side < 2; ++side) {
    const char* base = static_cast<const char*>(a.data()) + (side * e + begin) * es;
    for (int64_t i = 0; i < end - begin; ++i) {
      int64_t v;
      switch (a.dtype()) {
        case DType::kInt64: std::memcpy(&v, base + i * 8, 8); break;
        case DType::kInt32: { int32_t x; std::memcpy(&x, base + i * 4, 4); v = x; break; }
        default:
          return absl::InvalidArgumentError(StrCat(in.edges_source, ": edges must be int64 or int32, found ",
                                                   core::DTypeName(a.dtype())));
      }
      out[2 * i + side] = v;
    }
    a.DropPages((side * e + begin) * es, (side * e + end) * es);
  }
  return out;
}

}  // namespace fanout::partition

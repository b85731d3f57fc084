#include "partition/dataset.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/strings.h"

namespace fanout::partition {

using base::StrCat;

const Field* Dataset::FindNodeField(const std::string& n) const {
  for (const auto& f : node_fields) {
    if (f.name == n && f.node_type.empty()) return &f;
  }
  return nullptr;
}

namespace {
int IndexIn(const std::vector<int64_t>& offsets, int64_t x) {
  if (offsets.size() < 2) return 0;
  return static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), x) - offsets.begin()) - 1;
}
}  // namespace

int GraphTypes::NodeTypeOf(int64_t v) const { return IndexIn(node_type_offsets, v); }
int GraphTypes::EdgeTypeOf(int64_t row) const { return IndexIn(edge_type_offsets, row); }

int GraphTypes::NodeTypeIndex(const std::string& name) const {
  for (size_t t = 0; t < node_types.size(); ++t) {
    if (node_types[t] == name) return static_cast<int>(t);
  }
  return -1;
}

absl::Status AddNodeType(GraphTypes* g, const std::string& name, int64_t count, const std::string& source) {
  if (!core::IsTypeName(name)) {
    return absl::InvalidArgumentError(
        StrCat(source, ": '", name, "' is not a type name (letters, digits, '_', '-', '.')"));
  }
  if (g->NodeTypeIndex(name) >= 0) {
    return absl::InvalidArgumentError(StrCat(source, ": node type '", name, "' is listed twice"));
  }
  if (count < 0) return absl::InvalidArgumentError(StrCat(source, ": node type '", name, "' has a negative count"));
  if (g->node_type_offsets.empty()) g->node_type_offsets.push_back(0);
  g->node_types.push_back(name);
  g->node_type_offsets.push_back(g->node_type_offsets.back() + count);
  return absl::OkStatus();
}

absl::StatusOr<core::CanonicalEdgeType> CheckRelation(const GraphTypes& g, const std::vector<std::string>& triplet,
                                                      const std::string& source) {
  if (triplet.size() != 3) return absl::InvalidArgumentError(StrCat(source, ": expected src_type,relation,dst_type"));
  const std::string name = base::StrJoin(triplet, ",");
  for (const std::string* end : {&triplet[0], &triplet[2]}) {
    if (g.NodeTypeIndex(*end) < 0) {
      return absl::InvalidArgumentError(StrCat(source, " (", name, "): node type '", *end,
                                               "' is not one of the graph's (", base::StrJoin(g.node_types, ", "), ")"));
    }
  }
  if (!core::IsTypeName(triplet[1])) {
    return absl::InvalidArgumentError(StrCat(source, " (", name, "): '", triplet[1], "' is not a relation name"));
  }
  core::CanonicalEdgeType t{triplet[0], triplet[1], triplet[2]};
  if (std::find(g.edge_types.begin(), g.edge_types.end(), t) != g.edge_types.end()) {
    return absl::InvalidArgumentError(StrCat(source, ": relation ", name, " is listed twice"));
  }
  return t;
}

absl::StatusOr<std::vector<std::pair<int, std::string>>> TypeFolders(const GraphTypes& g, const std::string& types_source,
                                                                     const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::pair<int, std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string type = entry.path().filename().string();
    const int t = g.NodeTypeIndex(type);
    if (t < 0 || !entry.is_directory()) {
      return absl::InvalidArgumentError(StrCat(entry.path().string(), ": '", type, "' is not a node type of ",
                                               types_source, " (", base::StrJoin(g.node_types, ", "), ")"));
    }
    out.push_back({t, entry.path().string()});
  }
  std::sort(out.begin(), out.end());
  return out;
}

int64_t Dataset::FieldRows(const Field& f) const {
  if (f.node_type.empty()) return num_nodes;
  const int t = NodeTypeIndex(f.node_type);
  return t < 0 ? -1 : node_type_offsets[t + 1] - node_type_offsets[t];
}

int Dataset::EdgeTypeIndex(const std::string& canonical) const {
  absl::StatusOr<int> r = core::FindEdgeType(edge_types, canonical);
  return r.ok() ? *r : -1;
}

int64_t Dataset::EdgeFieldRows(const Field& f) const {
  if (f.edge_type.empty()) return num_edges();
  const int r = EdgeTypeIndex(f.edge_type);
  return r < 0 ? -1 : edge_type_offsets[r + 1] - edge_type_offsets[r];
}

namespace {

// The typed graph's own invariants: types that tile the IDs, edges between the right types.
absl::Status ValidateTypes(const Dataset& d) {
  const size_t T = d.node_types.size(), R = d.edge_types.size();
  if (d.node_type_offsets.size() != T + 1 || d.node_type_offsets.front() != 0 ||
      d.node_type_offsets.back() != d.num_nodes || !std::is_sorted(d.node_type_offsets.begin(), d.node_type_offsets.end())) {
    return absl::InvalidArgumentError(StrCat(d.num_nodes_source, ": node type counts do not add up to ", d.num_nodes));
  }
  if (R == 0 || d.edge_type_offsets.size() != R + 1 || d.edge_type_offsets.front() != 0 ||
      d.edge_type_offsets.back() != d.num_edges() ||
      !std::is_sorted(d.edge_type_offsets.begin(), d.edge_type_offsets.end())) {
    return absl::InvalidArgumentError(StrCat(d.edges_source, ": relation edge counts do not add up to ", d.num_edges()));
  }
  const int64_t* e = d.edges.data_as<int64_t>();
  for (size_t r = 0; r < R; ++r) {
    const int s = d.NodeTypeIndex(d.edge_types[r].src), t = d.NodeTypeIndex(d.edge_types[r].dst);
    if (s < 0 || t < 0) {
      return absl::InvalidArgumentError(StrCat("relation ", d.edge_types[r].ToString(), " names a node type the graph does not have (",
                                               base::StrJoin(d.node_types, ", "), ")"));
    }
    for (int64_t i = d.edge_type_offsets[r]; i < d.edge_type_offsets[r + 1]; ++i) {
      if (d.NodeTypeOf(e[2 * i]) != s || d.NodeTypeOf(e[2 * i + 1]) != t) {
        return absl::InvalidArgumentError(StrCat(d.edges_source, ": edge ", i, " of relation ", d.edge_types[r].ToString(),
                                                 " joins nodes of other types"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateEdgeFields(const Dataset& d) {
  for (const auto& f : d.edge_fields) {
    // A typed graph's edge fields are per relation (edge_data/SRC___REL___DST/NAME.npy).
    if (d.typed() && f.edge_type.empty()) {
      return absl::InvalidArgumentError(StrCat(f.data.path().empty() ? f.name : f.data.path(), ": edge field '", f.name,
                                               "' of a typed graph must say its relation (edge_data/SRC___REL___DST/",
                                               f.name, ".npy)"));
    }
    const int64_t want = d.EdgeFieldRows(f);
    if (want < 0) {
      return absl::InvalidArgumentError(StrCat(f.data.path(), ": edge field '", f.name, "' is of relation '", f.edge_type,
                                               "', which the graph does not have"));
    }
    if (f.data.shape().empty() || f.data.rows() != want) {
      return absl::InvalidArgumentError(StrCat(f.data.path().empty() ? f.name : f.data.path(), ": edge field '", f.name, "' has ",
                                               f.data.shape().empty() ? 0 : f.data.rows(), " rows but the graph has ",
                                               want, f.edge_type.empty() ? "" : StrCat(" ", f.edge_type), " edges"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateDataset(const Dataset& d) {
  if (d.num_nodes <= 0) return absl::InvalidArgumentError("the graph has no nodes");
  if (d.edges.dtype() != core::DType::kInt64 || d.edges.shape().size() != 2 ||
      d.edges.shape()[1] != 2) {
    return absl::InvalidArgumentError(StrCat(d.edges_source, ": edges must be an int64 [E, 2] array"));
  }
  const int64_t* e = d.edges.data_as<int64_t>();
  for (int64_t i = 0; i < 2 * d.num_edges(); ++i) {
    if (e[i] < 0 || e[i] >= d.num_nodes) {
      return absl::InvalidArgumentError(StrCat(
          d.edges_source, " row ", i / 2, ": ", (i % 2 == 0 ? "src " : "dst "), e[i],
          " is outside [0, ", d.num_nodes, ") (num_nodes, from ", d.num_nodes_source, ")"));
    }
  }
  if (d.typed()) RETURN_IF_ERROR(ValidateTypes(d));
  for (const auto& f : d.node_fields) {
    const int64_t want = d.FieldRows(f);
    if (want < 0) {
      return absl::InvalidArgumentError(StrCat(f.data.path(), ": node field '", f.name, "' is of node type '", f.node_type,
                                               "', which the graph does not have"));
    }
    if (f.data.shape().empty() || f.data.rows() != want) {
      return absl::InvalidArgumentError(StrCat(f.data.path().empty() ? f.name : f.data.path(), ": node field '", f.name, "' has ",
                                               f.data.shape().empty() ? 0 : f.data.rows(), " rows but the graph has ",
                                               want, f.node_type.empty() ? "" : StrCat(" ", f.node_type), " nodes (from ",
                                               d.num_nodes_source, ")"));
    }
  }
  return ValidateEdgeFields(d);
}

namespace {

template <typename T>
void ToDouble(const void* data, int64_t n, std::vector<double>* out) {
  const T* p = static_cast<const T*>(data);
  out->resize(n);
  for (int64_t i = 0; i < n; ++i) (*out)[i] = static_cast<double>(p[i]);
}

// Normalises one field in place (see NormalizeNodeFeatures).
absl::Status NormalizeField(Field* f, const std::string& field) {
  const core::NpyArray& a = f->data;
  const int64_t n = a.num_elements(), rows = a.rows(), cols = a.row_elems();
  std::vector<double> v;
  switch (a.dtype()) {
    case core::DType::kInt8: ToDouble<int8_t>(a.data(), n, &v); break;
    case core::DType::kUInt8: ToDouble<uint8_t>(a.data(), n, &v); break;
    case core::DType::kInt16: ToDouble<int16_t>(a.data(), n, &v); break;
    case core::DType::kInt32: ToDouble<int32_t>(a.data(), n, &v); break;
    case core::DType::kInt64: ToDouble<int64_t>(a.data(), n, &v); break;
    case core::DType::kFloat32: ToDouble<float>(a.data(), n, &v); break;
    case core::DType::kFloat64: ToDouble<double>(a.data(), n, &v); break;
    default:
      return absl::InvalidArgumentError("--normalize-features: " + a.path() + ": node field '" + field + "' is " +
                                        std::string(core::DTypeName(a.dtype())) + ", not a number type it can normalise");
  }
  double lo = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i])) {
      return absl::InvalidArgumentError("--normalize-features: " + a.path() + ": row " + std::to_string(i / cols) +
                                        " of node field '" + field + "' holds a NaN or infinity");
    }
    lo = i == 0 ? v[i] : std::min(lo, v[i]);
  }
  core::NpyArray out = core::NpyArray::Owned(core::DType::kFloat32, a.shape());
  float* o = out.mutable_data_as<float>();
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += v[r * cols + c] - lo;
    const double scale = 1.0 / std::max(sum, 1.0);
    for (int64_t c = 0; c < cols; ++c) o[r * cols + c] = static_cast<float>((v[r * cols + c] - lo) * scale);
  }
  f->data = std::move(out);
  return absl::OkStatus();
}

}  // namespace

absl::Status NormalizeNodeFeatures(Dataset* d, const std::string& field) {
  // On a typed graph, every type's field of that name (each normalised on its own).
  bool found = false;
  for (Field& x : d->node_fields) {
    if (x.name != field) continue;
    found = true;
    RETURN_IF_ERROR(NormalizeField(&x, field));
  }
  if (!found) return absl::InvalidArgumentError("--normalize-features: the dataset has no node field '" + field + "'");
  return absl::OkStatus();
}

absl::Status CompressNodeFeatures(Dataset* d, core::FeatureStorage to, const std::string& field) {
  bool found = false;
  for (Field& x : d->node_fields) {
    if (x.name != field) continue;
    found = true;
    const core::NpyArray& a = x.data;
    if (a.shape().size() != 2 || a.dtype() == core::DType::kBool) {
      return absl::InvalidArgumentError(base::StrCat("--feature-dtype: ", a.path(), ": node field '", field, "' is ",
                                                     core::DTypeName(a.dtype()), " with shape [",
                                                     base::StrJoin(a.shape(), ", "),
                                                     "]; features to compress are numbers, one row of values per node"));
    }
    const int64_t rows = a.rows(), dim = a.row_elems();
    core::NpyArray out = core::NpyArray::Owned(to.dtype, {rows, to.stored_elems(dim)});
    const int64_t bad = core::EncodeRows(to, a.dtype(), a.data(), rows, dim, out.mutable_data());
    if (bad >= 0) {
      return absl::InvalidArgumentError(base::StrCat("--feature-dtype int8: ", a.path(), ": row ", bad, " of node field '",
                                                     field, "' holds a NaN or infinity (int8 rows span their finite "
                                                     "minimum to maximum)"));
    }
    x.data = std::move(out);
    x.codec = to.codec;
  }
  if (!found) return absl::InvalidArgumentError("--feature-dtype: the dataset has no node field '" + field + "'");
  return absl::OkStatus();
}

}  // namespace fanout::partition

#include "partition/dataset.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/strings.h"

namespace fanout::partition {

using core::StrCat;

const Field* Dataset::FindNodeField(const std::string& n) const {
  for (const auto& f : node_fields) {
    if (f.name == n) return &f;
  }
  return nullptr;
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
  for (const auto& f : d.node_fields) {
    if (f.data.shape().empty() || f.data.rows() != d.num_nodes) {
      return absl::InvalidArgumentError(StrCat(f.data.path().empty() ? f.name : f.data.path(), ": node field '", f.name, "' has ",
                                               f.data.shape().empty() ? 0 : f.data.rows(),
                                               " rows but the graph has ", d.num_nodes, " nodes (from ",
                                               d.num_nodes_source, ")"));
    }
  }
  for (const auto& f : d.edge_fields) {
    if (f.data.shape().empty() || f.data.rows() != d.num_edges()) {
      return absl::InvalidArgumentError(StrCat(f.data.path().empty() ? f.name : f.data.path(), ": edge field '", f.name, "' has ",
                                               f.data.shape().empty() ? 0 : f.data.rows(),
                                               " rows but the graph has ", d.num_edges(), " edges"));
    }
  }
  return absl::OkStatus();
}

namespace {

template <typename T>
void ToDouble(const void* data, int64_t n, std::vector<double>* out) {
  const T* p = static_cast<const T*>(data);
  out->resize(n);
  for (int64_t i = 0; i < n; ++i) (*out)[i] = static_cast<double>(p[i]);
}

}  // namespace

absl::Status NormalizeNodeFeatures(Dataset* d, const std::string& field) {
  Field* f = nullptr;
  for (Field& x : d->node_fields) {
    if (x.name == field) f = &x;
  }
  if (f == nullptr) {
    return absl::InvalidArgumentError("--normalize-features: the dataset has no node field '" + field + "'");
  }
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

}  // namespace fanout::partition

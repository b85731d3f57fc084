#include "partition/dataset.h"

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

}  // namespace fanout::partition

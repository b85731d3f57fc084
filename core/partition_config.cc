#include "core/partition_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/shape.h"
#include "core/strings.h"
#include "core/status.h"

namespace fanout::core {
namespace {

using nlohmann::json;

constexpr const char* kNodeType = "_N";
constexpr const char* kEdgeType = "_N:_E:_N";

json Ranges(const std::vector<int64_t>& bounds) {
  json r = json::array();
  for (size_t k = 0; k + 1 < bounds.size(); ++k) r.push_back({bounds[k], bounds[k + 1]});
  return r;
}

json Fields(const std::vector<FieldSchema>& fields) {
  json a = json::array();
  for (const auto& f : fields) {
    a.push_back({{"name", f.name}, {"dtype", std::string(DTypeName(f.dtype))}, {"shape", f.row_shape}});
  }
  return a;
}

// The integer at `key` (or `fallback` when absent): nlohmann's get<int>() on a JSON float such as
// 1e30 is an out-of-range float-to-integer conversion, undefined behaviour.
template <typename T>
T IntAt(const json& j, const char* key, std::optional<T> fallback = std::nullopt) {
  if (fallback.has_value() && !j.contains(key)) return *fallback;
  const json& v = j.at(key);
  if (!v.is_number_integer()) {
    throw json::type_error::create(302, StrCat("'", key, "' must be an integer"), &v);
  }
  return v.get<T>();
}

absl::StatusOr<std::vector<int64_t>> ParseRanges(const json& j, const std::string& key, int k) {
  if (!j.is_array() || static_cast<int>(j.size()) != k) {
    return absl::InvalidArgumentError(StrCat(key, " must list ", k, " [start, end) ranges"));
  }
  std::vector<int64_t> bounds{0};
  for (int p = 0; p < k; ++p) {
    const json& r = j[p];
    if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() || !r[1].is_number_integer()) {
      return absl::InvalidArgumentError(StrCat(key, "[", p, "] is not an [start, end] pair"));
    }
    if (r[0].get<int64_t>() != bounds.back() || r[1].get<int64_t>() < r[0].get<int64_t>()) {
      return absl::InvalidArgumentError(StrCat(key, "[", p, "] = ", r.dump(),
                                                     " does not continue from ", bounds.back()));
    }
    bounds.push_back(r[1].get<int64_t>());
  }
  return bounds;
}

absl::StatusOr<std::vector<FieldSchema>> ParseFields(const json& j, const std::string& key) {
  std::vector<FieldSchema> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return absl::InvalidArgumentError(StrCat(key, " must be a list"));
  for (const json& f : j) {
    FieldSchema s;
    if (!f.contains("name") || !f["name"].is_string()) {
      return absl::InvalidArgumentError(StrCat(key, ": a field has no name"));
    }
    s.name = f["name"].get<std::string>();
    ASSIGN_OR_RETURN(s.dtype, DTypeFromName(f.value("dtype", std::string())));
    if (f.contains("shape")) {
      if (!f["shape"].is_array()) return absl::InvalidArgumentError(StrCat(key, " '", s.name, "' shape must be a list"));
      for (const json& d : f["shape"]) {
        if (!d.is_number_integer()) {
          return absl::InvalidArgumentError(StrCat(key, " '", s.name, "' shape must list integers"));
        }
        s.row_shape.push_back(d.get<int64_t>());
      }
    }
    // Readers size rows from this shape: refuse one whose size is negative or overflows.
    auto bytes = ShapeBytes(s.row_shape, DTypeSize(s.dtype), StrCat(key, " '", s.name, "' shape"));
    if (!bytes.ok()) return bytes.status();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::string PartitionConfig::PartPath(int part, const std::string& relative) const {
  std::filesystem::path p = std::filesystem::path(base_dir) / PartDirName(part) / relative;
  return p.string();
}

absl::StatusOr<RangePartitionBook> PartitionConfig::NodeBook() const {
  return RangePartitionBook::FromBounds(node_bounds);
}
absl::StatusOr<RangePartitionBook> PartitionConfig::EdgeBook() const {
  return RangePartitionBook::FromBounds(edge_bounds);
}

absl::Status UnknownFieldError(const std::string& kind, const std::string& name, std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return absl::NotFoundError(StrCat("no ", kind, " field '", name, "' (this graph has: ",
                                    names.empty() ? "none" : StrJoin(names, ", "), ")"));
}

namespace {
absl::StatusOr<FieldSchema> FindSchema(const std::vector<FieldSchema>& fields, const char* kind,
                                       const std::string& name) {
  std::vector<std::string> names;
  for (const FieldSchema& f : fields) {
    if (f.name == name) return f;
    names.push_back(f.name);
  }
  return UnknownFieldError(kind, name, std::move(names));
}
}  // namespace

absl::StatusOr<FieldSchema> PartitionConfig::NodeField(const std::string& name) const {
  return FindSchema(node_fields, "node", name);
}
absl::StatusOr<FieldSchema> PartitionConfig::EdgeField(const std::string& name) const {
  return FindSchema(edge_fields, "edge", name);
}

absl::StatusOr<std::string> PartitionConfigToJson(const PartitionConfig& c,
                                                  const std::string& extra_json) {
  json j;
  j["format"] = "fanout-partition";
  j["format_version"] = c.format_version;
  j["graph_name"] = c.graph_name;
  j["num_nodes"] = c.num_nodes;
  j["num_edges"] = c.num_edges;
  j["num_parts"] = c.num_parts;
  j["halo_hops"] = c.halo_hops;
  j["part_method"] = c.part_method;
  j["node_map"] = {{kNodeType, Ranges(c.node_bounds)}};
  j["edge_map"] = {{kEdgeType, Ranges(c.edge_bounds)}};
  j["ntypes"] = {{kNodeType, 0}};
  j["etypes"] = {{kEdgeType, 0}};
  j["node_fields"] = Fields(c.node_fields);
  j["edge_fields"] = Fields(c.edge_fields);
  j["num_classes"] = c.num_classes;
  for (int k = 0; k < c.num_parts; ++k) {
    std::string dir = c.PartDirName(k);
    json part;
    part["part_graph"] = dir + "/graph";
    part["node_feats"] = dir + "/node_data";
    part["edge_feats"] = dir + "/edge_data";
    json graph;
    for (const char* f : {PartFiles::kIndptr, PartFiles::kIndices, PartFiles::kOrigNids,
                          PartFiles::kOrigEids, PartFiles::kHaloNids, PartFiles::kOutIndptr,
                          PartFiles::kOutIndices, PartFiles::kOutEids}) {
      std::string name = std::filesystem::path(f).stem().string();
      graph[name] = dir + "/" + f;
    }
    part["graph"] = graph;
    json nd = json::object(), ed = json::object();
    for (const auto& f : c.node_fields) nd[f.name] = dir + "/" + PartFiles::NodeData(f.name);
    for (const auto& f : c.edge_fields) ed[f.name] = dir + "/" + PartFiles::EdgeData(f.name);
    part["node_data"] = nd;
    part["edge_data"] = ed;
    j[StrCat("part-", k)] = part;
  }
  if (!extra_json.empty()) {
    json extra = json::parse(extra_json, nullptr, /*allow_exceptions=*/false);
    if (extra.is_discarded()) return absl::InternalError("build info is not valid JSON");
    j["build"] = extra;
  }
  return j.dump(2) + "\n";
}

absl::StatusOr<PartitionConfig> LoadPartitionConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(StrCat(path, ": cannot open partition config"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(StrCat(path, ": not a JSON object"));
  }
  auto err = [&](const auto& what) {
    return absl::InvalidArgumentError(StrCat(path, ": ", what));
  };
  PartitionConfig c;
  try {
    c.format_version = IntAt<int>(j, "format_version", 0);
    if (c.format_version != kPartitionFormatVersion) {
      return err(StrCat("format_version ", c.format_version, " is not supported (this build reads ",
                              kPartitionFormatVersion, "); re-run fanout-partition"));
    }
    c.graph_name = j.at("graph_name").get<std::string>();
    c.num_nodes = IntAt<int64_t>(j, "num_nodes");
    c.num_edges = IntAt<int64_t>(j, "num_edges");
    c.num_parts = IntAt<int>(j, "num_parts");
    c.halo_hops = IntAt<int>(j, "halo_hops", 1);
    c.part_method = j.value("part_method", std::string());
    c.num_classes = IntAt<int64_t>(j, "num_classes", 0);
    if (c.num_parts < 1) return err("num_parts must be >= 1");
    auto nb = ParseRanges(j.at("node_map").at(kNodeType), "node_map", c.num_parts);
    if (!nb.ok()) return err(nb.status().message());
    auto eb = ParseRanges(j.at("edge_map").at(kEdgeType), "edge_map", c.num_parts);
    if (!eb.ok()) return err(eb.status().message());
    c.node_bounds = std::move(*nb);
    c.edge_bounds = std::move(*eb);
    if (c.node_bounds.back() != c.num_nodes) return err("node_map does not end at num_nodes");
    if (c.edge_bounds.back() != c.num_edges) return err("edge_map does not end at num_edges");
    auto nf = ParseFields(j.value("node_fields", json()), "node_fields");
    if (!nf.ok()) return err(nf.status().message());
    auto ef = ParseFields(j.value("edge_fields", json()), "edge_fields");
    if (!ef.ok()) return err(ef.status().message());
    c.node_fields = std::move(*nf);
    c.edge_fields = std::move(*ef);
  } catch (const json::exception& e) {
    return err(StrCat("missing or mistyped key: ", e.what()));
  }
  c.base_dir = std::filesystem::path(path).parent_path().string();
  if (c.base_dir.empty()) c.base_dir = ".";
  return c;
}

}  // namespace fanout::core

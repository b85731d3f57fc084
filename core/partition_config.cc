#include "core/partition_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "base/strings.h"
#include "core/shape.h"

namespace fanout::core {
namespace {

using nlohmann::json;

// Ranges per partition as DGL writes them: [[begin, end], ...].
json PairRanges(const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  json r = json::array();
  for (const auto& [b, e] : ranges) r.push_back({b, e});
  return r;
}

// A types object ({"name": id, ...}, ids 0..n-1) and its map ({"name": [[b, e], ...]}): the names in
// id order and their ranges. `key` is "ntypes"/"etypes", `map_key` "node_map"/"edge_map".
absl::Status ParseTypes(const json& j, const char* key, const char* map_key, int k, std::vector<std::string>* names,
                        std::vector<std::vector<std::pair<int64_t, int64_t>>>* ranges) {
  auto bad = [&](auto&&... parts) { return absl::InvalidArgumentError(base::StrCat(parts...)); };
  const json& map = j.at(map_key);
  if (!map.is_object()) return bad(map_key, " must be an object {type: ranges}");
  // Without a types object (configs written before types), the map's one type is type 0.
  json one = json::object();
  if (!j.contains(key) && map.size() == 1) one[map.begin().key()] = 0;
  const json& types = j.contains(key) ? j.at(key) : one;
  if (!types.is_object() || types.empty()) return bad(key, " must be a non-empty object {name: id}");
  names->assign(types.size(), "");
  for (const auto& [name, id] : types.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= static_cast<int64_t>(types.size()) ||
        !(*names)[id.get<size_t>()].empty()) {
      return bad(key, "['", name, "'] = ", id.dump(), ": type ids must be 0..", types.size() - 1, ", each once");
    }
    (*names)[id.get<size_t>()] = name;
  }
  ranges->clear();
  for (const std::string& name : *names) {
    if (!map.contains(name)) return bad(map_key, " has no ranges for type '", name, "' (", key, " lists it)");
    const json& r = map.at(name);
    const std::string where = base::StrCat(map_key, "['", name, "']");
    if (!r.is_array() || static_cast<int>(r.size()) != k) return bad(where, " must list ", k, " [start, end) ranges");
    std::vector<std::pair<int64_t, int64_t>> per_part;
    for (int p = 0; p < k; ++p) {
      if (!r[p].is_array() || r[p].size() != 2 || !r[p][0].is_number_integer() || !r[p][1].is_number_integer()) {
        return bad(where, "[", p, "] is not an [start, end] pair");
      }
      per_part.emplace_back(r[p][0].get<int64_t>(), r[p][1].get<int64_t>());
    }
    ranges->push_back(std::move(per_part));
  }
  if (map.size() != names->size()) return bad(map_key, " has ", map.size(), " types, ", key, " ", names->size());
  return absl::OkStatus();
}

// Each partition's [first, last) ID over its types' ranges (checked to tile it by TypeMap::Make).
std::vector<int64_t> BoundsOf(const std::vector<std::vector<std::pair<int64_t, int64_t>>>& ranges, int k) {
  std::vector<int64_t> bounds(k + 1, 0);
  for (int p = 0; p < k; ++p) bounds[p] = ranges.front()[p].first;
  bounds[k] = ranges.back()[k - 1].second;
  return bounds;
}

json Fields(const std::vector<FieldSchema>& fields) {
  json a = json::array();
  for (const auto& f : fields) {
    json one = {{"name", f.name}, {"dtype", std::string(DTypeName(f.dtype))}, {"shape", f.row_shape}};
    if (!f.node_type.empty()) one["ntype"] = f.node_type;
    if (!f.edge_type.empty()) one["etype"] = f.edge_type;
    if (f.codec != FeatureCodec::kNone) one["codec"] = std::string(FeatureCodecName(f.codec));
    a.push_back(std::move(one));
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
    throw json::type_error::create(302, base::StrCat("'", key, "' must be an integer"), &v);
  }
  return v.get<T>();
}

absl::StatusOr<std::vector<FieldSchema>> ParseFields(const json& j, const std::string& key) {
  std::vector<FieldSchema> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return absl::InvalidArgumentError(base::StrCat(key, " must be a list"));
  for (const json& f : j) {
    FieldSchema s;
    if (!f.contains("name") || !f["name"].is_string()) {
      return absl::InvalidArgumentError(base::StrCat(key, ": a field has no name"));
    }
    s.name = f["name"].get<std::string>();
    if (f.contains("ntype")) {
      if (!f["ntype"].is_string()) return absl::InvalidArgumentError(base::StrCat(key, " '", s.name, "' ntype must be a string"));
      s.node_type = f["ntype"].get<std::string>();
    }
    if (f.contains("etype")) {
      if (!f["etype"].is_string()) return absl::InvalidArgumentError(base::StrCat(key, " '", s.name, "' etype must be a string"));
      s.edge_type = f["etype"].get<std::string>();
    }
    ASSIGN_OR_RETURN(s.dtype, DTypeFromName(f.value("dtype", std::string())));
    if (f.contains("shape")) {
      if (!f["shape"].is_array()) return absl::InvalidArgumentError(base::StrCat(key, " '", s.name, "' shape must be a list"));
      for (const json& d : f["shape"]) {
        if (!d.is_number_integer()) {
          return absl::InvalidArgumentError(base::StrCat(key, " '", s.name, "' shape must list integers"));
        }
        s.row_shape.push_back(d.get<int64_t>());
      }
    }
    // Readers size rows from this shape: refuse one whose size is negative or overflows.
    auto bytes = ShapeBytes(s.row_shape, DTypeSize(s.dtype), base::StrCat(key, " '", s.name, "' shape"));
    if (!bytes.ok()) return bytes.status();
    if (f.contains("codec")) {
      const auto bad = [&](const std::string& why) {
        return absl::InvalidArgumentError(base::StrCat(key, " '", s.name, "' codec: ", why));
      };
      if (!f["codec"].is_string()) return bad("must be a string");
      absl::StatusOr<FeatureCodec> codec = FeatureCodecFromName(f["codec"].get<std::string>());
      if (!codec.ok()) return bad(std::string(codec.status().message()));
      s.codec = *codec;
      if (s.codec != FeatureCodec::kNone &&
          (s.dtype != CodecStoredDType(s.codec) || s.row_shape.size() != 1 || s.decoded_elems() < 1)) {
        return bad(base::StrCat(FeatureCodecName(s.codec), " rows are one-dimensional ",
                                DTypeName(CodecStoredDType(s.codec)),
                                s.codec == FeatureCodec::kInt8 ? " arrays of the codes and 8 bytes of scale and offset"
                                                               : " arrays of at least one value",
                                ", not ", DTypeName(s.dtype), " with shape [", base::StrJoin(s.row_shape, ", "), "]"));
      }
    }
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

absl::StatusOr<TypeMap> PartitionConfig::NodeTypes() const {
  if (node_types.empty()) return TypeMap::Single(TypeMap::Kind::kNode, node_bounds);
  return TypeMap::Make(TypeMap::Kind::kNode, node_types, node_type_ranges, node_bounds);
}

absl::StatusOr<TypeMap> PartitionConfig::EdgeTypes() const {
  if (edge_types.empty()) return TypeMap::Single(TypeMap::Kind::kEdge, edge_bounds);
  std::vector<std::string> names;
  for (const CanonicalEdgeType& t : edge_types) names.push_back(t.ToString());
  return TypeMap::Make(TypeMap::Kind::kEdge, std::move(names), edge_type_ranges, edge_bounds);
}

absl::Status UnknownFieldError(const std::string& kind, const std::string& name, std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return absl::NotFoundError(base::StrCat("no ", kind, " field '", name, "' (this graph has: ",
                                    names.empty() ? "none" : base::StrJoin(names, ", "), ")"));
}

namespace {
absl::StatusOr<FieldSchema> FindSchema(const std::vector<FieldSchema>& fields, const char* kind,
                                       const std::string& name) {
  std::vector<std::string> names;
  for (const FieldSchema& f : fields) {
    if (f.key() == name) return f;  // a typed field by "TYPE/NAME"
    names.push_back(f.key());
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
  j["node_id_dtype"] = std::string(DTypeName(c.node_id_dtype));
  j["edge_id_dtype"] = std::string(DTypeName(c.edge_id_dtype));
  if (c.link_etypes.size() == 1) j["link_etype"] = c.link_etypes[0];
  if (!c.link_etypes.empty()) j["link_etypes"] = c.link_etypes;
  ASSIGN_OR_RETURN(TypeMap node_types, c.NodeTypes());
  ASSIGN_OR_RETURN(TypeMap edge_types, c.EdgeTypes());
  for (const auto& [types, key, map_key] : {std::tuple{&node_types, "ntypes", "node_map"},
                                            std::tuple{&edge_types, "etypes", "edge_map"}}) {
    j[key] = json::object();
    j[map_key] = json::object();
    for (int t = 0; t < types->num_types(); ++t) {
      std::vector<std::pair<int64_t, int64_t>> r;
      for (int p = 0; p < c.num_parts; ++p) r.push_back(types->Range(t, p));
      j[key][types->name(t)] = t;
      j[map_key][types->name(t)] = PairRanges(r);
    }
  }
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
    for (const auto& f : c.node_fields) nd[f.key()] = dir + "/" + PartFiles::NodeData(f.key());
    for (const auto& f : c.edge_fields) ed[f.key()] = dir + "/" + PartFiles::EdgeData(f.key());
    part["node_data"] = nd;
    part["edge_data"] = ed;
    j[base::StrCat("part-", k)] = part;
  }
  if (!extra_json.empty()) {
    json extra = json::parse(extra_json, nullptr, /*allow_exceptions=*/false);
    if (extra.is_discarded()) return absl::InternalError("build info is not valid JSON");
    j["build"] = extra;
  }
  return j.dump(2) + "\n";
}

namespace {

template <typename... Args>
absl::Status Invalid(const Args&... what) {
  return absl::InvalidArgumentError(base::StrCat(what...));
}

// A config's node and edge types (each edge type's ends among the node types) and the types that
// link prediction uses (each an edge type, none twice). Errors say what, the caller says where.
absl::Status ReadTypes(const json& j, PartitionConfig* c) {
  std::vector<std::string> edge_names;
  if (absl::Status s = ParseTypes(j, "ntypes", "node_map", c->num_parts, &c->node_types, &c->node_type_ranges);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseTypes(j, "etypes", "edge_map", c->num_parts, &edge_names, &c->edge_type_ranges);
      !s.ok()) {
    return s;
  }
  for (const std::string& name : edge_names) {
    auto t = CanonicalEdgeType::Parse(name);
    if (!t.ok()) return Invalid("etypes: ", t.status().message());
    for (const std::string* end : {&t->src, &t->dst}) {
      if (std::find(c->node_types.begin(), c->node_types.end(), *end) == c->node_types.end()) {
        return Invalid("etypes: edge type '", name, "' names node type '", *end,
                       "', which ntypes does not list");
      }
    }
    c->edge_types.push_back(*std::move(t));
  }
  for (size_t i = 0; i < c->link_etypes.size(); ++i) {
    const std::string& name = c->link_etypes[i];
    if (std::none_of(c->edge_types.begin(), c->edge_types.end(), [&](const auto& e) { return e.ToString() == name; })) {
      return Invalid("link_etypes: '", name, "' is not one of the etypes");
    }
    if (std::find(c->link_etypes.begin(), c->link_etypes.begin() + i, name) != c->link_etypes.begin() + i) {
      return Invalid("link_etypes: '", name, "' is listed twice");
    }
  }
  return absl::OkStatus();
}

// Every field's type is one the config lists, and no field is listed twice.
absl::Status CheckFieldTypes(const PartitionConfig& c) {
  std::set<std::string> keys;
  for (const FieldSchema& f : c.node_fields) {
    if (!f.node_type.empty() && std::find(c.node_types.begin(), c.node_types.end(), f.node_type) == c.node_types.end()) {
      return Invalid("node_fields: field '", f.name, "' is of node type '", f.node_type,
                     "', which ntypes does not list");
    }
    if (!keys.insert(f.key()).second) return Invalid("node_fields: '", f.key(), "' is listed twice");
  }
  for (const FieldSchema& f : c.node_fields) {
    if (!f.edge_type.empty()) return Invalid("node_fields: field '", f.name, "' has an etype");
  }
  keys.clear();
  for (const FieldSchema& f : c.edge_fields) {
    if (!f.node_type.empty()) return Invalid("edge_fields: field '", f.name, "' has an ntype");
    if (!f.edge_type.empty() && std::none_of(c.edge_types.begin(), c.edge_types.end(), [&](const CanonicalEdgeType& e) {
          return e.ToString() == f.edge_type;
        })) {
      return Invalid("edge_fields: field '", f.name, "' is of edge type '", f.edge_type,
                     "', which etypes does not list");
    }
    if (!keys.insert(f.key()).second) return Invalid("edge_fields: '", f.key(), "' is listed twice");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PartitionConfig> LoadPartitionConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(base::StrCat(path, ": cannot open partition config"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(base::StrCat(path, ": not a JSON object"));
  }
  auto err = [&](const auto& what) {
    return absl::InvalidArgumentError(base::StrCat(path, ": ", what));
  };
  PartitionConfig c;
  try {
    c.format_version = IntAt<int>(j, "format_version", 0);
    if (c.format_version < kOldestPartitionFormatVersion || c.format_version > kPartitionFormatVersion) {
      return err(base::StrCat("format_version ", c.format_version, " is not supported (this build reads ",
                              kOldestPartitionFormatVersion, " to ", kPartitionFormatVersion, ")",
                              c.format_version > kPartitionFormatVersion ? "; a newer fanout wrote it"
                                                                         : "; re-run fanout-partition"));
    }
    c.graph_name = j.at("graph_name").get<std::string>();
    c.num_nodes = IntAt<int64_t>(j, "num_nodes");
    c.num_edges = IntAt<int64_t>(j, "num_edges");
    if (c.format_version >= 2) {
      for (auto [key, out] : {std::pair{"node_id_dtype", &c.node_id_dtype}, std::pair{"edge_id_dtype", &c.edge_id_dtype}}) {
        const std::string name = j.at(key).get<std::string>();
        if (name != "int32" && name != "int64") return err(base::StrCat(key, " is '", name, "'; int32 or int64 expected"));
        *out = name == "int32" ? DType::kInt32 : DType::kInt64;
      }
      const int64_t narrow = std::numeric_limits<int32_t>::max();
      if (c.node_id_dtype == DType::kInt32 && c.num_nodes > narrow) {
        return err(base::StrCat("node_id_dtype is int32 but the graph has ", c.num_nodes, " nodes"));
      }
      if (c.edge_id_dtype == DType::kInt32 && c.num_edges > narrow) {
        return err(base::StrCat("edge_id_dtype is int32 but the graph has ", c.num_edges, " edges"));
      }
    }
    c.num_parts = IntAt<int>(j, "num_parts");
    c.halo_hops = IntAt<int>(j, "halo_hops", 1);
    c.part_method = j.value("part_method", std::string());
    c.num_classes = IntAt<int64_t>(j, "num_classes", 0);
    if (j.contains("link_etypes")) {
      const json& l = j["link_etypes"];
      if (!l.is_array() || l.empty() || !std::all_of(l.begin(), l.end(), [](const json& x) { return x.is_string(); })) {
        return err("link_etypes must be a non-empty list of edge type names");
      }
      c.link_etypes = l.get<std::vector<std::string>>();
    } else if (std::string one = j.value("link_etype", std::string()); !one.empty()) {
      c.link_etypes = {std::move(one)};
    }
    if (c.num_parts < 1) return err("num_parts must be >= 1");
    if (absl::Status s = ReadTypes(j, &c); !s.ok()) return err(s.message());
    c.node_bounds = BoundsOf(c.node_type_ranges, c.num_parts);
    c.edge_bounds = BoundsOf(c.edge_type_ranges, c.num_parts);
    if (c.node_bounds[0] != 0) return err("node_map does not start at 0");
    if (c.edge_bounds[0] != 0) return err("edge_map does not start at 0");
    if (auto m = c.NodeTypes(); !m.ok()) return err(base::StrCat("node_map: ", m.status().message()));
    if (auto m = c.EdgeTypes(); !m.ok()) return err(base::StrCat("edge_map: ", m.status().message()));
    if (c.node_bounds.back() != c.num_nodes) return err("node_map does not end at num_nodes");
    if (c.edge_bounds.back() != c.num_edges) return err("edge_map does not end at num_edges");
    auto nf = ParseFields(j.value("node_fields", json()), "node_fields");
    if (!nf.ok()) return err(nf.status().message());
    auto ef = ParseFields(j.value("edge_fields", json()), "edge_fields");
    if (!ef.ok()) return err(ef.status().message());
    c.node_fields = std::move(*nf);
    c.edge_fields = std::move(*ef);
    if (absl::Status s = CheckFieldTypes(c); !s.ok()) return err(s.message());
  } catch (const json::exception& e) {
    return err(base::StrCat("missing or mistyped key: ", e.what()));
  }
  c.base_dir = std::filesystem::path(path).parent_path().string();
  if (c.base_dir.empty()) c.base_dir = ".";
  return c;
}

}  // namespace fanout::core

#include "partition/config_record.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "base/strings.h"

namespace fanout::partition {
namespace {

using base::StrCat;

double Imbalance(const std::vector<int64_t>& v) {
  if (v.empty()) return 1.0;
  double sum = 0, mx = 0;
  for (int64_t x : v) {
    sum += x;
    mx = std::max<double>(mx, x);
  }
  return sum == 0 ? 1.0 : mx / (sum / v.size());
}

std::string Human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %s", bytes, units[u]);
  return buf;
}

}  // namespace

absl::Status ChooseIdDTypes(const PartitionOptions& o, int64_t num_nodes, int64_t num_edges,
                            core::PartitionConfig* cfg) {
  auto pick = [&](int64_t count, const char* what) -> absl::StatusOr<core::DType> {
    const bool fits = count <= o.int32_id_limit;
    if (o.id_width == IdWidth::k32 && !fits) {
      return absl::InvalidArgumentError(StrCat("--id-width 32: the graph has ", count, " ", what, ", more than int32 IDs ",
                                               "reach (", o.int32_id_limit, "); use --id-width auto or 64"));
    }
    return o.id_width != IdWidth::k64 && fits ? core::DType::kInt32 : core::DType::kInt64;
  };
  ASSIGN_OR_RETURN(cfg->node_id_dtype, pick(num_nodes, "nodes"));
  ASSIGN_OR_RETURN(cfg->edge_id_dtype, pick(num_edges, "stored edges"));
  return absl::OkStatus();
}

absl::Status WriteConfigFile(const core::PartitionConfig& cfg, const std::string& build, const std::string& path) {
  ASSIGN_OR_RETURN(std::string json, core::PartitionConfigToJson(cfg, build));
  std::ofstream out(path);
  out << json;
  out.close();
  if (!out) return absl::InternalError(StrCat("cannot write ", path));
  return absl::OkStatus();
}

void SetConfigHeader(const std::string& name, int64_t num_nodes, const std::vector<int64_t>& node_bounds,
                     const PartitionOptions& o, core::PartitionConfig* cfg) {
  cfg->graph_name = name;
  cfg->num_nodes = num_nodes;
  cfg->num_parts = o.num_parts;
  cfg->halo_hops = o.halo_hops;
  cfg->part_method = o.method == PartMethod::kMetis ? "metis" : o.method == PartMethod::kRandom ? "random" : "file";
  cfg->node_bounds = node_bounds;
}

void SetConfigSchema(ConfigSchema schema, core::PartitionConfig* cfg) {
  const GraphTypes& g = *schema.types;
  if (g.typed()) {
    cfg->node_types = g.node_types;
    cfg->node_type_ranges = std::move(schema.node_type_ranges);
    cfg->edge_types = g.edge_types;
    if (schema.reverse_types) {
      for (const core::CanonicalEdgeType& e : g.edge_types) cfg->edge_types.push_back(ReverseRelation(e));
    }
    cfg->edge_type_ranges = std::move(schema.edge_type_ranges);
  }
  cfg->node_fields = std::move(schema.node_fields);
  for (int t : schema.mask_types) {
    for (const char* mask : {"train_mask", "val_mask", "test_mask"}) {
      cfg->node_fields.push_back({mask, core::DType::kUInt8, {}, t < 0 ? "" : g.node_types[t]});
    }
  }
  cfg->edge_fields = std::move(schema.edge_fields);
}

std::string BuildRecord(const PartitionSummary& s, const PartitionOptions& o, const std::string& tool,
                        const std::string& input_layout, bool typed, const std::string& extra) {
  nlohmann::json build = extra.empty() ? nlohmann::json::object() : nlohmann::json::parse(extra);
  build["tool"] = tool;
  build["input_layout"] = input_layout;
  build["input_edges"] = s.input_edges;
  build["add_reverse_edges"] = o.add_reverse_edges;
  build["self_loops"] = {{"found", s.self_loops}, {"policy", o.remove_self_loops ? "remove" : "keep"}};
  build["duplicate_edges"] = {{"found", s.duplicates}, {"policy", o.remove_duplicate_edges ? "remove" : "keep"}};
  if (typed) {
    build["orig_nid_meaning"] = "the node's ID among the input nodes of its type";
    build["orig_eid_meaning"] = "the edge's row among the input edges of its relation (rev_REL: the REL row it reverses)";
  } else {
    build["orig_eid_meaning"] = "e < input_edges: input edge row e; e >= input_edges: reverse of row e - input_edges";
  }
  build["method_detail"] = s.metis_note;
  build["seed"] = o.seed;
  build["edge_cut"] = s.edge_cut;
  build["part_nodes"] = s.part_nodes;
  build["part_edges"] = s.part_edges;
  build["part_train_nodes"] = s.part_train;
  build["part_halo_nodes"] = s.part_halo;
  if (!s.rank_peak_rss_bytes.empty()) {
    build["rank_peak_rss_bytes"] = s.rank_peak_rss_bytes;
    build["peak_phase"] = s.peak_phase;
  }
  return build.dump();
}

std::string PartitionSummary::ToString() const {
  std::string r;
  r += StrCat("partition config: ", config_path, "\n");
  r += StrCat("method:           ", metis_note, "\n");
  r += StrCat("nodes:            ", num_nodes, "\n");
  if (!types_note.empty()) r += types_note;
  r += StrCat("edges:            ", num_edges, " stored (", input_edges, " in the input; ", self_loops,
              " self loops, ", duplicates, " duplicates found)\n");
  double cut_frac = num_edges == 0 ? 0.0 : static_cast<double>(edge_cut) / num_edges;
  char buf[160];
  std::snprintf(buf, sizeof(buf), "edge cut:         %lld (%.2f%% of stored edges)\n",
                static_cast<long long>(edge_cut), 100.0 * cut_frac);
  r += buf;
  if (link_pairs > 0) {
    r += StrCat("link split:       ", link_pairs, " node pairs: ", link_train, " train (stored), ", link_valid,
                " valid, ", link_test, " test (in link/, not stored)\n");
  }
  std::snprintf(buf, sizeof(buf), "balance (max/avg): nodes %.3f, edges %.3f, train nodes %.3f\n",
                Imbalance(part_nodes), Imbalance(part_edges), Imbalance(part_train));
  r += buf;
  r += "part      nodes       edges       train        halo\n";
  for (size_t k = 0; k < part_nodes.size(); ++k) {
    std::snprintf(buf, sizeof(buf), "%4zu %10lld  %10lld  %10lld  %10lld\n", k,
                  static_cast<long long>(part_nodes[k]), static_cast<long long>(part_edges[k]),
                  static_cast<long long>(part_train[k]), static_cast<long long>(part_halo[k]));
    r += buf;
  }
  r += "time:            ";
  for (const auto& p : phases) {
    std::snprintf(buf, sizeof(buf), " %s %.2fs,", p.name.c_str(), p.seconds);
    r += buf;
  }
  std::snprintf(buf, sizeof(buf), " total %.2fs\n", total_seconds);
  r += buf;
  if (rank_peak_rss_bytes.empty()) {
    r += StrCat("peak memory:      ", Human(static_cast<double>(peak_rss_bytes)), " (RSS, ", peak_rss_bytes,
                " bytes)\n");
  } else {
    // Distributed: the largest rank's peak (what each machine must have), then every rank's.
    const auto max = std::max_element(rank_peak_rss_bytes.begin(), rank_peak_rss_bytes.end());
    std::vector<std::string> each;
    for (int64_t b : rank_peak_rss_bytes) each.push_back(Human(static_cast<double>(b)));
    r += StrCat("peak memory:      ", Human(static_cast<double>(*max)), " per rank at most (RSS of rank ",
                max - rank_peak_rss_bytes.begin(), ", ", *max, " bytes",
                peak_phase.empty() ? "" : StrCat(", reached in ", peak_phase), "); ranks: ", base::StrJoin(each, ", "),
                "\n");
  }
  return r;
}

}  // namespace fanout::partition

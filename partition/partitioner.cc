#include "partition/partitioner.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include <nlohmann/json.hpp>

#include "core/csr.h"
#include "core/npy.h"
#include "core/partition_config.h"
#include "core/process_stats.h"
#include "core/progress.h"
#include "core/staging_dir.h"
#include "core/status.h"
#include "core/strings.h"
#include "partition/metis_graph.h"
#include "partition/readers.h"

namespace fanout::partition {
namespace {

namespace fs = std::filesystem;
using core::NpyArray;
using core::StrCat;

constexpr const char* kTool = "fanout-partition";

void Log(const PartitionOptions& o, const std::string& msg) {
  if (!o.quiet) std::fprintf(stderr, "%s: %s\n", kTool, msg.c_str());
}

// ---------------------------------------------------------------------------------------------
// Assignment

absl::StatusOr<std::vector<int32_t>> MetisAssign(const Dataset& d, const PartitionOptions& o,
                                                 std::string* note) {
  ASSIGN_OR_RETURN(MetisGraph g, BuildMetisGraph(d, o));
  *note = g.Describe(o);
  Log(o, StrCat("running METIS: ", d.num_nodes, " nodes, ", g.adjncy.size() / 2,
                " undirected edges, ", o.num_parts, " parts, ", g.ncon, " constraint(s)"));
  return RunMetis(g, o);
}

std::vector<int32_t> RandomAssign(int64_t n, int k, uint64_t seed) {
  // Balanced: a seeded permutation cut into K equal slices.
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(perm[i], perm[std::uniform_int_distribution<int64_t>(0, i)(rng)]);
  }
  std::vector<int32_t> part(n);
  for (int64_t i = 0; i < n; ++i) part[perm[i]] = static_cast<int32_t>(i * k / n);
  return part;
}

// ---------------------------------------------------------------------------------------------
// Output

// Writes rows `order[0..count)` of `src` (or all rows in `order` when it is a gather) into a new
// .npy of shape [count, row shape...], streaming in chunks. For a mapped source whose rows are
// visited in ascending order, pages already passed are released to keep RSS flat.
absl::Status WriteGatheredRows(const NpyArray& src, const int64_t* rows, int64_t count,
                               bool ascending, const std::string& path) {
  std::vector<int64_t> shape = src.shape();
  shape[0] = count;
  ASSIGN_OR_RETURN(auto w, core::NpyWriter::Open(path, src.dtype(), shape));
  const size_t rb = src.row_bytes();
  std::vector<char> buf;
  const size_t chunk = std::max<size_t>(1, (8u << 20) / std::max<size_t>(rb, 1));
  buf.reserve(chunk * rb);
  size_t dropped_to = 0;
  for (int64_t i = 0; i < count; ++i) {
    const char* r = src.row(rows[i]);
    buf.insert(buf.end(), r, r + rb);
    if (buf.size() >= chunk * rb) {
      RETURN_IF_ERROR(w->Append(buf.data(), buf.size()));
      buf.clear();
      if (ascending && src.is_mapped()) {
        size_t upto = static_cast<size_t>(rows[i]) * rb;
        src.DropPages(dropped_to, upto);
        dropped_to = upto;
      }
    }
  }
  RETURN_IF_ERROR(w->Append(buf.data(), buf.size()));
  if (src.is_mapped()) src.DropPages(0, src.nbytes());
  return w->Close();
}

absl::Status CheckName(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("--graph-name is empty");
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return absl::InvalidArgumentError(StrCat("--graph-name '", name, "': use letters, digits, '_', '-' or '.'"));
    }
  }
  return absl::OkStatus();
}

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

absl::Status ValidatePartitionOptions(const PartitionOptions& o, int64_t num_nodes) {
  if (o.out_dir.empty()) return absl::InvalidArgumentError("--out is required");
  if (o.num_parts < 1 || o.num_parts > num_nodes) {
    return absl::InvalidArgumentError(StrCat("--num-parts must be in [1, ", num_nodes,
                                             "] (the number of nodes), got ", o.num_parts));
  }
  if (o.method == PartMethod::kFile && o.assignment_file.empty()) {
    return absl::InvalidArgumentError("--part-method file needs --assignment FILE");
  }
  if (o.method != PartMethod::kFile && !o.assignment_file.empty()) {
    return absl::InvalidArgumentError("--assignment is only used with --part-method file");
  }
  if (o.halo_hops != 0 && o.halo_hops != 1) {
    return absl::InvalidArgumentError(StrCat("--halo-hops must be 0 or 1, got ", o.halo_hops));
  }
  if (!o.graph_name.empty()) RETURN_IF_ERROR(CheckName(o.graph_name));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> AssignPartitions(const Dataset& d, const PartitionOptions& o,
                                                      std::string* note) {
  switch (o.method) {
    case PartMethod::kMetis:
      return MetisAssign(d, o, note);
    case PartMethod::kRandom:
      *note = "random, balanced node counts";
      return RandomAssign(d.num_nodes, o.num_parts, o.seed);
    case PartMethod::kFile:
      *note = StrCat("assignment file ", o.assignment_file);
      return ReadAssignment(o.assignment_file, d.num_nodes, o.num_parts);
  }
  return absl::InternalError("unknown partition method");
}

absl::StatusOr<PartitionSummary> PartitionDataset(const Dataset& d, const PartitionOptions& o) {
  RETURN_IF_ERROR(ValidatePartitionOptions(o, d.num_nodes));
  const std::string name = o.graph_name.empty() ? d.name : o.graph_name;
  RETURN_IF_ERROR(CheckName(name));
  for (const auto& f : d.node_fields) {
    if (d.has_split && (f.name == "train_mask" || f.name == "val_mask" || f.name == "test_mask")) {
      return absl::InvalidArgumentError(StrCat(f.data.path(), ": node field '", f.name,
                                               "' clashes with the mask fanout derives from the split"));
    }
  }
  // Claim the output folder before the long work, so a bad --out fails fast.
  ASSIGN_OR_RETURN(core::StagingDir staging, core::StagingDir::Create(o.out_dir, o.overwrite));

  core::PhaseTimer timer;
  PartitionSummary s;
  const int K = o.num_parts;
  const int64_t n = d.num_nodes;
  s.num_nodes = n;
  s.input_edges = d.num_edges();

  timer.Start("assign");
  Log(o, StrCat("assigning ", n, " nodes to ", K, " partitions"));
  ASSIGN_OR_RETURN(std::vector<int32_t> part, AssignPartitions(d, o, &s.metis_note));

  // Relabel: partition k owns [bounds[k], bounds[k+1]); inside a partition the input order is kept.
  timer.Start("relabel");
  std::vector<int64_t> bounds(K + 1, 0);
  for (int64_t v = 0; v < n; ++v) ++bounds[part[v] + 1];
  for (int k = 0; k < K; ++k) bounds[k + 1] += bounds[k];
  std::vector<int64_t> new_id(n), orig_nid(n);
  {
    std::vector<int64_t> next(bounds.begin(), bounds.end() - 1);
    for (int64_t v = 0; v < n; ++v) {
      int64_t id = next[part[v]]++;
      new_id[v] = id;
      orig_nid[id] = v;
    }
  }
  part = {};

  // In-edge CSC over new IDs; positions in it are the new edge IDs.
  timer.Start("build-csc");
  EdgeView view(d, o.add_reverse_edges);
  for (int64_t i = 0; i < d.num_edges(); ++i) s.self_loops += view.src(i) == view.dst(i);
  std::vector<int64_t> origin;
  core::Csr csc = core::BuildCsr(
      n, view.size(),
      [&](int64_t v) -> std::pair<int64_t, int64_t> {
        int64_t u = view.src(v), w = view.dst(v);
        // A self loop's reverse is itself: store it once; drop all of them on request.
        if (u == w && (o.remove_self_loops || view.is_reverse(v))) return {-1, 0};
        return {new_id[w], new_id[u]};
      },
      &origin);
  d.edges.DropPages(0, d.edges.nbytes());
  {
    int64_t before = csc.num_entries();
    core::SortRows(&csc, &origin, o.remove_duplicate_edges);
    s.duplicates = before - csc.num_entries();
    if (!o.remove_duplicate_edges) {
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t p = csc.indptr[r] + 1; p < csc.indptr[r + 1]; ++p) {
          s.duplicates += csc.indices[p] == csc.indices[p - 1];
        }
      }
    }
  }
  s.num_edges = csc.num_entries();
  std::vector<int64_t> ebounds(K + 1);
  for (int k = 0; k <= K; ++k) ebounds[k] = csc.indptr[bounds[k]];

  // Split masks, indexed by input node ID.
  std::vector<uint8_t> masks[3];
  const std::vector<int64_t>* splits[3] = {&d.train_idx, &d.valid_idx, &d.test_idx};
  const char* mask_names[3] = {"train_mask", "val_mask", "test_mask"};
  if (d.has_split) {
    for (int i = 0; i < 3; ++i) {
      masks[i].assign(n, 0);
      for (int64_t v : *splits[i]) masks[i][v] = 1;
    }
  }

  timer.Start("write");
  core::PartitionConfig cfg;
  cfg.graph_name = name;
  cfg.num_nodes = n;
  cfg.num_edges = s.num_edges;
  cfg.num_parts = K;
  cfg.halo_hops = o.halo_hops;
  cfg.part_method = o.method == PartMethod::kMetis ? "metis" : o.method == PartMethod::kRandom ? "random" : "file";
  cfg.node_bounds = bounds;
  cfg.edge_bounds = ebounds;
  cfg.num_classes = d.num_classes;
  for (const auto& f : d.node_fields) {
    cfg.node_fields.push_back({f.name, f.data.dtype(), {f.data.shape().begin() + 1, f.data.shape().end()}});
  }
  if (d.has_split) {
    for (const char* mn : mask_names) cfg.node_fields.push_back({mn, core::DType::kUInt8, {}});
  }
  for (const auto& f : d.edge_fields) {
    cfg.edge_fields.push_back({f.name, f.data.dtype(), {f.data.shape().begin() + 1, f.data.shape().end()}});
  }
  cfg.base_dir = staging.path();

  for (int k = 0; k < K; ++k) {
    const int64_t nb = bounds[k], ne = bounds[k + 1], eb = ebounds[k], ee = ebounds[k + 1];
    const int64_t nk = ne - nb, mk = ee - eb;
    Log(o, StrCat("writing part ", k, ": ", nk, " nodes, ", mk, " edges"));
    std::error_code ec;
    for (const char* sub : {"graph", "node_data", "edge_data"}) {
      fs::create_directories(fs::path(cfg.PartPath(k, sub)), ec);
      if (ec) return absl::InternalError(StrCat("cannot create ", cfg.PartPath(k, sub), ": ", ec.message()));
    }
    auto P = [&](const std::string& rel) { return cfg.PartPath(k, rel); };
    using core::PartFiles;
    using core::DType;
    std::vector<int64_t> indptr(nk + 1);
    for (int64_t i = 0; i <= nk; ++i) indptr[i] = csc.indptr[nb + i] - eb;
    RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kIndptr), indptr));
    RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kIndices), DType::kInt64, {mk}, csc.indices.data() + eb));
    RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kOrigEids), DType::kInt64, {mk}, origin.data() + eb));
    RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kOrigNids), DType::kInt64, {nk}, orig_nid.data() + nb));

    // Halo: the remote sources of this partition's in-edges.
    std::vector<int64_t> halo;
    for (int64_t p = eb; p < ee; ++p) {
      int64_t u = csc.indices[p];
      if (u < nb || u >= ne) halo.push_back(u);
    }
    s.edge_cut += static_cast<int64_t>(halo.size());
    std::sort(halo.begin(), halo.end());
    halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
    s.part_halo.push_back(static_cast<int64_t>(halo.size()));
    if (o.halo_hops == 0) halo.clear();
    RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kHaloNids), halo));

    // Out-edge index of the inner nodes: the edges (owned by any partition) they are the source of.
    {
      std::vector<int64_t> out_ptr(nk + 1, 0);
      for (int64_t p = 0; p < csc.num_entries(); ++p) {
        int64_t u = csc.indices[p];
        if (u >= nb && u < ne) ++out_ptr[u - nb + 1];
      }
      for (int64_t i = 0; i < nk; ++i) out_ptr[i + 1] += out_ptr[i];
      std::vector<int64_t> out_dst(out_ptr[nk]), out_eid(out_ptr[nk]);
      std::vector<int64_t> fill(out_ptr.begin(), out_ptr.end() - 1);
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t p = csc.indptr[r]; p < csc.indptr[r + 1]; ++p) {
          int64_t u = csc.indices[p];
          if (u < nb || u >= ne) continue;
          int64_t at = fill[u - nb]++;
          out_dst[at] = r;
          out_eid[at] = p;
        }
      }
      RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kOutIndptr), out_ptr));
      RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kOutIndices), out_dst));
      RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::kOutEids), out_eid));
    }

    // Node data, rows in new-ID order (ascending input IDs within the partition).
    for (const auto& f : d.node_fields) {
      RETURN_IF_ERROR(WriteGatheredRows(f.data, orig_nid.data() + nb, nk, /*ascending=*/true,
                                        P(PartFiles::NodeData(f.name))));
    }
    int64_t train = 0;
    if (d.has_split) {
      for (int i = 0; i < 3; ++i) {
        std::vector<uint8_t> mk_rows(nk);
        for (int64_t j = 0; j < nk; ++j) mk_rows[j] = masks[i][orig_nid[nb + j]];
        if (i == 0) train = std::count(mk_rows.begin(), mk_rows.end(), 1);
        RETURN_IF_ERROR(core::WriteNpy(P(PartFiles::NodeData(mask_names[i])), mk_rows));
      }
    }
    // Edge data: a stored edge's row is its input row (reverse edges share their input's row).
    if (!d.edge_fields.empty()) {
      std::vector<int64_t> rows(mk);
      for (int64_t p = 0; p < mk; ++p) rows[p] = view.input_row(origin[eb + p]);
      for (const auto& f : d.edge_fields) {
        RETURN_IF_ERROR(WriteGatheredRows(f.data, rows.data(), mk, /*ascending=*/false,
                                          P(PartFiles::EdgeData(f.name))));
      }
    }
    s.part_nodes.push_back(nk);
    s.part_edges.push_back(mk);
    s.part_train.push_back(train);
  }
  timer.Finish();

  // The config, with what was done and measured, then the atomic rename.
  nlohmann::json build;
  build["tool"] = "fanout-partition";
  build["input_layout"] = d.layout;
  build["input_edges"] = s.input_edges;
  build["add_reverse_edges"] = o.add_reverse_edges;
  build["self_loops"] = {{"found", s.self_loops}, {"policy", o.remove_self_loops ? "remove" : "keep"}};
  build["duplicate_edges"] = {{"found", s.duplicates}, {"policy", o.remove_duplicate_edges ? "remove" : "keep"}};
  build["orig_eid_meaning"] = "e < input_edges: input edge row e; e >= input_edges: reverse of row e - input_edges";
  build["method_detail"] = s.metis_note;
  build["seed"] = o.seed;
  build["edge_cut"] = s.edge_cut;
  build["part_nodes"] = s.part_nodes;
  build["part_edges"] = s.part_edges;
  build["part_train_nodes"] = s.part_train;
  build["part_halo_nodes"] = s.part_halo;
  ASSIGN_OR_RETURN(std::string json, core::PartitionConfigToJson(cfg, build.dump()));
  {
    std::string p = (fs::path(staging.path()) / (name + ".json")).string();
    std::ofstream out(p);
    out << json;
    out.close();
    if (!out) return absl::InternalError(StrCat("cannot write ", p));
  }
  RETURN_IF_ERROR(staging.Commit());

  s.config_path = (fs::path(staging.dest()) / (name + ".json")).string();
  for (const auto& ph : timer.phases()) s.phases.push_back({ph.name, ph.seconds});
  s.total_seconds = timer.total_seconds();
  s.peak_rss_bytes = core::PeakRssBytes();
  return s;
}

std::string PartitionSummary::ToString() const {
  std::string r;
  r += StrCat("partition config: ", config_path, "\n");
  r += StrCat("method:           ", metis_note, "\n");
  r += StrCat("nodes:            ", num_nodes, "\n");
  r += StrCat("edges:            ", num_edges, " stored (", input_edges, " in the input; ", self_loops,
              " self loops, ", duplicates, " duplicates found)\n");
  double cut_frac = num_edges == 0 ? 0.0 : static_cast<double>(edge_cut) / num_edges;
  char buf[160];
  std::snprintf(buf, sizeof(buf), "edge cut:         %lld (%.2f%% of stored edges)\n",
                static_cast<long long>(edge_cut), 100.0 * cut_frac);
  r += buf;
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
  r += StrCat("peak memory:      ", Human(static_cast<double>(peak_rss_bytes)), " (RSS)\n");
  return r;
}

}  // namespace fanout::partition

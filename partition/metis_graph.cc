#include "partition/metis_graph.h"

#include <metis.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "base/parallel.h"
#include "base/strings.h"

namespace fanout::partition {

static_assert(sizeof(idx_t) == sizeof(int32_t), "fanout expects METIS built with 32-bit idx_t");

using base::StrCat;

std::string MetisGraph::Describe(const PartitionOptions& o) const {
  return StrCat("METIS k-way, objective ", o.objective_volume ? "volume" : "cut", ", balancing ",
                base::StrJoin(constraints, " + "));
}

namespace {

// The node weights: one column per node type with nodes on a typed graph (DistDGL's
// balance_ntypes), else one of every node; then training nodes (--balance-train) and in-edges
// (--balance-edges). A type without nodes gets no column: METIS cannot balance a constraint that
// weighs nothing.
void SetNodeWeights(const Dataset& d, const PartitionOptions& o, MetisGraph* gp) {
  MetisGraph& g = *gp;
  const int64_t n = d.num_nodes;
  std::vector<int> column_of_type(d.typed() ? d.node_types.size() : 1, 0);
  g.constraints.clear();
  if (d.typed()) {
    for (size_t t = 0; t < d.node_types.size(); ++t) {
      column_of_type[t] = static_cast<int>(g.constraints.size());
      if (d.node_type_offsets[t + 1] > d.node_type_offsets[t]) g.constraints.push_back(d.node_types[t] + " nodes");
    }
  } else {
    g.constraints.push_back("nodes");
  }
  const int T = static_cast<int>(g.constraints.size());
  std::vector<uint8_t> is_train;
  if (o.balance_train && d.has_split && !d.train_idx.empty()) {
    g.constraints.push_back("train nodes");
    is_train.assign(n, 0);
    for (int64_t v : d.train_idx) is_train[v] = 1;
  }
  std::vector<int32_t> in_deg;
  if (o.balance_edges) {
    g.constraints.push_back("in-edges");
    in_deg.assign(n, 0);
    EdgeView view(d, o.add_reverse_edges);
    for (int64_t v = 0; v < view.size(); ++v) ++in_deg[view.dst(v)];
  }
  g.ncon = static_cast<int32_t>(g.constraints.size());
  g.vwgt.resize(static_cast<size_t>(n) * g.ncon);
  for (int64_t v = 0; v < n; ++v) {
    int32_t* w = &g.vwgt[v * g.ncon];
    int c = T;
    w[column_of_type[d.NodeTypeOf(v)]] = 1;
    if (!is_train.empty()) w[c++] = is_train[v];
    if (!in_deg.empty()) w[c++] = in_deg[v];
  }
}

}  // namespace

absl::StatusOr<MetisGraph> BuildMetisGraph(const Dataset& d, const PartitionOptions& o) {
  const int64_t n = d.num_nodes;
  const int64_t m = d.num_edges();
  const int64_t* e = d.edges.data_as<int64_t>();
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (n >= kMax) {
    return absl::InvalidArgumentError(StrCat("METIS here uses 32-bit indices; ", n,
                                             " nodes are too many (use --part-method file with "
                                             "an assignment from ParMETIS or another tool)"));
  }
  // Symmetrise with a parallel counting sort: thread t counts and places a contiguous slice of
  // the input edges (both directions, self loops skipped), then rows are sorted and repeats
  // dropped in parallel, and compacted once.
  const int threads = o.num_threads > 0 ? o.num_threads : base::DefaultThreads();
  const int64_t slices = std::max<int64_t>(1, std::min<int64_t>(threads, m / std::max<int64_t>(1, 4 * n)));
  std::vector<std::vector<int64_t>> cursor(slices, std::vector<int64_t>(n, 0));
  auto slice = [&](int64_t t) { return std::pair{m * t / slices, m * (t + 1) / slices}; };
  (void)base::ParallelFor(threads, slices, [&](int64_t t) {
    auto [b, end] = slice(t);
    std::vector<int64_t>& c = cursor[t];
    for (int64_t i = b; i < end; ++i) {
      if (e[2 * i] == e[2 * i + 1]) continue;
      ++c[e[2 * i]];
      ++c[e[2 * i + 1]];
    }
    return absl::OkStatus();
  });
  std::vector<int64_t> offset(n + 1, 0);
  for (int64_t v = 0; v < n; ++v) {
    int64_t at = offset[v];
    for (int64_t t = 0; t < slices; ++t) {
      int64_t c = cursor[t][v];
      cursor[t][v] = at;
      at += c;
    }
    offset[v + 1] = at;
  }
  if (offset[n] >= kMax) {
    return absl::InvalidArgumentError(StrCat(
        "METIS here uses 32-bit indices; the symmetric graph has ", offset[n],
        " adjacency entries (limit 2^31-1). Use --part-method file with an external assignment"));
  }
  MetisGraph g;
  g.adjncy.resize(offset[n]);
  (void)base::ParallelFor(threads, slices, [&](int64_t t) {
    auto [b, end] = slice(t);
    std::vector<int64_t>& c = cursor[t];
    for (int64_t i = b; i < end; ++i) {
      int64_t u = e[2 * i], v = e[2 * i + 1];
      if (u == v) continue;
      g.adjncy[c[u]++] = static_cast<int32_t>(v);
      g.adjncy[c[v]++] = static_cast<int32_t>(u);
    }
    return absl::OkStatus();
  });
  cursor = {};
  // The edge list is not needed while METIS runs: let its mapped pages go.
  d.edges.DropPages(0, d.edges.nbytes());
  // Sort each row and drop repeats (input duplicates, edges given in both directions) in place;
  // `kept[v]` is the row's new length.
  std::vector<int32_t> kept(n);
  const int64_t chunks = std::min<int64_t>(n, 16 * threads);
  (void)base::ParallelFor(threads, chunks, [&](int64_t c) {
    for (int64_t v = n * c / chunks; v < n * (c + 1) / chunks; ++v) {
      int32_t* b = g.adjncy.data() + offset[v];
      int32_t* end = g.adjncy.data() + offset[v + 1];
      std::sort(b, end);
      kept[v] = static_cast<int32_t>(std::unique(b, end) - b);
    }
    return absl::OkStatus();
  });
  g.xadj.resize(n + 1);
  int32_t out = 0;
  for (int64_t v = 0; v < n; ++v) {
    g.xadj[v] = out;
    // out <= offset[v]: the row moves left or stays; memmove allows the overlap.
    std::memmove(g.adjncy.data() + out, g.adjncy.data() + offset[v], kept[v] * sizeof(int32_t));
    out += kept[v];
  }
  g.xadj[n] = out;
  g.adjncy.resize(out);
  g.adjncy.shrink_to_fit();
  offset = {};
  kept = {};
  SetNodeWeights(d, o, &g);
  return g;
}

absl::StatusOr<std::vector<int32_t>> RunMetis(MetisGraph& g, const PartitionOptions& o) {
  const int64_t n = static_cast<int64_t>(g.xadj.size()) - 1;
  std::vector<int32_t> part(n, 0);
  if (o.num_parts == 1) return part;  // METIS is not needed (and not reliable) for one part
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_OBJTYPE] = o.objective_volume ? METIS_OBJTYPE_VOL : METIS_OBJTYPE_CUT;
  options[METIS_OPTION_SEED] = static_cast<idx_t>(o.seed % 0x7fffffff);
  options[METIS_OPTION_NUMBERING] = 0;
  idx_t nvtxs = static_cast<idx_t>(n), nparts = o.num_parts, objval = 0, ncon = g.ncon;
  int rc = METIS_PartGraphKway(&nvtxs, &ncon, g.xadj.data(), g.adjncy.data(), g.vwgt.data(),
                               nullptr, nullptr, &nparts, nullptr, nullptr, options, &objval,
                               part.data());
  if (rc != METIS_OK) {
    return absl::InternalError(StrCat("METIS_PartGraphKway failed with code ", rc,
                                      rc == METIS_ERROR_MEMORY ? " (out of memory)" : ""));
  }
  return part;
}

}  // namespace fanout::partition

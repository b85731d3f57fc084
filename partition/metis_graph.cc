#include "partition/metis_graph.h"

#include <metis.h>

#include <algorithm>
#include <limits>

#include "core/progress.h"
#include "core/strings.h"

namespace fanout::partition {

static_assert(sizeof(idx_t) == sizeof(int32_t), "fanout expects METIS built with 32-bit idx_t");

using core::StrCat;

std::string MetisGraph::Describe(const PartitionOptions& o) const {
  return StrCat("METIS k-way, objective ", o.objective_volume ? "volume" : "cut", ", balancing ",
                core::StrJoin(constraints, " + "));
}

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
  // Degrees of the symmetrised graph, then a fill; int64 offsets until the total is checked.
  std::vector<int64_t> deg(n + 1, 0);
  for (int64_t i = 0; i < m; ++i) {
    if (e[2 * i] == e[2 * i + 1]) continue;
    ++deg[e[2 * i] + 1];
    ++deg[e[2 * i + 1] + 1];
  }
  for (int64_t v = 0; v < n; ++v) deg[v + 1] += deg[v];
  if (deg[n] >= kMax) {
    return absl::InvalidArgumentError(StrCat(
        "METIS here uses 32-bit indices; the symmetric graph has ", deg[n],
        " adjacency entries (limit 2^31-1). Use --part-method file with an external assignment"));
  }
  MetisGraph g;
  g.adjncy.resize(deg[n]);
  {
    std::vector<int64_t> fill(deg.begin(), deg.end() - 1);
    core::Progress progress("fanout-partition", "METIS input", m);
    for (int64_t i = 0; i < m; ++i) {
      int64_t u = e[2 * i], v = e[2 * i + 1];
      if (u == v) continue;
      g.adjncy[fill[u]++] = static_cast<int32_t>(v);
      g.adjncy[fill[v]++] = static_cast<int32_t>(u);
      if (!o.quiet) progress.Update(i);
    }
  }
  // The edge list is not needed while METIS runs: let its mapped pages go.
  d.edges.DropPages(0, d.edges.nbytes());
  // Sort each row, drop repeats (input duplicates and edges given in both directions).
  g.xadj.resize(n + 1);
  int32_t out = 0;
  for (int64_t v = 0; v < n; ++v) {
    int32_t* b = g.adjncy.data() + deg[v];
    int32_t* end = g.adjncy.data() + deg[v + 1];
    std::sort(b, end);
    int32_t* u = std::unique(b, end);
    g.xadj[v] = out;
    for (int32_t* p = b; p < u; ++p) g.adjncy[out++] = *p;
  }
  g.xadj[n] = out;
  g.adjncy.resize(out);
  g.adjncy.shrink_to_fit();
  deg = {};

  g.constraints = {"nodes"};
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
    int c = 0;
    w[c++] = 1;
    if (!is_train.empty()) w[c++] = is_train[v];
    if (!in_deg.empty()) w[c++] = in_deg[v];
  }
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

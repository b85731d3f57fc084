#include "partition/dist_coarsen.h"

#include <algorithm>
#include <functional>

#include "absl/container/flat_hash_map.h"

namespace fanout::partition {

std::vector<int64_t> AskOwners(const MpiComm& comm, const std::vector<int64_t>& vtxdist, const std::vector<int64_t>& ids,
                               const std::function<int64_t(int64_t)>& answer) {
  const int P = comm.size(), me = comm.rank();
  std::vector<std::vector<int64_t>> ask(P);
  for (int64_t v : ids) {
    const int r = static_cast<int>(std::upper_bound(vtxdist.begin(), vtxdist.end(), v) - vtxdist.begin()) - 1;
    ask[r].push_back(v);
  }
  std::vector<std::vector<int64_t>> asked = comm.AllToAll(ask);
  ask = {};
  for (std::vector<int64_t>& a : asked) {
    for (int64_t& v : a) v = answer(v - vtxdist[me]);
  }
  std::vector<int64_t> out;
  out.reserve(ids.size());
  for (const std::vector<int64_t>& a : comm.AllToAll(asked)) out.insert(out.end(), a.begin(), a.end());
  return out;
}

namespace {

uint64_t Scatter(int64_t v) {
  uint64_t x = static_cast<uint64_t>(v) + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

// The values of the ghosts (remote neighbours) of a rank, refreshed by one all-to-all: each owner
// learns once which of its vertices each rank needs.
class HaloPlan {
 public:
  HaloPlan(const MpiComm& comm, const DistGraph& g, std::vector<int64_t> ghosts) : comm_(comm), ghosts_(std::move(ghosts)) {
    std::vector<std::vector<int64_t>> ask(comm.size());
    for (int64_t v : ghosts_) ask[g.OwnerOf(v)].push_back(v);
    serve_ = comm.AllToAll(ask);
    for (std::vector<int64_t>& s : serve_) {
      for (int64_t& v : s) v -= g.first(comm.rank());
    }
  }
  const std::vector<int64_t>& ghosts() const { return ghosts_; }
  // values[0, n) are the local vertices'; values[n + j] becomes ghost j's.
  void Exchange(std::vector<int64_t>* values, int64_t n) const {
    std::vector<std::vector<int64_t>> send(serve_.size());
    for (size_t p = 0; p < serve_.size(); ++p) {
      send[p].reserve(serve_[p].size());
      for (int64_t i : serve_[p]) send[p].push_back((*values)[i]);
    }
    int64_t at = n;
    for (const std::vector<int64_t>& got : comm_.AllToAll(send)) {
      std::copy(got.begin(), got.end(), values->begin() + at);
      at += static_cast<int64_t>(got.size());
    }
  }

 private:
  const MpiComm& comm_;
  std::vector<int64_t> ghosts_;
  std::vector<std::vector<int64_t>> serve_;  // per rank: the local vertices it needs, in its order
};

int DistGraph::OwnerOf(int64_t v) const {
  return static_cast<int>(std::upper_bound(vtxdist.begin(), vtxdist.end(), v) - vtxdist.begin()) - 1;
}

ArcSlots::ArcSlots(const MpiComm& comm, const DistGraph& g) : n_(g.num_local()) {
  const int64_t first = g.first(comm.rank()), n = n_;
  std::vector<int64_t> ghosts;
  for (int64_t u : g.adj) {
    if (u < first || u >= first + n) ghosts.push_back(u);
  }
  std::sort(ghosts.begin(), ghosts.end());
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
  halo_ = std::make_unique<HaloPlan>(comm, g, std::move(ghosts));
  slot_.resize(g.adj.size());
  const std::vector<int64_t>& gh = halo_->ghosts();
  for (size_t j = 0; j < g.adj.size(); ++j) {
    const int64_t u = g.adj[j];
    slot_[j] = u >= first && u < first + n ? u - first : n + (std::lower_bound(gh.begin(), gh.end(), u) - gh.begin());
  }
}

ArcSlots::~ArcSlots() = default;
int64_t ArcSlots::num_ghosts() const { return static_cast<int64_t>(halo_->ghosts().size()); }
const std::vector<int64_t>& ArcSlots::ghosts() const { return halo_->ghosts(); }
void ArcSlots::Exchange(std::vector<int64_t>* values) const { halo_->Exchange(values, n_); }

namespace {

int64_t VertexWeight(const DistGraph& g, int64_t i) { return g.vw.empty() ? int64_t{1} : g.vw[i]; }
int64_t ArcWeight(const DistGraph& g, int64_t j) { return g.arc_w.empty() ? int64_t{1} : g.arc_w[j]; }

// Size-constrained label propagation: each vertex joins the cluster most of its arc weight leads
// to, while the cluster stays within max_cluster_weight. Returns a label per local vertex, then
// per ghost: its cluster's ID (a member's global ID).
std::vector<int64_t> PropagateLabels(const MpiComm& comm, const DistGraph& g, const ArcSlots& arcs,
                                     int64_t max_cluster_weight, int iterations) {
  const int64_t n = g.num_local(), first = g.first(comm.rank());
  auto vw = [&](int64_t i) { return VertexWeight(g, i); };
  auto aw = [&](int64_t j) { return ArcWeight(g, j); };
  const std::vector<int64_t>& slot = arcs.slot();
  std::vector<int64_t> label(n + arcs.num_ghosts());
  for (int64_t i = 0; i < n; ++i) label[i] = first + i;
  std::copy(arcs.ghosts().begin(), arcs.ghosts().end(), label.begin() + n);
  absl::flat_hash_map<int64_t, int64_t> weight;  // this rank's share of each cluster
  weight.reserve(n);
  for (int64_t i = 0; i < n; ++i) weight[first + i] = vw(i);
  // A vertex's votes: (label, arc weight) pairs sorted and summed per label (a hash map cleared per
  // vertex would cost its largest capacity, a hub's, on every vertex after the hub).
  std::vector<std::pair<int64_t, int64_t>> votes;
  auto weight_of = [&](int64_t l) {
    auto at = weight.find(l);
    return at == weight.end() ? int64_t{0} : at->second;
  };
  for (int it = 0; it < iterations; ++it) {
    int64_t moved = 0;
    for (int64_t i = 0; i < n; ++i) {
      votes.clear();
      for (int64_t j = g.vert[i]; j < g.vert[i + 1]; ++j) votes.push_back({label[slot[j]], aw(j)});
      std::sort(votes.begin(), votes.end());
      size_t runs = 0;
      for (size_t k = 0; k < votes.size(); ++k) {
        if (runs > 0 && votes[runs - 1].first == votes[k].first) {
          votes[runs - 1].second += votes[k].second;
        } else {
          votes[runs++] = votes[k];
        }
      }
      votes.resize(runs);
      const int64_t mine = label[i];
      int64_t best = mine, best_votes = 0;
      for (const auto& [l, c] : votes) {
        if (l == mine) best_votes = c;
      }
      for (const auto& [l, c] : votes) {
        if (l == mine || weight_of(l) + vw(i) > max_cluster_weight) continue;
        // Ties go to the label with the smaller hash: a fixed but scattered choice, so that cluster
        // leaders (which own the coarse vertices) are spread over the ranks, not the lowest IDs.
        if (c > best_votes || (c == best_votes && Scatter(l) < Scatter(best))) best = l, best_votes = c;
      }
      if (best != mine) {
        weight[mine] -= vw(i);
        weight[best] += vw(i);
        label[i] = best;
        ++moved;
      }
    }
    arcs.Exchange(&label);
    if (comm.SumInt64(moved) == 0) break;
  }
  return label;
}

// The clusters this rank leads (those whose label it owns): their labels, sorted, and their
// summed weights.
void LeadClusters(const MpiComm& comm, const DistGraph& g, const std::vector<int64_t>& label,
                  std::vector<int64_t>* led, std::vector<int64_t>* led_weight) {
  std::vector<std::vector<int64_t>> to_owner(comm.size());  // (label, weight) pairs
  {
    absl::flat_hash_map<int64_t, int64_t> local;
    for (int64_t i = 0; i < g.num_local(); ++i) local[label[i]] += VertexWeight(g, i);
    std::vector<std::pair<int64_t, int64_t>> sorted(local.begin(), local.end());
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [l, w] : sorted) {
      auto& b = to_owner[g.OwnerOf(l)];
      b.push_back(l), b.push_back(w);
    }
  }
  std::vector<std::pair<int64_t, int64_t>> got;
  for (const std::vector<int64_t>& b : comm.AllToAll(to_owner)) {
    for (size_t k = 0; k < b.size(); k += 2) got.push_back({b[k], b[k + 1]});
  }
  std::sort(got.begin(), got.end());
  for (const auto& [l, w] : got) {
    if (!led->empty() && led->back() == l) {
      led_weight->back() += w;
    } else {
      led->push_back(l);
      led_weight->push_back(w);
    }
  }
}

// The coarse arcs of rank `me`'s coarse vertices: the fine arcs between clusters (labels now
// coarse IDs), merged with summed weights, sent to the owner of their source cluster, which
// merges again. Sets c's vert, adj and arc_w.
void BuildCoarseArcs(const MpiComm& comm, const DistGraph& g, const ArcSlots& arcs, std::vector<int64_t> label,
                     DistGraph* c) {
  const int P = comm.size(), me = comm.rank();
  const std::vector<int64_t>& slot = arcs.slot();
  std::vector<std::vector<int64_t>> coarse_arcs(P);  // (source, target, weight) triples
  std::vector<std::pair<std::pair<int64_t, int64_t>, int64_t>> batch;
  auto flush = [&] {
    std::sort(batch.begin(), batch.end());
    for (size_t k = 0; k < batch.size();) {
      size_t e = k;
      int64_t w = 0;
      while (e < batch.size() && batch[e].first == batch[k].first) w += batch[e++].second;
      auto& b = coarse_arcs[c->OwnerOf(batch[k].first.first)];
      b.push_back(batch[k].first.first), b.push_back(batch[k].first.second), b.push_back(w);
      k = e;
    }
    batch.clear();
  };
  for (int64_t i = 0; i < g.num_local(); ++i) {
    const int64_t cv = label[i];
    for (int64_t j = g.vert[i]; j < g.vert[i + 1]; ++j) {
      const int64_t cu = label[slot[j]];
      if (cu != cv) batch.push_back({{cv, cu}, ArcWeight(g, j)});
    }
    if (batch.size() >= (size_t{4} << 20)) flush();
  }
  flush();
  batch = {};
  label = {};
  std::vector<std::vector<int64_t>> got = comm.AllToAll(coarse_arcs);
  coarse_arcs = {};
  std::vector<std::pair<std::pair<int64_t, int64_t>, int64_t>> mine;
  for (std::vector<int64_t>& b : got) {
    for (size_t k = 0; k < b.size(); k += 3) mine.push_back({{b[k], b[k + 1]}, b[k + 2]});
    b = {};
  }
  std::sort(mine.begin(), mine.end());
  const int64_t cn = c->vtxdist[me + 1] - c->vtxdist[me], cfirst = c->vtxdist[me];
  c->vert.assign(cn + 1, 0);
  for (size_t k = 0; k < mine.size();) {
    size_t e = k;
    int64_t w = 0;
    while (e < mine.size() && mine[e].first == mine[k].first) w += mine[e++].second;
    ++c->vert[mine[k].first.first - cfirst + 1];
    c->adj.push_back(mine[k].first.second);
    c->arc_w.push_back(w);
    k = e;
  }
  for (int64_t v = 0; v < cn; ++v) c->vert[v + 1] += c->vert[v];
}

}  // namespace

DistGraph CoarsenByLabelPropagation(const MpiComm& comm, const DistGraph& g, const ArcSlots& arcs,
                                    int64_t max_cluster_weight, int iterations, std::vector<int64_t>* coarse_of) {
  const int P = comm.size(), me = comm.rank();
  const int64_t n = g.num_local(), first = g.first(me);
  std::vector<int64_t> label = PropagateLabels(comm, g, arcs, max_cluster_weight, iterations);
  // Clusters become coarse vertices owned by their label's owner, numbered in label order there.
  std::vector<int64_t> led, led_weight;
  LeadClusters(comm, g, label, &led, &led_weight);
  DistGraph c;
  {
    const std::vector<int64_t> counts = comm.AllGather({static_cast<int64_t>(led.size())});
    c.vtxdist.assign(P + 1, 0);
    for (int p = 0; p < P; ++p) c.vtxdist[p + 1] = c.vtxdist[p] + counts[p];
  }
  // Every label this rank sees (its vertices' and its ghosts'), to its coarse vertex.
  std::vector<int64_t> labels(label);
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  const std::vector<int64_t> coarse_id = AskOwners(comm, g.vtxdist, labels, [&](int64_t local_label) {
    const int64_t l = local_label + first;
    return c.vtxdist[me] + (std::lower_bound(led.begin(), led.end(), l) - led.begin());
  });
  for (int64_t& l : label) l = coarse_id[std::lower_bound(labels.begin(), labels.end(), l) - labels.begin()];
  labels = {};
  coarse_of->assign(label.begin(), label.begin() + n);
  BuildCoarseArcs(comm, g, arcs, std::move(label), &c);
  c.vw = std::move(led_weight);
  return c;
}

int64_t RefineByLabelPropagation(const MpiComm& comm, const DistGraph& g, const ArcSlots& arcs, int num_parts,
                                 double imbalance, int rounds, std::vector<int64_t>* part) {
  const int P = comm.size();
  const int64_t n = g.num_local();
  auto vw = [&](int64_t i) { return g.vw.empty() ? int64_t{1} : g.vw[i]; };
  auto aw = [&](int64_t j) { return g.arc_w.empty() ? int64_t{1} : g.arc_w[j]; };
  const std::vector<int64_t>& slot = arcs.slot();
  std::vector<int64_t> value(n + arcs.num_ghosts());
  std::copy(part->begin(), part->end(), value.begin());
  arcs.Exchange(&value);
  auto loads = [&] {
    std::vector<int64_t> w(num_parts, 0);
    for (int64_t i = 0; i < n; ++i) w[value[i]] += vw(i);
    return comm.AllSum(w);
  };
  std::vector<int64_t> load = loads();
  int64_t total = 0;
  for (int64_t w : load) total += w;
  const int64_t max_load = static_cast<int64_t>((1.0 + imbalance) * static_cast<double>(total) / num_parts) + 1;
  std::vector<int64_t> conn(num_parts, 0), room(num_parts);
  std::vector<int> touched;
  int64_t moved_all = 0, quiet_rounds = 0;
  for (int round = 0; round < rounds && quiet_rounds < 2; ++round) {
    for (int q = 0; q < num_parts; ++q) room[q] = std::max<int64_t>(0, max_load - load[q]) / P;
    const bool up = round % 2 == 0;
    int64_t moved = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t cur = value[i];
      for (int64_t j = g.vert[i]; j < g.vert[i + 1]; ++j) {
        const int64_t q = value[slot[j]];
        if (conn[q] == 0) touched.push_back(static_cast<int>(q));
        conn[q] += aw(j);
      }
      int64_t best = cur, best_gain = 0;
      for (int q : touched) {
        if (q == cur || (up ? q < cur : q > cur) || room[q] < vw(i)) continue;
        const int64_t gain = conn[q] - conn[cur];
        if (gain > best_gain || (gain == best_gain && gain > 0 && q < best)) best = q, best_gain = gain;
      }
      for (int q : touched) conn[q] = 0;
      touched.clear();
      if (best != cur) {
        room[best] -= vw(i);
        value[i] = best;
        ++moved;
      }
    }
    arcs.Exchange(&value);
    load = loads();
    moved = comm.SumInt64(moved);
    moved_all += moved;
    quiet_rounds = moved == 0 ? quiet_rounds + 1 : 0;
  }
  std::copy(value.begin(), value.begin() + n, part->begin());
  return moved_all;
}

std::vector<int64_t> ProjectToFine(const MpiComm& comm, const DistGraph& coarse,
                                   const std::vector<int64_t>& coarse_value, const std::vector<int64_t>& coarse_of) {
  std::vector<int64_t> ids(coarse_of);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  const std::vector<int64_t> values =
      AskOwners(comm, coarse.vtxdist, ids, [&](int64_t local) { return coarse_value[local]; });
  std::vector<int64_t> out(coarse_of.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = values[std::lower_bound(ids.begin(), ids.end(), coarse_of[i]) - ids.begin()];
  }
  return out;
}

}  // namespace fanout::partition

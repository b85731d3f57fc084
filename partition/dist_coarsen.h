// One level of distributed coarsening for the distributed partitioner: size-constrained label
// propagation clusters the graph (as ParHIP and KaMinPar do), and the clusters are contracted into
// a weighted graph with the same cut for any partition of the clusters. PT-Scotch's multilevel
// hierarchy costs about 90 bytes per arc of its input on each rank (int64 build), so handing it
// the contracted graph instead is what keeps the partitioner's per-rank memory within a fraction of
// the single-machine tool's (docs/partitioning.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "partition/mpi_comm.h"

namespace fanout::partition {

// A symmetric graph distributed by blocks: rank r owns the vertices [vtxdist[r], vtxdist[r+1]).
struct DistGraph {
  std::vector<int64_t> vtxdist;  // P + 1
  std::vector<int64_t> vert;     // local CSR offsets, n + 1
  std::vector<int64_t> adj;      // global neighbour IDs, no self loops, no repeats
  std::vector<int64_t> arc_w;    // arc weights (same length as adj), empty = all 1
  std::vector<int64_t> vw;       // vertex weights (n), empty = all 1

  int64_t first(int rank) const { return vtxdist[rank]; }
  int64_t num_local() const { return static_cast<int64_t>(vert.size()) - 1; }
  int64_t num_global() const { return vtxdist.back(); }
  int OwnerOf(int64_t v) const;
};

class HaloPlan;

// A rank's view of its arcs: each arc's "slot" (a local neighbour's index, or n + the index of a
// remote neighbour among the sorted ghosts), and how ghost values are refreshed. Built once; the
// global neighbour IDs (DistGraph::adj) are not needed after it.
class ArcSlots {
 public:
  ArcSlots(const MpiComm& comm, const DistGraph& g);
  ~ArcSlots();
  const std::vector<int64_t>& slot() const { return slot_; }
  int64_t num_ghosts() const;
  // values[0, n) hold the local vertices' values; values[n, n + ghosts) get the ghosts' (collective).
  void Exchange(std::vector<int64_t>* values) const;
  const std::vector<int64_t>& ghosts() const;

 private:
  int64_t n_;
  std::unique_ptr<HaloPlan> halo_;
  std::vector<int64_t> slot_;
};

// The owners' answers for `ids` (sorted, unique, global IDs of a graph distributed by `vtxdist`):
// each owner is asked once for its IDs and answers with `answer(local index)`; the result lines up
// with `ids`. Collective.
std::vector<int64_t> AskOwners(const MpiComm& comm, const std::vector<int64_t>& vtxdist, const std::vector<int64_t>& ids,
                               const std::function<int64_t(int64_t)>& answer);

// Label propagation (`iterations` sweeps, neighbours' labels exchanged after each) with clusters
// of at most `max_cluster_weight` on any one rank, then contraction. Collective. Returns the
// coarse graph, distributed so that each rank owns the clusters it leads, and sets (*coarse_of)[i]
// to the coarse vertex of local fine vertex i.
DistGraph CoarsenByLabelPropagation(const MpiComm& comm, const DistGraph& g, const ArcSlots& arcs, int64_t max_cluster_weight,
                                    int iterations, std::vector<int64_t>* coarse_of);

// Refines a K-way partition of `g` (part: one per local vertex) by label propagation: in each of
// `rounds` rounds every vertex moves to the part most of its arc weight goes to when that lowers
// the cut and keeps the part under (1 + imbalance) times the average load (each rank may fill a
// 1/P share of a part's room per round; moves go only up in even rounds, only down in odd ones,
// so that two neighbours on different ranks do not swap). Collective; returns the vertices moved.
int64_t RefineByLabelPropagation(const MpiComm& comm, const DistGraph& g, const ArcSlots& arcs, int num_parts,
                                 double imbalance, int rounds, std::vector<int64_t>* part);

// Each local fine vertex's value, given one per local coarse vertex (`coarse_value`). Collective.
std::vector<int64_t> ProjectToFine(const MpiComm& comm, const DistGraph& coarse,
                                   const std::vector<int64_t>& coarse_value, const std::vector<int64_t>& coarse_of);

}  // namespace fanout::partition

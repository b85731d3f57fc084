// Node -> partition assignment for the distributed partitioner: PT-Scotch on the graph contracted
// by label propagation (refined on the way back), a balanced random one, or an .npy file.
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <random>

#include <scotch-int64/ptscotch.h>

#include "base/progress.h"
#include "base/status.h"
#include "partition/dist_coarsen.h"
#include "partition/dist_job.h"

namespace fanout::partition::dist {

namespace fs = std::filesystem;

namespace {

// A level of the contraction: its graph, its arc slots (kept for the refinement on the way
// back), and each local vertex's vertex in the next level.
struct Level {
  DistGraph g;
  std::unique_ptr<ArcSlots> slots;
  std::vector<int64_t> coarse_of;
};

// PT-Scotch's multilevel hierarchy costs about 90 bytes per arc on each rank, so it gets the
// graph contracted by label propagation (dist_coarsen.h), level after level, until at most
// max_edges edges are left: clusters of at most 1/(1000 K P) of the load on the first level, 8
// times that on each next one, never above 1/(16 K P). Returns the levels, the finest first, and
// the vertex counts down them in `path`.
std::vector<Level> Contract(const MpiComm& comm, DistGraph g, int64_t load, int K, int64_t max_edges,
                            const std::function<void(const std::string&)>& log, std::string* path) {
  constexpr int kMaxLevels = 4;
  const int P = comm.size();
  const int64_t largest = load / (int64_t{16} * K * P);
  int64_t cap = std::max<int64_t>(2, load / (int64_t{1000} * K * P));
  std::vector<Level> levels;
  levels.push_back({std::move(g), nullptr, {}});
  while (max_edges > 0 && static_cast<int>(levels.size()) <= kMaxLevels && cap <= largest) {
    Level& fine = levels.back();
    const int64_t fine_arcs = comm.SumInt64(fine.g.vert.back());
    if (fine_arcs <= 2 * max_edges) break;
    log(StrCat("contracting level ", levels.size() - 1, " (", fine.g.num_global(), " vertices, ", fine_arcs / 2,
               " edges) by label propagation, clusters of at most ", cap));
    fine.slots = std::make_unique<ArcSlots>(comm, fine.g);
    fine.g.adj = {};
    fine.g.adj.shrink_to_fit();
    DistGraph coarse = CoarsenByLabelPropagation(comm, fine.g, *fine.slots, cap, 5, &fine.coarse_of);
    const int64_t before = fine.g.num_global(), after = coarse.num_global();
    *path += StrCat(" -> ", after);
    levels.push_back({std::move(coarse), nullptr, {}});  // (`fine` dangles from here)
    if (after * 10 > before * 9) break;  // hardly shrinking: stop here
    cap *= 8;
  }
  return levels;
}

// PT-Scotch's K-way partition of `h` (vertex loads when `vertex_loads`, arc loads when
// `arc_loads`), one part per local vertex. Every rank calls it.
absl::StatusOr<std::vector<SCOTCH_Num>> RunScotch(const MpiComm& comm, const DistGraph& h, int K, uint64_t seed,
                                                  bool vertex_loads, bool arc_loads) {
  const int64_t hn = h.num_local();
  // PT-Scotch's arrays are not const in its interface; it does not write them.
  DistGraph& hm = const_cast<DistGraph&>(h);
  SCOTCH_Dgraph sg;
  SCOTCH_Strat strat;
  std::vector<SCOTCH_Num> part(std::max<int64_t>(hn, 1));
  int rc = SCOTCH_dgraphInit(&sg, MPI_COMM_WORLD);
  std::string step = "SCOTCH_dgraphInit";
  if (rc == 0) {
    // Every rank must pass loads or none (a rank may hold no vertex or no arc of the coarse graph).
    // (PT-Scotch takes an array equal to another for absent, so each empty one gets its own.)
    static SCOTCH_Num none[3] = {0, 0, 0};
    auto loads = [](std::vector<int64_t>& v, bool given, int k) { return !given ? nullptr : v.empty() ? &none[k] : v.data(); };
    rc = SCOTCH_dgraphBuild(&sg, 0, hn, hn, hm.vert.data(), hm.vert.data() + 1, loads(hm.vw, vertex_loads, 0),
                            nullptr, hm.vert.back(), hm.vert.back(), hm.adj.empty() ? &none[1] : hm.adj.data(), nullptr,
                            loads(hm.arc_w, arc_loads, 2));
    step = "SCOTCH_dgraphBuild";
    if (rc == 0) {
      SCOTCH_stratInit(&strat);
      SCOTCH_randomSeed(static_cast<SCOTCH_Num>(seed));
      SCOTCH_randomReset();
      rc = SCOTCH_stratDgraphMapBuild(&strat, SCOTCH_STRATDEFAULT, comm.size(), K, 0.03);
      step = "SCOTCH_stratDgraphMapBuild";
      if (rc == 0) {
        rc = SCOTCH_dgraphPart(&sg, K, &strat, part.data());
        step = "SCOTCH_dgraphPart";
      }
      SCOTCH_stratExit(&strat);
    }
    SCOTCH_dgraphExit(&sg);
  }
  RETURN_IF_ERROR(comm.Agree(rc == 0 ? absl::OkStatus()
                                     : absl::InternalError(StrCat(step, " failed with code ", rc,
                                                                  " (PT-Scotch's message is above)"))));
  part.resize(hn);
  return part;
}

}  // namespace

// The symmetric graph of this rank's node block, built in place: a first pass counts each
// vertex's arcs (every edge (u, v), u != v, is an arc of u at u's owner and of v at v's), a
// second sends the arcs into their rows; rows are then sorted and repeats dropped.
DistGraph Job::SymmetricBlock() {
  const int64_t n = nb_.size();
  DistGraph g;
  g.vtxdist = BlockBounds(N_, P_);
  g.vert.assign(n + 1, 0);
  const int64_t rounds = comm_.MaxInt64((eb_.size() + kBatchEdges - 1) / kBatchEdges);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<int64_t> at;
    if (pass == 1) {
      for (int64_t v = 0; v < n; ++v) g.vert[v + 1] += g.vert[v];
      g.adj.resize(g.vert[n]);
      at.assign(g.vert.begin(), g.vert.end() - 1);
    }
    for (int64_t round = 0; round < rounds; ++round) {
      std::vector<std::vector<int64_t>> send(P_);
      const int64_t lo = std::min(eb_.size(), round * kBatchEdges), hi = std::min(eb_.size(), lo + kBatchEdges);
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t u = edges_[2 * i], v = edges_[2 * i + 1];
        if (u == v) continue;
        auto& a = send[BlockOwner(N_, P_, u)];
        auto& b = send[BlockOwner(N_, P_, v)];
        if (pass == 0) {
          a.push_back(u), b.push_back(v);
        } else {
          a.push_back(u), a.push_back(v), b.push_back(v), b.push_back(u);
        }
      }
      for (std::vector<int64_t>& got : comm_.AllToAll(send)) {
        if (pass == 0) {
          for (int64_t u : got) ++g.vert[u - nb_.begin + 1];
        } else {
          for (size_t k = 0; k < got.size(); k += 2) g.adj[at[got[k] - nb_.begin]++] = got[k + 1];
        }
        got = {};
      }
    }
  }
  int64_t out = 0;
  for (int64_t v = 0; v < n; ++v) {
    int64_t* b = g.adj.data() + g.vert[v];
    int64_t* e = g.adj.data() + g.vert[v + 1];
    std::sort(b, e);
    const int64_t kept = std::unique(b, e) - b;
    g.vert[v] = out;
    std::memmove(g.adj.data() + out, b, kept * sizeof(int64_t));
    out += kept;
  }
  g.vert[n] = out;
  g.adj.resize(out);
  return g;
}

absl::Status Job::AssignWithScotch() {
  const int64_t n = nb_.size();
  DistGraph g = SymmetricBlock();
  // One vertex weight: PT-Scotch balances a single load. With a split, training nodes weigh 2, so
  // the load balances nodes and training nodes together (the serial tool gives METIS two constraints).
  const bool weigh_train = o_.balance_train && in_.has_split;
  if (weigh_train) {
    g.vw.resize(n);
    for (int64_t v = 0; v < n; ++v) g.vw[v] = 1 + masks_[0][v];
  }
  const int64_t load = comm_.SumInt64(weigh_train ? std::accumulate(g.vw.begin(), g.vw.end(), int64_t{0}) : n);
  std::string path = StrCat(N_, " nodes");
  std::vector<Level> levels =
      Contract(comm_, std::move(g), load, K_, o_.scotch_max_edges, [this](const std::string& m) { Log(m); }, &path);
  const DistGraph& h = levels.back().g;
  const int64_t harcs = comm_.SumInt64(h.vert.back());
  const bool coarsen = levels.size() > 1;
  s_.metis_note = StrCat("PT-Scotch k-way on ", P_, " rank", P_ == 1 ? "" : "s",
                         coarsen ? StrCat(" of the graph contracted by label propagation (", path, " vertices, ",
                                          harcs / 2, " edges), refined at each level")
                                 : "",
                         ", balancing ", weigh_train ? "nodes + train nodes (one load: train nodes weigh 2)" : "nodes");
  Log(StrCat("running PT-Scotch: ", h.num_global(), " vertices, ", harcs / 2, " undirected edges, ", K_, " parts, ",
             P_, " ranks"));
  std::optional<base::ElapsedTicker> ticker;
  if (r_ == 0 && !o_.quiet && base::ProgressEnabled(base::GetProgressMode())) {
    ticker.emplace(kTool, "PT-Scotch still running", 15.0);
  }
  ASSIGN_OR_RETURN(std::vector<SCOTCH_Num> part, RunScotch(comm_, h, K_, o_.seed, coarsen || weigh_train, coarsen));
  ticker.reset();
  // Back up the levels: each level's vertices take their cluster's part, then vertices the
  // clustering put with the wrong neighbours move to their neighbours' part. Refinement rounds
  // per level (it stops earlier after two rounds without a move): a rank may fill only a P-th of
  // a part's room per round and moves alternate direction, so it converges in tens of rounds; 12
  // left products at 8 parts 16 % above serial METIS's cut, 48 reach it.
  constexpr int kRefineRounds = 48;
  int64_t moved = 0;
  for (int l = static_cast<int>(levels.size()) - 2; l >= 0; --l) {
    part = ProjectToFine(comm_, levels[l + 1].g, part, levels[l].coarse_of);
    levels[l + 1] = {};
    levels[l].coarse_of = {};
    moved += RefineByLabelPropagation(comm_, levels[l].g, *levels[l].slots, K_, 0.03, kRefineRounds, &part);
  }
  if (coarsen) Log(StrCat("refined on ", levels.size() - 1, " level(s): ", moved, " moves"));
  part_.resize(n);
  for (int64_t v = 0; v < n; ++v) part_[v] = static_cast<int32_t>(part[v]);
  return absl::OkStatus();
}

absl::Status Job::Assign() {
  const int64_t n = nb_.size();
  if (K_ == 1) {
    part_.assign(n, 0);
    s_.metis_note = "one partition";
    return absl::OkStatus();
  }
  switch (o_.method) {
    case PartMethod::kMetis:
      return AssignWithScotch();
    case PartMethod::kRandom: {
      // Balanced: the block's nodes in a seeded random order take partitions round robin, counted
      // from the block's first global position, so every partition gets N / K nodes (+-1).
      std::vector<int64_t> perm(n);
      std::iota(perm.begin(), perm.end(), 0);
      std::mt19937_64 rng(o_.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(r_));
      std::shuffle(perm.begin(), perm.end(), rng);
      part_.resize(n);
      for (int64_t i = 0; i < n; ++i) part_[perm[i]] = static_cast<int32_t>((nb_.begin + i) % K_);
      s_.metis_note = StrCat("random, balanced, seed ", o_.seed, " (", P_, " ranks)");
      return absl::OkStatus();
    }
    case PartMethod::kFile: {
      absl::Status st = [&]() -> absl::Status {
        if (fs::path(o_.assignment_file).extension() != ".npy") {
          return absl::InvalidArgumentError(StrCat("--assignment ", o_.assignment_file,
                                                   ": --distributed reads an integer .npy (one entry per node)"));
        }
        ASSIGN_OR_RETURN(ChunkedArray a, ChunkedArray::Open({o_.assignment_file}));
        if (!a.row_shape().empty() || a.rows() != N_) {
          return absl::InvalidArgumentError(StrCat(o_.assignment_file, ": expected a 1-D array of ", N_,
                                                   " partition IDs (one per node), found ", a.rows(), " rows"));
        }
        ASSIGN_OR_RETURN(std::vector<int64_t> v, a.ReadInts(nb_.begin, nb_.end));
        part_.resize(n);
        for (int64_t i = 0; i < n; ++i) {
          if (v[i] < 0 || v[i] >= K_) {
            return absl::InvalidArgumentError(StrCat(a.Where(nb_.begin + i), ": partition ", v[i], " is outside [0, ",
                                                     K_, ") (--num-parts)"));
          }
          part_[i] = static_cast<int32_t>(v[i]);
        }
        return absl::OkStatus();
      }();
      s_.metis_note = StrCat("from ", o_.assignment_file);
      return comm_.Agree(st);
    }
  }
  return absl::OkStatus();
}

}  // namespace fanout::partition::dist

#include "core/sampling.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "base/status.h"
#include "base/strings.h"
#include "core/random.h"
#include "core/shape.h"

namespace fanout::core {
namespace {

// A SplitMix64 counter generator, seeded per node so draws are independent of batching.
class Rng {
 public:
  Rng(uint64_t seed, int64_t node) : state_(SplitMix64(seed ^ SplitMix64(static_cast<uint64_t>(node)))) {}
  uint64_t Next() {
    uint64_t s = state_;
    state_ += 0x9e3779b97f4a7c15ULL;  // SplitMix64's own step: outputs mix(s + k * golden)
    return SplitMix64(s);
  }
  // Uniform in [0, n) (Lemire's multiply-shift; the bias is below 2^-40 for n < 2^24).
  int64_t Below(int64_t n) {
    return static_cast<int64_t>((static_cast<unsigned __int128>(Next()) * static_cast<uint64_t>(n)) >> 64);
  }
  // Uniform in (0, 1].
  double Unit() { return (static_cast<double>(Next() >> 11) + 1.0) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t state_;
};

// k distinct positions of [0, d), ascending (k < d).
void UniformWithoutReplacement(Rng& rng, int64_t d, int64_t k, std::vector<int64_t>* pick,
                               std::vector<int64_t>* scratch) {
  pick->clear();
  if (k <= 64) {
    // Floyd's algorithm: k draws, membership by a scan of at most k entries.
    for (int64_t j = d - k; j < d; ++j) {
      int64_t t = rng.Below(j + 1);
      bool seen = std::find(pick->begin(), pick->end(), t) != pick->end();
      pick->push_back(seen ? j : t);
    }
  } else {
    // Partial Fisher-Yates over an index array.
    scratch->resize(d);
    for (int64_t i = 0; i < d; ++i) (*scratch)[i] = i;
    for (int64_t i = 0; i < k; ++i) std::swap((*scratch)[i], (*scratch)[i + rng.Below(d - i)]);
    pick->assign(scratch->begin(), scratch->begin() + k);
  }
  std::sort(pick->begin(), pick->end());
}

// Efraimidis-Spirakis: the k largest keys log(u)/w among positive weights, ascending positions.
void WeightedWithoutReplacement(Rng& rng, const double* w, int64_t d, int64_t k, std::vector<int64_t>* pick,
                                std::vector<std::pair<double, int64_t>>* keys) {
  keys->clear();
  for (int64_t i = 0; i < d; ++i) {
    if (w[i] > 0) keys->emplace_back(std::log(rng.Unit()) / w[i], i);
  }
  pick->clear();
  if (static_cast<int64_t>(keys->size()) > k) {
    std::nth_element(keys->begin(), keys->begin() + k, keys->end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    keys->resize(k);
  }
  for (const auto& [key, i] : *keys) pick->push_back(i);
  std::sort(pick->begin(), pick->end());
}

void WeightedWithReplacement(Rng& rng, const double* w, int64_t d, int64_t k, std::vector<int64_t>* pick,
                             std::vector<double>* cdf) {
  cdf->resize(d);
  double total = 0;
  for (int64_t i = 0; i < d; ++i) (*cdf)[i] = total += w[i];
  pick->clear();
  if (total <= 0) return;
  for (int64_t j = 0; j < k; ++j) {
    double x = (1.0 - rng.Unit()) * total;  // [0, total)
    int64_t i = std::upper_bound(cdf->begin(), cdf->end(), x) - cdf->begin();
    pick->push_back(std::min(i, d - 1));
  }
}

absl::Status CheckSampleOptions(const PartitionStore& store, std::span<const int64_t> seeds,
                                const SampleOptions& o) {
  RETURN_IF_ERROR(CheckFanout(o.fanout));
  const int r = store.num_edge_types();
  if (o.etype < -1 || o.etype >= r) {
    return absl::InvalidArgumentError(base::StrCat("edge type ", o.etype, " does not exist: the graph has ", r,
                                             r == 1 ? " (0)" : base::StrCat(" (0..", r - 1, ")")));
  }
  if (!o.etype_fanouts.empty()) {
    if (static_cast<int>(o.etype_fanouts.size()) != r) {
      return absl::InvalidArgumentError(
          base::StrCat(o.etype_fanouts.size(), " per-relation fanouts for a graph of ", r, " edge types"));
    }
    for (int64_t f : o.etype_fanouts) RETURN_IF_ERROR(CheckFanout(f));
  }
  if (r > 1 && o.dir == EdgeDir::kOut) {
    return absl::UnimplementedError("sampling out-edges of a typed graph is not supported yet: sample in-edges");
  }
  RETURN_IF_ERROR(store.CheckOwnedNodes(seeds));
  return o.dir == EdgeDir::kOut ? store.LoadOutEdges() : absl::OkStatus();
}

// The relations a request samples, with each one's fanout.
std::vector<std::pair<int, int64_t>> Relations(const PartitionStore& store, const SampleOptions& o) {
  std::vector<std::pair<int, int64_t>> out;
  for (int r = 0; r < store.num_edge_types(); ++r) {
    if (o.etype == -1 || o.etype == r) out.push_back({r, o.etype_fanouts.empty() ? o.fanout : o.etype_fanouts[r]});
  }
  return out;
}

}  // namespace

absl::Status CheckFanout(int64_t fanout) {
  if (fanout < -1) return absl::InvalidArgumentError(base::StrCat("fanout must be -1 (all) or >= 0, got ", fanout));
  return absl::OkStatus();
}

absl::Status CheckLayerFanouts(std::string_view flag, const std::vector<int64_t>& fanouts) {
  if (fanouts.empty()) return absl::InvalidArgumentError(base::StrCat(flag, ": at least one layer is needed"));
  for (size_t i = 0; i < fanouts.size(); ++i) {
    if (fanouts[i] == 0 || fanouts[i] < -1) {
      return absl::InvalidArgumentError(base::StrCat(flag, ": layer ", i, " has fanout ", fanouts[i],
                                               "; a fanout is a positive count or -1 (all neighbours)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBatchSize(std::string_view what, int64_t batch_size) {
  if (batch_size >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(base::StrCat(what, " must be >= 1, got ", batch_size));
}

absl::StatusOr<int64_t> SampleSizeBound(const PartitionStore& store, std::span<const int64_t> seeds,
                                        const SampleOptions& o) {
  RETURN_IF_ERROR(CheckSampleOptions(store, seeds, o));
  const bool typed = store.num_edge_types() > 1;
  int64_t total = 0;
  for (const auto& [r, fanout] : Relations(store, o)) {
    for (size_t i = 0; i < seeds.size(); ++i) {
      const int64_t d = store.Neighbors(seeds[i], o.dir, typed ? r : -1).degree;
      const int64_t k = fanout == -1 ? d : d == 0 ? 0 : o.replace ? fanout : std::min(d, fanout);
      if (!CheckedAdd(total, k, &total) || total > o.max_edges) {
        return absl::ResourceExhaustedError(base::StrCat(
            "the sample could hold more than ", o.max_edges, " edges (", seeds.size(), " seeds, fanout ", fanout,
            o.replace ? " with replacement" : "", "; over the limit from seed ", i, ", node ", seeds[i],
            "): use fewer seeds or a smaller fanout"));
      }
    }
  }
  return total;
}

namespace {

// Appends the sample of relation `etype` (-1: the one-type graph) with `fanout` to `out`.
absl::Status SampleRelation(const PartitionStore& store, std::span<const int64_t> seeds, const SampleOptions& o,
                            int etype, int64_t fanout, const std::vector<double>* weights, SampledEdges* out) {
  // Each relation draws from its own stream, so that a node's picks in one relation say nothing
  // of its picks in another.
  const uint64_t seed = etype < 0 ? o.seed : SplitMix64(o.seed ^ (0x7e1a710000000000ull + static_cast<uint64_t>(etype)));
  std::vector<int64_t> scratch;
  std::vector<std::pair<double, int64_t>> keys;
  std::vector<double> cdf;
  // The loop is bound by cache misses on the index pointer and the adjacency lists, which are
  // independent from seed to seed, so it runs as a pipeline: the index-pointer entries of seed
  // i + kFar are prefetched; seed i + kNear's neighbours are picked (the draws need only its
  // degree) and exactly the cache lines holding the picked entries are prefetched; seed i's
  // picks are read. Each seed has its own generator, so the order of work changes no draw.
  constexpr size_t kFar = 16, kNear = 6, kStopCheckSeeds = 4096;
  struct Planned {
    PartitionStore::Adjacency a;
    std::vector<int64_t> pick;
  };
  std::array<Planned, kNear + 1> ring;
  const size_t n = seeds.size();
  auto plan = [&](size_t i) {
    Planned& p = ring[i % ring.size()];
    const int64_t v = seeds[i];
    p.a = store.Neighbors(v, o.dir, etype);
    const int64_t d = p.a.degree;
    const double* w = weights ? weights->data() + (p.a.first_eid - store.edge_start()) : nullptr;
    Rng rng(seed, v);
    std::vector<int64_t>& pick = p.pick;
    pick.clear();
    if (fanout == -1 || (!o.replace && d <= fanout)) {
      // Everything (DGL takes every neighbour here, weighted or not); the hardware prefetcher
      // follows a sequential read once it has started.
      for (int64_t j = 0; j < d; ++j) pick.push_back(j);
      for (int64_t j = 0; j < std::min<int64_t>(d, 32); j += 8) __builtin_prefetch(p.a.nbrs.address(j));
      return;
    }
    if (d == 0 || fanout == 0) return;
    if (w != nullptr) {
      if (o.replace) {
        WeightedWithReplacement(rng, w, d, fanout, &pick, &cdf);
      } else {
        WeightedWithoutReplacement(rng, w, d, fanout, &pick, &keys);
      }
    } else if (o.replace) {
      for (int64_t j = 0; j < fanout; ++j) pick.push_back(rng.Below(d));
    } else {
      UniformWithoutReplacement(rng, d, fanout, &pick, &scratch);
    }
    // 8 (int64) or 16 (int32) entries per 64-byte line; picks are ascending except with
    // replacement. Out-edges also read their stored edge IDs.
    const int shift = p.a.nbrs.narrow && (!p.a.eids || p.a.eids.narrow) ? 4 : 3;
    int64_t last_line = -1;
    for (int64_t j : pick) {
      if ((j >> shift) == last_line) continue;
      last_line = j >> shift;
      __builtin_prefetch(p.a.nbrs.address(j));
      if (p.a.eids) __builtin_prefetch(p.a.eids.address(j));
    }
  };
  for (size_t i = 0; i < std::min(n, kFar); ++i) store.PrefetchNeighbors(seeds[i], o.dir, etype);
  for (size_t i = 0; i < std::min(n, kNear); ++i) plan(i);
  for (size_t i = 0; i < n; ++i) {
    if (i + kFar < n) store.PrefetchNeighbors(seeds[i + kFar], o.dir, etype);
    if (i + kNear < n) plan(i + kNear);
    if (o.should_stop && i % kStopCheckSeeds == 0 && i > 0 && o.should_stop()) {
      return absl::CancelledError(base::StrCat("sampling abandoned after ", i, " of ", n, " seeds"));
    }
    const int64_t v = seeds[i];
    const Planned& p = ring[i % ring.size()];
    for (int64_t j : p.pick) {
      const int64_t nbr = p.a.nbr(j);
      out->src.push_back(o.dir == EdgeDir::kIn ? nbr : v);
      out->dst.push_back(o.dir == EdgeDir::kIn ? v : nbr);
      out->eid.push_back(p.a.eid(j));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SampleNeighbors(const PartitionStore& store, std::span<const int64_t> seeds,
                             const SampleOptions& o, SampledEdges* out) {
  // Bound first: no allocation is sized by the request before it is known to fit.
  ASSIGN_OR_RETURN(const int64_t most, SampleSizeBound(store, seeds, o));
  std::shared_ptr<const std::vector<double>> weights;
  if (!o.weight_field.empty()) {
    if (o.dir == EdgeDir::kOut) {
      return absl::UnimplementedError(base::StrCat(
          "weighted sampling ('", o.weight_field, "') of out-edges is not supported: out-edges are "
          "stored, with their weights, in their destinations' partitions"));
    }
    ASSIGN_OR_RETURN(weights, store.EdgeWeights(o.weight_field));
  }
  out->src.clear();
  out->dst.clear();
  out->eid.clear();
  out->etype.clear();
  out->src.reserve(most);
  out->dst.reserve(most);
  out->eid.reserve(most);
  // The one-type graph samples its relation as "-1": its draws and answer stay as they were
  // before types (no relation stream, no etype column).
  const bool typed = store.num_edge_types() > 1;
  if (typed) out->etype.reserve(most);
  for (const auto& [r, fanout] : Relations(store, o)) {
    RETURN_IF_ERROR(SampleRelation(store, seeds, o, typed ? r : -1, fanout, weights.get(), out));
    if (typed) out->etype.resize(out->eid.size(), r);
  }
  return absl::OkStatus();
}

}  // namespace fanout::core

// Neighbour sampling on one partition, with DGL's sample_neighbors semantics: for each seed pick
// up to `fanout` neighbours along in- or out-edges (all of them when the degree is smaller or
// fanout is -1), uniformly without replacement unless asked otherwise, optionally weighted by a
// per-edge field.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/partition_store.h"

namespace fanout::core {

struct SampleOptions {
  int64_t fanout = -1;          // neighbours per seed; -1 = all
  bool replace = false;         // with replacement: exactly `fanout` draws when degree > 0
  EdgeDir dir = EdgeDir::kIn;   // in-edges (messages flow src -> seed) or out-edges
  std::string weight_field;     // edge field weighting the draw; empty = uniform
  uint64_t seed = 0;            // the draw for node v depends only on (seed, v)
  // Refuse (RESOURCE_EXHAUSTED, before allocating) a sample that could hold more edges.
  int64_t max_edges = std::numeric_limits<int64_t>::max();
  // Polled between chunks of seeds; when it returns true the sample is abandoned (CANCELLED).
  std::function<bool()> should_stop;
  // Typed graphs (in-edges only): the relation to sample (an index of the graph's edge types;
  // -1 = every relation, each on its own with `fanout`), and optionally one fanout per relation
  // instead of `fanout` (DGL's per-etype fanouts). The one-type graph takes -1 or 0 and no list.
  int etype = -1;
  std::vector<int64_t> etype_fanouts;
};

// Edges picked, as global IDs; seed i's edges are contiguous and in seed order. On a typed graph
// the edges come relation by relation (each in seed order) and `etype` holds each edge's relation;
// on the one-type graph `etype` stays empty.
struct SampledEdges {
  std::vector<int64_t> src, dst, eid;
  std::vector<int32_t> etype;
  size_t size() const { return eid.size(); }
};

// OK for -1 (every neighbour) or a count >= 0.
absl::Status CheckFanout(int64_t fanout);
// A mini-batch's fanouts, one per layer: at least one layer, each a positive count or -1 (all
// neighbours). Errors name `flag` ("--fanouts") and the layer.
absl::Status CheckLayerFanouts(std::string_view flag, const std::vector<int64_t>& fanouts);
// The one rule for a batch size, whoever sets it (fanout-train's flags, the sampler spec, a
// Python loader's keyword): at least 1. The error names `what` ("--batch-size",
// "DistNodeDataLoader: batch_size") and the value.
absl::Status CheckBatchSize(std::string_view what, int64_t batch_size);

// Samples around `seeds`, all of which must be nodes of `store`'s partition. Without
// replacement the picked edges of a seed are distinct and listed in adjacency order. Weighted
// sampling never picks a zero-weight edge; it needs the weights of the edges it draws from, so
// for out-edges (stored in other partitions) it is not available.
// The most edges SampleNeighbors can return for `seeds` (exact unless weights are zero), from
// the degrees alone: overflow-checked, RESOURCE_EXHAUSTED when over `options.max_edges`.
absl::StatusOr<int64_t> SampleSizeBound(const PartitionStore& store, std::span<const int64_t> seeds,
                                        const SampleOptions& options);

absl::Status SampleNeighbors(const PartitionStore& store, std::span<const int64_t> seeds,
                             const SampleOptions& options, SampledEdges* out);

}  // namespace fanout::core

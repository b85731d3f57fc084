// Which nodes a feature cache should hold (trainer/feature_cache.h, --gpu-cache-policy): a
// ranking of nodes by presampled access counts and in-degree, and the presampling that counts.
// Kept apart from the cache itself, without LibTorch, so that tools and benchmarks can weigh the
// policies (bench/cache_bench.cc) and the sanitizer build tests them.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "sampler/link_sampler.h"
#include "sampler/minibatch_sampler.h"

namespace fanout::sampler {

// Which nodes to cache: at most `max_rows`, those with the most `counts` first, then the most
// in-edges (degree[v] for node v), then the lower ID. `counts` may be empty (in-degree alone) or
// has one entry per node. Returns the IDs in slot order (hottest first).
std::vector<int64_t> ChooseHottest(const std::vector<int64_t>& counts, const std::vector<int64_t>& degree,
                                   int64_t max_rows);

// How many times each node of the graph (num_nodes) is an input node of the batches `sampler`
// makes for steps [0, steps) of `epoch` (counts[v] for node v): the access counts of
// --gpu-cache-policy presample. The sampler should fetch nothing (no feature, label or edge
// fields); its batches are the ones training will draw, as a batch is a pure function of its
// options, seeds, epoch and step.
absl::StatusOr<std::vector<int64_t>> PresampleInputCounts(MiniBatchSampler* sampler, int64_t steps,
                                                          int64_t num_nodes, int64_t epoch = 0);

// The same for the batches a sampler of `so` over `seeds` makes through `graph`, steps [0, steps)
// of `epoch` (its fields dropped: only which nodes the batches take is counted). The caller
// resolves `steps` (at most the epoch's, StepsPerEpoch). The counts of --gpu-cache-policy
// presample and --feature-cache-rows presample, for fanout-train and the Python loaders alike.
absl::StatusOr<std::vector<int64_t>> PresampleSeeds(const DistGraph* graph, SamplerOptions so,
                                                    std::vector<int64_t> seeds, int64_t steps, int64_t epoch = 0);

// The same for link batches: the input nodes of the blocks around each batch's positives' and
// negatives' endpoints, as a LinkBatchSampler of `lo` over `edges` (RankEdgeSeeds) makes them for
// steps [0, steps) of `epoch` (at most the epoch's). The negatives are a pure function of the
// options, epoch, step and rank too, so these are the batches training draws.
absl::StatusOr<std::vector<int64_t>> PresampleLinkSeeds(const DistGraph* graph, LinkSamplerOptions lo,
                                                        SeedArray edges, int64_t steps, int64_t epoch = 0);

}  // namespace fanout::sampler

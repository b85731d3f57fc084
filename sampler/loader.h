// Streams of ready mini-batches for a trainer, in (epoch, step) order, produced ahead of it:
//  - num_samplers = 0: sampled in the trainer's process on a small thread pool;
//  - num_samplers = N > 0: by N fanout-sampler child processes (sampler i makes every N-th batch)
//    that hand batches over in shared memory (sampler/shm_batch.h).
// Either way batch (epoch, step) is the same: it depends only on the options and the seeds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sampler/dist_graph.h"
#include "sampler/link_sampler.h"
#include "sampler/loader_options.h"
#include "sampler/minibatch.h"
#include "sampler/minibatch_sampler.h"

namespace fanout::sampler {

class BatchLoader {
 public:
  virtual ~BatchLoader() = default;
  virtual int64_t steps_per_epoch() const = 0;
  // Feature columns of every batch (float32).
  virtual int64_t feature_dim() const = 0;
  // The next batch in order; OUT_OF_RANGE after the last epoch. An error from any sampler (an
  // unreachable server, a dead sampler process) is returned here, naming its source.
  virtual absl::StatusOr<MiniBatch> Next() = 0;
  // Whether the batches not yet made carry their input nodes' feature rows
  // (LoaderOptions::fetch_features); those already made are as they were. Thread-safe.
  virtual void FetchFeatures(bool on) = 0;
};

// `graph` must outlive the loader; sampler processes open their own view of the same graph
// (same machine, servers and client options as `graph_options`).
absl::StatusOr<std::unique_ptr<BatchLoader>> MakeBatchLoader(const DistGraph* graph,
                                                             const DistGraphOptions& graph_options,
                                                             const SamplerOptions& sampler_options,
                                                             std::vector<int64_t> seeds,
                                                             const LoaderOptions& options);

// Link batches made by options.num_samplers (>= 1) fanout-sampler processes over the positive
// edges `edges` (RankEdgeSeeds), each process making every N-th batch; batch (epoch, step) is
// the one LinkBatchSampler::Sample makes in this process, pairs included. Options are checked
// here before any process starts.
absl::StatusOr<std::unique_ptr<LinkBatchSource>> MakeLinkProcessLoader(const DistGraph* graph,
                                                                        const DistGraphOptions& graph_options,
                                                                        const LinkSamplerOptions& link,
                                                                        SeedArray edges,
                                                                        const LoaderOptions& options);

// Link batches over the positive edges `edges`, made as MakeBatchLoader makes node batches: by
// options.num_threads threads of this process when options.num_samplers is 0, else by
// fanout-sampler processes (MakeLinkProcessLoader). Either way batch (epoch, step) is
// LinkBatchSampler::Sample's. The one place that choice is made for links (fanout-train's link
// task and the Python data plane call it).
absl::StatusOr<std::unique_ptr<LinkBatchSource>> MakeLinkBatchLoader(const DistGraph* graph,
                                                                      const DistGraphOptions& graph_options,
                                                                      const LinkSamplerOptions& link,
                                                                      SeedArray edges,
                                                                      const LoaderOptions& options);

}  // namespace fanout::sampler

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
#include "sampler/minibatch.h"
#include "sampler/minibatch_sampler.h"

namespace fanout::sampler {

struct LoaderOptions {
  int num_samplers = 0;          // sampler processes; 0 = threads in this process
  int num_threads = 1;           // sampling threads when num_samplers = 0
  int prefetch = 2;              // batches made ahead: in total (threads), per process (samplers)
  // Threads only: false makes only the blocks ahead, and Next() fetches the batch's input
  // features itself, so that one batch's features are in memory at a time (and none of a batch
  // still waiting): evaluation's large batches, as DistDGL pulls a batch's features in the
  // trainer's loop. The batches are the same either way.
  bool features_ahead = true;
  int64_t first_epoch = 0;       // epochs [first_epoch, first_epoch + num_epochs)
  int64_t num_epochs = 1;
  int64_t first_step = 0;        // the first epoch starts at this step (resuming inside an epoch)
  // Sampler processes ignore SIGTERM: a trainer that stops at its next step on SIGTERM (with a
  // checkpoint) needs its samplers through that step when a launcher signals the whole group.
  // They still end with the trainer (they die with it, and when it closes their sockets).
  bool samplers_ignore_sigterm = false;
  // For sampler processes: how to start them and how they reach the graph.
  std::string sampler_binary;    // path of fanout-sampler
  std::string part_config_path;  // the partition config the processes open
  double batch_timeout_seconds = 600;  // waiting longer than this for one batch is an error
  // Sampler processes' batches may be written in place by their consumer (the Python data
  // plane hands a batch's arrays to user code as tensors): the reused mappings of the batch
  // files are writable (BatchMappings' `writable`).
  bool writable_batches = false;
  // Sampler processes lower their own priority by this much (nice(2), 0-19) once their batches
  // are ahead of the step (over its last 8 batches a sampler waited for the trainer at least
  // half as long as it spent making them; sampler/sampler_priority.h): on a machine whose cores
  // the trainers' steps already fill, a
  // sampler then runs in the step's gaps (its waits, the all-reduce) instead of preempting it,
  // and the batches it makes ahead absorb the delay. A sampler the trainer waits for (a
  // data-bound job) keeps the trainer's priority; where cores are free it changes nothing. 0
  // keeps the trainer's priority throughout.
  int sampler_nice = kDefaultSamplerNice;
  static constexpr int kDefaultSamplerNice = 10;
  // Sampler processes leave out of each batch the feature rows this process can read in place
  // (sampler/machine_rows.h: the local partition's mapped rows and a halo cache in shared
  // memory), and Next() copies them in: the batch files hold only the rows fetched from other
  // machines (or disk), a quarter of a machine's memory less on the products-scale job, for a
  // copy in the consumer instead of the sampler process. Node and link batches alike; nothing
  // changes without such rows, with a trainer's feature cache (SamplerOptions::cached_nodes), on
  // a typed graph, or with threads. The batches are the same either way.
  bool machine_rows = false;
};

class BatchLoader {
 public:
  virtual ~BatchLoader() = default;
  virtual int64_t steps_per_epoch() const = 0;
  // Feature columns of every batch (float32).
  virtual int64_t feature_dim() const = 0;
  // The next batch in order; OUT_OF_RANGE after the last epoch. An error from any sampler (an
  // unreachable server, a dead sampler process) is returned here, naming its source.
  virtual absl::StatusOr<MiniBatch> Next() = 0;
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

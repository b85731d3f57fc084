// How a trainer's batches are made ahead of it (sampler/loader.h): threads or sampler processes,
// how far ahead, and what the processes are told. Apart from loader.h so that the sampler spec
// (sampler_spec.h), which carries these settings to the processes, need not include the loader.
#pragma once

#include <cstdint>
#include <string>

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
  // false: batches carry no feature rows (the blocks, labels and edge fields only) until the
  // consumer asks for them again (BatchLoader::FetchFeatures), which takes effect for the
  // batches not yet made. The Python data plane's loaders follow their script with it: rows a
  // sampler did not name are fetched while the script reads them by the batch's input nodes.
  bool fetch_features = true;
};

}  // namespace fanout::sampler

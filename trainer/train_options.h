// What one trainer rank's job is told (trainer/training.h's RunTraining): fanout-train fills it
// from its flags and the launcher's environment, a test or another front end directly. Settings
// that belong together are grouped (sampling, loader, model, eval, checkpoint, output, device
// cache); a task's own settings have their own struct (LinkTaskOptions).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/progress.h"
#include "sampler/dist_graph.h"
#include "sampler/link_sampler.h"
#include "sampler/loader.h"
#include "rpc/reachability.h"
#include "sampler/minibatch_sampler.h"
#include "trainer/dist.h"
#include "trainer/dist_embedding.h"
#include "trainer/link_loss.h"
#include "trainer/link_scorer.h"
#include "trainer/metrics.h"
#include "trainer/models.h"

namespace fanout::trainer {

// The link task's settings (--task link).
struct LinkTaskOptions {
  // The negatives and positives a batch draws (the sampler's own options: --negatives,
  // --negative-sampling, --edges-per-epoch with 0 for all of a trainer's edges, every rank taking
  // the smallest share either way, --hard-negative-field, --hard-negatives).
  sampler::LinkDrawOptions draw;
  int64_t embed_dim = 0;  // the embedding width (the model's output); 0 = hidden
  ScorerKind scorer = ScorerKind::kDot;  // dot product, DistMult, or an MLP trained with the model
  LinkLossOptions loss;                  // link_loss.h
  // weighted-bce: the edge field (one number per edge) weighting each positive; "" = the
  // messages' --edge-weight field.
  std::string loss_weight_field;
  // Evaluation: drawn negatives per held-out positive (0: link/'s stored ones), uniform per
  // positive or joint (one set shared by the split's positives), from eval_seed alone, so that
  // every model and run ranks against the same ones.
  int64_t eval_negatives = 0;
  sampler::NegativeSampling eval_negative_sampling = sampler::NegativeSampling::kUniform;
  uint64_t eval_seed = 0;
};

// Validation and test (--eval-*, --metric, --no-test).
struct EvalOptions {
  std::vector<int64_t> fanouts;  // empty: the training fanouts
  int64_t batch_size = 4096;
  int64_t every = 1;  // validation every N epochs, and after the last (0: never)
  bool test = true;   // test metric after the last epoch
  Metric metric = Metric::kAccuracy;  // what validation and test report; the best model maximises it
};

// Checkpoints and where a job starts from.
struct CheckpointOptions {
  // best.pt + last.rank<r>.pt, and the one before it, last.rank<r>.prev.pt ("" = none).
  std::string dir;
  // Continue from the newest epoch that every rank's last or previous checkpoint holds.
  bool resume = false;
  // Resume when dir holds a position every rank has, else start from scratch: the same command
  // for a job's first run and for its requeued or rescheduled runs (Slurm, a Kubernetes Job). A
  // restart (restart_count > 0) does this by itself.
  bool auto_resume = false;
  // Also write last.rank<r>.pt every K steps inside an epoch (0: after each epoch only), so that
  // a resumed or restarted job loses at most K steps; it continues at the exact step.
  int64_t every_steps = 0;
  // Start from this checkpoint's parameters (checkpoint.h; rank 0 reads it); with epochs = 0
  // nothing is trained: evaluation and inference of a trained model.
  std::string load_model;
};

// What the job prints and writes besides checkpoints.
struct OutputOptions {
  int64_t log_every = 0;  // per-step line every N steps (0: none)
  // Each rank prints "rank R batch EPOCH STEP crc C" for every training batch
  // (sampler/batch_checksum.h): to check that another loader yields the same batches.
  bool print_batch_checksums = false;
  // An operator profile (trainer/op_profile.h) of this many training steps, from the second step
  // of the second epoch (of the first when there is one): rank 0 prints it and writes it to the
  // metrics file. 0: none.
  int64_t profile_steps = 0;
  // Rank 0's progress lines (rate, ETA) during epochs, evaluation and inference (--progress).
  base::ProgressMode progress = base::ProgressMode::kAuto;
  std::string metrics_file;     // JSON lines ("" = none)
  std::string tensorboard_dir;  // rank 0's TensorBoard event file goes here ("" = none)
  // Full-graph inference after training (inference.h): embeddings.npy, predictions.npy and
  // embeddings.json in this folder, in original node-ID order ("" = none). The model is the one
  // whose test accuracy is printed first (the best-validation one).
  std::string save_embeddings;
  bool overwrite = false;  // replace an earlier fanout-train output in save_embeddings
};

// --gpu-cache-bytes: the input features of the hottest nodes kept on the training device, up to
// this many bytes (trainer/feature_cache.h); batches then fetch and copy only the other rows.
// Which nodes are hottest: --gpu-cache-policy (in-degree, or this trainer's presampled batches:
// their first presample_steps steps, 0 = a whole epoch).
struct DeviceCacheOptions {
  int64_t bytes = 0;  // 0: no cache
  bool presample = false;
  int64_t presample_steps = 0;
};

struct TrainOptions {
  // The graph and where this rank sits.
  std::string part_config;          // <name>.json
  sampler::DistGraphOptions graph;  // machine (local partition), servers, client deadline
  int trainers_per_machine = 1;     // T: world_size must be num_parts * T
  DistOptions dist;                 // rank, world size, coordinator, backend, timeout
  // Every other machine's servers are called each second; one silent for reachability.timeout_s
  // ends the trainer with an error naming it (rpc/reachability.h; --unreachable-timeout).
  rpc::ReachabilityOptions reachability;

  // The training task (trainer/task.h): a registered name, "node" (classification: labels,
  // node splits) or "link" (prediction on a graph partitioned with --edge-split).
  std::string task = "node";
  LinkTaskOptions link;  // read by the link task only

  // Model and optimisation.
  ModelOptions model;          // in_dim / num_classes are taken from the graph
  std::string device = "cpu";  // "cpu" or "cuda:K"
  // How gradients are averaged: NCCL on a GPU and Gloo on the CPU when unset; Gloo with a GPU
  // stages them through host memory (several trainers sharing one GPU, which NCCL refuses).
  std::optional<CommBackend> dist_backend;
  double lr = 0.003;           // Adam
  double weight_decay = 0;
  int64_t epochs = 10;
  // Training batches: fanouts (input layer first, as DGL; one per layer), batch size, the job's
  // seed (which also seeds the model's initialisation and dropout), the node fields fetched with
  // every batch (features, labels) and the edge fields for every sampled edge (edge.weight_field,
  // one number per edge, multiplied into the built-in models' messages as DGL's edge_weight;
  // edge.feature_field, any width, for scripted models as block["edge_feat"]). The job sets
  // rank, seeds_per_epoch and cached_nodes.
  sampler::SamplerOptions sampling{.fanouts = {10, 25}, .batch_size = 1024};
  EvalOptions eval;

  // Data.
  std::string train_mask = "train_mask", val_mask = "val_mask", test_mask = "test_mask";
  // Typed graphs: the node type node classification predicts (--target-ntype; "" = the one type
  // with labels), whose TYPE/<mask> fields split it; and learnable embeddings for the node types
  // without features (--embed-featureless DIM: embed.dim; 0 = none: those nodes input zeros),
  // held by the servers and trained by a sparse optimizer (dist_embedding.h).
  std::string target_ntype;
  EmbeddingOptions embed;
  DeviceCacheOptions device_cache;
  // --feature-cache-rows presample (graph.cache_from_counts): the remote rows the graph's cache
  // keeps (--feature-cache-mb) are the ones this trainer's first row_cache_presample_steps batches
  // take most (0: a whole epoch), then the halo by its edges into the partition.
  int64_t row_cache_presample_steps = 0;

  // Sampling pipeline: sampler processes (num_samplers, started from sampler_binary) or
  // num_threads threads in this process, prefetch batches ahead. The job sets the epochs and
  // part_config_path.
  sampler::LoaderOptions loader;

  int intra_op_threads = 1;  // LibTorch's intra-op pool (its default here is 1)
  // Start each gradient bucket's all-reduce during backward, as soon as its gradients are written
  // (GradSyncOptions::overlap; the averaged gradients are the same bit for bit).
  bool overlap_allreduce = true;
  // --allreduce-dtype float16: gradients cross the network as float16 (GradSyncOptions::wire_dtype).
  bool allreduce_float16 = false;
  CheckpointOptions checkpoint;
  // FANOUT_RESTART_COUNT (fanout-launch --max-restarts): > 0 in a restarted job. With
  // checkpoint.dir, the trainer then resumes as with checkpoint.resume, or starts over where no
  // epoch is checkpointed on every rank; the metrics file is appended to.
  int restart_count = 0;
  // Set (from a signal handler) to stop at the next step boundary: every rank then writes its
  // checkpoint at the same step (the flag is summed over ranks after each step while this is
  // set), and RunTraining returns CANCELLED. Needs checkpoint.dir. fanout-train points it at its
  // SIGTERM flag (what Kubernetes and Slurm send before killing).
  const std::atomic<bool>* stop_requested = nullptr;
  OutputOptions output;
};

}  // namespace fanout::trainer

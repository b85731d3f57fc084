// fanout-train: one trainer rank of a distributed GNN training job.
//
// Under fanout-launch every setting of the job's layout comes from the environment the launcher
// wrote (base/job_env.h: FANOUT_PART_CONFIG, FANOUT_SERVERS, FANOUT_MACHINE_ID, FANOUT_NUM_TRAINERS,
// FANOUT_NUM_SAMPLERS, FANOUT_RANK, FANOUT_WORLD_SIZE, FANOUT_COORDINATOR, ...); flags override it.
// Started by another launcher (torchrun, a Slurm or Kubernetes wrapper), it
// takes torchrun's RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK and MASTER_ADDR/MASTER_PORT
// (fanout's rendezvous on MASTER_PORT + 1) instead. Alone, it trains on one machine's servers
// with --part-config and --servers (or --ip-config).
#include <c10/util/Exception.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <thread>
#include <tuple>

#include "base/cli.h"
#include "base/heartbeat.h"
#include "base/ip_config.h"
#include "base/job_env.h"
#include "base/malloc_tuning.h"
#include "base/memory_report.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/text_reader.h"
#include "core/partition_config.h"
#include "rpc/security.h"
#include "trainer/cpu_allocator.h"
#include "trainer/models.h"
#include "trainer/task.h"
#include "trainer/torch_util.h"
#include "trainer/training.h"

namespace {

using namespace fanout;
using base::StrCat;

// Set by SIGTERM (with --checkpoint-dir): training stops at the next step, checkpointed.
std::atomic<bool> g_stop_requested{false};

std::string SelfDir() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string path = n > 0 ? std::string(self, n) : "";
  return path.substr(0, path.rfind('/') + 1);
}

// What fanout-train's flags hold before they become TrainOptions: the settings whose flag form
// is not the field's (names of kinds, megabytes, seconds, lists) and the job's layout, which is
// resolved against the partition config once it is read (ResolveJob).
struct Flags {
  std::string model = "sage", ip_config, servers;
  int num_servers = 1;
  int machine_id = -1;
  std::vector<int64_t> heads;
  std::vector<std::string> relation_fanouts;
  std::string progress, batch_rows = "auto";
  double deadline = 60, comm_timeout = 300;
  int64_t feature_cache_mb = 512;
  int omp_threads = 0;  // OMP_NUM_THREADS, as the launcher sets it (0 = unset)
};

// The defaults the environment gives: fanout-launch's variables (base/job_env.h), else
// torchrun's names for the same facts, and OMP_NUM_THREADS.
absl::Status ReadEnvironment(base::JobEnv* job, trainer::TrainOptions* o, Flags* f) {
  ASSIGN_OR_RETURN(*job, base::JobEnv::FromEnvironment());
  const base::ForeignEnv& torchrun = job->foreign;
  for (auto [name, value, field] : {std::tuple{"LOCAL_WORLD_SIZE", &torchrun.local_world_size, &base::JobEnv::num_trainers},
                                    std::tuple{"GROUP_RANK", &torchrun.group_rank, &base::JobEnv::machine_id},
                                    std::tuple{"LOCAL_RANK", &torchrun.local_rank, &base::JobEnv::local_rank}}) {
    if (job->*field < 0) RETURN_IF_ERROR(base::ParseEnvCount(name, *value, &(job->*field)));
  }
  f->ip_config = job->ip_config;
  if (job->num_servers >= 0) f->num_servers = job->num_servers;
  f->machine_id = job->machine_id;
  o->part_config = job->part_config;
  if (job->num_trainers >= 0) o->trainers_per_machine = job->num_trainers;
  if (job->num_samplers >= 0) o->loader.num_samplers = job->num_samplers;
  if (job->sampler_nice >= 0) o->loader.sampler_nice = job->sampler_nice;
  if (job->restart_count > 0) o->restart_count = job->restart_count;
  o->loader.sampler_binary = SelfDir() + "fanout-sampler";
  return base::ParseEnvCount("OMP_NUM_THREADS", torchrun.omp_num_threads, &f->omp_threads);
}

// Where the job is: the partition, the servers, this machine.
void AddLayoutFlags(base::ArgParser& args, trainer::TrainOptions* o, Flags* f) {
  args.AddString("part-config", &o->part_config, "the <name>.json written by fanout-partition [FANOUT_PART_CONFIG]");
  args.AddString("ip-config", &f->ip_config, "machines of the job; finds the servers [FANOUT_IP_CONFIG]");
  args.AddInt("num-servers", &f->num_servers, "servers per machine [FANOUT_NUM_SERVERS]", 1);
  args.AddString("servers", &f->servers, "PART=HOST:PORT,... instead of --ip-config (PARTr=HOST:PORT: a replica)");
  args.AddInt("machine-id", &f->machine_id, "this machine's partition, read from its files [FANOUT_MACHINE_ID]");
  args.SetDefaultText("machine-id", "rank / trainers per machine");
  args.AddInt("num-trainers", &o->trainers_per_machine, "trainers per machine [FANOUT_NUM_TRAINERS]");
}

// The model and how it is trained: layers, widths, optimiser, epochs, batches.
void AddModelFlags(base::ArgParser& args, trainer::TrainOptions* o, Flags* f) {
  args.AddString("model", &f->model,
                 StrCat("the GNN: ", base::StrJoin(trainer::BuiltInModelNames(), ", "),
                        " (rgcn, rgat and hgt: weights per relation, for typed graphs); or a TorchScript file "
                        "(.pt; docs/models.md)"),
                 [](const std::string& v) { return trainer::ParseModelKind(v).status(); });
  args.AddInt("hidden", &o->model.hidden, "hidden width (per head for gat; rgat and hgt split it into their heads)");
  f->heads = {o->model.heads};
  args.AddIntList("heads", &f->heads, "gat, rgat and hgt attention heads: one for every layer, or one per layer (8,1)");
  args.AddDouble("dropout", &o->model.dropout, "dropout probability");
  std::string dropouts = StrCat(trainer::DefaultDropout(trainer::ModelKind::kSage));  // the models' table's
  for (std::string_view name : trainer::BuiltInModelNames()) {
    const double d = trainer::DefaultDropout(*trainer::ParseModelKind(name));
    if (d != trainer::DefaultDropout(trainer::ModelKind::kSage)) dropouts += StrCat("; ", d, " for ", name);
  }
  args.SetDefaultText("dropout", dropouts);
  args.AddDouble("lr", &o->lr, "Adam learning rate");
  args.AddDouble("weight-decay", &o->weight_decay, "Adam weight decay");
  args.AddInt("epochs", &o->epochs, "epochs to train");
  args.AddInt("batch-size", &o->sampling.batch_size, "seeds per mini-batch per trainer");
  args.AddIntList("fanouts", &o->sampling.fanouts,
                  "neighbours per layer, input layer first (-1 = all); sets the layer count");
  args.AddIntList("eval-fanouts", &o->eval.fanouts, "fanouts for evaluation (default: --fanouts)");
  args.AddRepeatedString("relation-fanout", &f->relation_fanouts,
                         "typed graphs: REL=F0,F1,... gives relation REL (or SRC:REL:DST) its own fanout per layer; "
                         "the other relations take --fanouts (repeat it per relation)");
  args.AddInt("eval-batch-size", &o->eval.batch_size, "seeds per evaluation batch");
  args.AddInt("eval-every", &o->eval.every, "validate every N epochs, and after the last (0: never)");
  args.AddBool("test", &o->eval.test, "report the test metric after the last epoch (--no-test: skip)");
  args.AddUint("seed", &o->sampling.seed, "seed of every random choice (init, shuffles, sampling, dropout)");
  args.AddString("device", &o->device,
                 "cpu, cuda:K, or cuda: this trainer's local rank's GPU (local rank modulo the GPUs it sees), "
                 "so that the trainers of a machine take one GPU each");
}

// What the job trains for (the task and its metric) and on which of the graph's data.
void AddTaskFlags(base::ArgParser& args, trainer::TrainOptions* o, Flags* f) {
  args.AddChoice("task", &o->task, trainer::TaskNames(), StrCat("what to train for: ", trainer::TaskHelp()));
  args.AddInt("negatives", &o->link.draw.negatives, "link: negative pairs per positive edge in training");
  args.AddInt("edges-per-epoch", &o->link.draw.edges_per_epoch,
              "link: positive edges per trainer per epoch, drawn afresh each epoch (0: all of the trainer's edges)");
  args.AddEnum("negative-sampling", &o->link.draw.negative_sampling,
               "link: each positive's negatives: uniform (drawn per positive), degree (probability ~ "
               "in-degree^0.75), joint (--negatives nodes per batch, shared by its positives), in-batch (the "
               "batch's other positives' destinations) or local (drawn in the trainer's own partition)",
               sampler::ParseNegativeSampling, sampler::NegativeSamplingName);
  args.AddString("hard-negative-field", &o->link.draw.hard_negative_field,
                 "link: edge field of each edge's hard negatives (node IDs, -1: none; fanout-partition "
                 "--hard-negative-field): a positive's first negatives, the rest drawn by --negative-sampling");
  args.AddInt("hard-negatives", &o->link.draw.hard_negatives,
              "link: at most this many of a positive's --negatives from --hard-negative-field (0: up to --negatives)");
  args.AddInt("embed-dim", &o->link.embed_dim, "link: embedding width, the model's output (0: --hidden)");
  args.AddEnum("scorer", &o->link.scorer,
               "link: a pair's score from its two embeddings: dot (product), distmult (a learnable vector per "
               "relation in the product) or mlp (3 layers over their element-wise product); trained with the model",
               trainer::ParseScorerKind, trainer::ScorerKindName);
  args.AddEnum("link-loss", &o->link.loss.kind,
               "link: bce, weighted-bce (positives weighted by --loss-weight-field), adversarial (negatives "
               "weighted by softmax(score * --loss-temperature)) or contrastive (InfoNCE at --loss-temperature)",
               trainer::ParseLinkLoss, trainer::LinkLossName);
  args.AddDouble("loss-temperature", &o->link.loss.temperature,
                 "link: adversarial's T (softmax of score * T over a positive's negatives) or contrastive's T "
                 "(scores / T)");
  args.AddString("loss-weight-field", &o->link.loss_weight_field,
                 "link, weighted-bce: edge field with one number per edge weighting each positive (default: "
                 "--edge-weight's)");
  args.AddInt("eval-negatives", &o->link.eval_negatives,
              "link: rank each held-out positive against this many negatives drawn from --eval-seed (the same for "
              "every model and run); 0 = the partition's stored ones (fanout-partition --eval-negatives)");
  args.AddEnum("eval-negative-sampling", &o->link.eval_negative_sampling,
               "link, with --eval-negatives: uniform (drawn per positive) or joint (one set for all positives)",
               sampler::ParseNegativeSampling, sampler::NegativeSamplingName);
  args.AddUint("eval-seed", &o->link.eval_seed, "link: seed of --eval-negatives' draws");
  args.AddEnum("metric", &o->eval.metric,
               "evaluation metric, which also picks the best model: acc, roc-auc (one-vs-rest, macro over classes) "
               "or f1-macro",
               trainer::ParseMetric, trainer::MetricName);
  args.AddString("feature-field", &o->sampling.feature_field,
                 "node field of input features (typed graphs: each node type's TYPE/NAME, where it has one)");
  args.AddString("target-ntype", &o->target_ntype,
                 "typed graphs: the node type to classify (default: the one node type with labels)");
  args.AddInt("embed-featureless", &o->embed.dim,
              "typed graphs: learnable embeddings of this width for the node types without features, held by the "
              "servers (fields the job creates: no --allow-push needed) and trained by --sparse-optimizer; the typed "
              "features are then projected to the same width. 0: featureless nodes input zeros", 0);
  args.AddEnum("sparse-optimizer", &o->embed.optimizer.kind,
               "optimizer of the learnable embeddings: adam or adagrad (DGL's SparseAdam / SparseAdagrad: only the "
               "rows a step touched change)",
               core::ParseSparseOptimizer, core::SparseOptimizerName);
  args.AddDouble("sparse-lr", &o->embed.optimizer.lr, "learning rate of the learnable embeddings");
  args.AddBoolChoice("embed-grad-dtype", &o->embed.grads_bfloat16, "float32", "bfloat16",
                     "the dtype the learnable embeddings' gradient rows cross to their owners in: bfloat16 sends "
                     "half the bytes (about 3 significant digits, float32's range)");
  args.AddString("edge-weight", &o->sampling.edge.weight_field,
                 "edge field with one number per edge that weights each message (DGL's edge_weight: SAGE's mean, "
                 "GCN's sum and GAT's attention; block['edge_weight'] in scripted models); default: unweighted");
  args.AddString("edge-feature", &o->sampling.edge.feature_field,
                 "edge field (any width) given to scripted models for every sampled edge as block['edge_feat'], "
                 "float32 [num_edges, width]; the built-in models do not read edge features");
  args.AddString("label-field", &o->sampling.label_field, "node field of labels");
}

// How batches are made and moved, and how the trainers talk: samplers, caches, threads, limits.
void AddSystemFlags(base::ArgParser& args, trainer::TrainOptions* o, Flags* f) {
  args.AddEnum(
      "dist-backend", &o->dist_backend,
      "gradient averaging: auto (nccl on a GPU, gloo on the CPU), or gloo with a GPU too (through host memory: "
      "trainers that share a GPU, which NCCL refuses)",
      [](std::string_view v) -> absl::StatusOr<std::optional<trainer::CommBackend>> {
        if (v == "auto") return std::nullopt;
        absl::StatusOr<trainer::CommBackend> b = trainer::ParseCommBackend(v);
        if (!b.ok()) return absl::InvalidArgumentError(StrCat("'", v, "' is not one of auto, gloo, nccl"));
        return *b;
      },
      [](const std::optional<trainer::CommBackend>& b) {
        return b.has_value() ? std::string(trainer::CommBackendName(*b)) : std::string("auto");
      });
  args.AddBytes("gpu-cache-bytes", &o->device_cache.bytes,
                "keep the input features of the hottest nodes (--gpu-cache-policy) on the training device, up to "
                "this size (e.g. 4G); batches then fetch and copy only the other rows, and each epoch line reports "
                "the cache's hit rate over all trainers. 0: no cache");
  args.AddBoolChoice("gpu-cache-policy", &o->device_cache.presample, "degree", "presample",
                     "which nodes --gpu-cache-bytes holds: degree = the most in-edges in the graph; presample = the "
                     "nodes this trainer's own batches take most, counted by sampling them before training "
                     "(--gpu-cache-presample-steps), then in-degree");
  args.AddInt("gpu-cache-presample-steps", &o->device_cache.presample_steps,
              "--gpu-cache-policy presample: the steps sampled to count (0: a whole epoch)");
  args.AddInt("num-samplers", &o->loader.num_samplers,
              "sampler processes per trainer; 0 = sample in-process [FANOUT_NUM_SAMPLERS]");
  args.AddInt("sampler-threads", &o->loader.num_threads, "sampling threads when --num-samplers is 0");
  args.AddInt("prefetch", &o->loader.prefetch, "mini-batches made ahead");
  args.AddChoice("batch-rows", &f->batch_rows, {"auto", "fetched", "all"},
                 "which input feature rows a sampler process puts in its batches: fetched = only those it "
                 "fetched from other machines (or disk), the trainer copying the rest from the memory the "
                 "machine's processes share (the partition's mapped features, the halo cache), so that batches "
                 "in flight hold a fraction of the memory; all = every row, the copying left to the sampler "
                 "processes; auto = fetched on the CPU, all on a GPU");
  args.AddInt("sampler-nice", &o->loader.sampler_nice,
              "how much the sampler processes lower their priority once their batches are ahead of the step "
              "(0-19; 0: the trainer's): they then yield the CPU to the training step where both want it");
  args.AddString("sampler-bin", &o->loader.sampler_binary, "the fanout-sampler program");
  args.AddInt("num-threads", &o->intra_op_threads, "LibTorch intra-op threads");
  args.AddAlias("threads", "num-threads");
  args.SetDefaultText("num-threads", "OMP_NUM_THREADS, else cores / trainers per machine");
  args.AddDouble("deadline", &f->deadline, "seconds allowed per server call");
  args.AddBoolChoice("wire-rows", &o->graph.client.rows_as_bfloat16, "float32", "bfloat16",
                     "how float32 feature rows cross the network from other machines' servers: bfloat16 sends half "
                     "the bytes, each value rounded to about 3 significant digits (the halo cache's rows too)");
  base::AddSecurityFlags(args, &o->graph.security);
  args.AddInt("feature-cache-mb", &f->feature_cache_mb,
              "memory per process (each sampler, and the trainer when it fetches features itself: "
              "no samplers, or evaluation) for the features of this machine's halo nodes, pulled "
              "once at start so that batches fetch fewer remote rows; 0 = off",
              0, std::numeric_limits<int64_t>::max() >> 20);
  args.AddBoolChoice("feature-cache-rows", &o->graph.cache_from_counts, "halo", "presample",
                     "which remote rows --feature-cache-mb keeps: halo = this machine's halo nodes (the remote "
                     "sources of its edges), those with the most edges into the partition first; presample = the "
                     "remote nodes this trainer's own batches take most, halo or not, counted by sampling them "
                     "before training (--feature-cache-presample-steps), then the halo by its edges");
  args.AddInt("feature-cache-presample-steps", &o->row_cache_presample_steps,
              "--feature-cache-rows presample: the steps sampled to count (0: a whole epoch)");
  args.AddDouble("comm-timeout", &f->comm_timeout, "seconds a collective may wait for the other trainers");
  args.AddDouble("unreachable-timeout", &o->reachability.timeout_s,
                 "seconds another machine's servers may leave a call each second unanswered before the trainer "
                 "ends the job naming it (a cut link is otherwise silent until --comm-timeout or --deadline); "
                 "0 = not watched");
  args.AddBoolChoice("allreduce-dtype", &o->allreduce_float16, "float32", "float16",
                     "the dtype gradients are all-reduced in: float16 sends half the bytes (each rank's share of "
                     "the mean, rounded to about 3 significant digits, as PyTorch DDP's fp16 compression)");
  args.AddBool("overlap-allreduce", &o->overlap_allreduce,
               "start each gradient bucket's all-reduce during backward, as its gradients are written "
               "(the same averaged gradients, bit for bit; --no-overlap-allreduce: all after backward)");
}

// What the job leaves behind: lines, metrics, checkpoints, the model and its embeddings.
void AddOutputFlags(base::ArgParser& args, trainer::TrainOptions* o, Flags* f) {
  args.AddInt("log-every", &o->output.log_every, "print a line every N steps (0: per epoch only)");
  args.AddBool("print-batch-checksums", &o->output.print_batch_checksums,
               "print a CRC-32 of every training batch, per rank (to compare loaders; docs/python.md)");
  args.AddInt("profile-steps", &o->output.profile_steps,
              "print an operator profile of N training steps (from the second step of the second epoch): "
              "self time per LibTorch operator and fanout kernel, matrix products by shape with their GFLOP/s",
              0);
  base::AddProgressFlag(args, &f->progress);  // rank 0's epochs, evaluation and inference
  args.AddString("metrics-file", &o->output.metrics_file, "JSON-lines metrics (rank 0)");
  args.AddString("tensorboard-dir", &o->output.tensorboard_dir,
                 "rank 0 writes a TensorBoard event file here: losses, metrics and the time breakdown per epoch");
  args.AddString("checkpoint-dir", &o->checkpoint.dir, "best.pt (rank 0) and last.rank<r>.pt after every epoch");
  args.AddBool("resume", &o->checkpoint.resume, "continue from --checkpoint-dir's last state");
  args.AddBool("auto-resume", &o->checkpoint.auto_resume,
               "resume from --checkpoint-dir when it holds a checkpoint every rank has, else start from scratch "
               "(one command for a job and its requeued runs)");
  args.AddInt("checkpoint-every-steps", &o->checkpoint.every_steps,
              "also write last.rank<r>.pt every K steps inside an epoch (0 = after each epoch only); "
              "resuming continues at the exact step",
              0);
  args.AddString("load-model", &o->checkpoint.load_model,
                 "start from this checkpoint's model (e.g. best.pt); with --epochs 0, evaluate and infer only");
  args.AddString("save-embeddings", &o->output.save_embeddings,
                 "after training, full-graph inference: embeddings.npy, predictions.npy and embeddings.json "
                 "in this folder, rows in original node-ID order");
  args.AddBool("overwrite", &o->output.overwrite, "replace --save-embeddings if an earlier fanout-train wrote it");
}

// The task's choices: its metric (fixed by some tasks) and the flags only the link task takes.
absl::Status CheckTaskFlags(const base::ArgParser& args, const Flags& f, trainer::TrainOptions* o) {
  ASSIGN_OR_RETURN(auto task, trainer::MakeTask(o->task));
  if (std::optional<trainer::Metric> fixed = task->fixed_metric()) {
    if (args.WasSet("metric") && o->eval.metric != *fixed) {
      return absl::InvalidArgumentError(StrCat("--task ", o->task, " reports ", trainer::MetricName(*fixed),
                                               " and selects the model by it: leave --metric out"));
    }
    o->eval.metric = *fixed;
  }
  if (o->task == "link") return absl::OkStatus();
  for (const char* flag : {"negatives", "edges-per-epoch", "negative-sampling", "hard-negative-field", "hard-negatives",
                           "embed-dim", "scorer", "link-loss", "loss-temperature",
                           "loss-weight-field", "eval-negatives", "eval-negative-sampling", "eval-seed"}) {
    if (args.WasSet(flag)) return absl::InvalidArgumentError(StrCat("--", flag, " applies to --task link only"));
  }
  return absl::OkStatus();
}

// Every flag, checked and turned into its field before anything is read or connects (issue 11:
// --lr nan reached LibTorch and aborted with a backtrace, --prefetch 0 hung the loader forever).
absl::Status CheckFlags(const base::ArgParser& args, const Flags& f, trainer::TrainOptions* o) {
  o->output.progress = base::ApplyProgressFlag(f.progress);
  // LibTorch's pool size: --num-threads, else OMP_NUM_THREADS (the launcher sets it), else this
  // trainer's share of the cores. Debian's LibTorch would otherwise start with 1.
  if (!args.WasSet("num-threads")) {
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    o->intra_op_threads = f.omp_threads > 0 ? f.omp_threads : std::max(1, hw / std::max(1, o->trainers_per_machine));
  }
  if (o->part_config.empty()) return absl::InvalidArgumentError("--part-config (or FANOUT_PART_CONFIG) is required");
  RETURN_IF_ERROR(CheckTaskFlags(args, f, o));
  if (f.heads.size() == 1) {
    o->model.heads = f.heads[0];
  } else {
    o->model.layer_heads = f.heads;
  }
  RETURN_IF_ERROR(trainer::ValidateTrainOptions(*o));
  if (f.num_servers < 1) {  // only FANOUT_NUM_SERVERS can get here: the flag's range is the parser's
    return absl::InvalidArgumentError(StrCat("FANOUT_NUM_SERVERS must be >= 1, got ", f.num_servers));
  }
  if (f.machine_id < -1) {
    return absl::InvalidArgumentError(StrCat(
        "--machine-id must be a partition number >= 0 (default: rank / trainers per machine), got ", f.machine_id));
  }
  if (!(f.deadline > 0)) return absl::InvalidArgumentError(StrCat("--deadline must be > 0 seconds, got ", f.deadline));
  if (!(o->reachability.timeout_s >= 0) || o->reachability.timeout_s > 1e9) {
    return absl::InvalidArgumentError(
        StrCat("--unreachable-timeout must be in [0, 1e9] seconds (0: off), got ", o->reachability.timeout_s));
  }
  if (!(f.comm_timeout > 0) || f.comm_timeout > 1e9) {
    return absl::InvalidArgumentError(StrCat("--comm-timeout must be in (0, 1e9] seconds, got ", f.comm_timeout));
  }
  if (o->embed.optimizer.kind == trainer::SparseOptimizerKind::kAdagrad) o->embed.optimizer.eps = 1e-10;  // DGL's
  if (!(std::isfinite(o->embed.optimizer.lr) && o->embed.optimizer.lr > 0)) {
    return absl::InvalidArgumentError(StrCat("--sparse-lr must be a number > 0, got ", o->embed.optimizer.lr));
  }
  ASSIGN_OR_RETURN(o->model.model, trainer::ParseModelKind(f.model));
  if (!args.WasSet("dropout")) o->model.dropout = trainer::DefaultDropout(o->model.model);
  if (o->model.model == trainer::ModelKind::kScripted) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(f.model, ec)) {
      return absl::NotFoundError(StrCat("--model ", f.model, ": no such file (a TorchScript model; see docs/models.md)"));
    }
    o->model.script_path = f.model;
  }
  o->graph.client.deadline_seconds = f.deadline;
  o->graph.connect_timeout_seconds = f.deadline;
  o->graph.cache_field = o->sampling.feature_field;
  o->graph.cache_max_bytes = f.feature_cache_mb << 20;
  o->loader.machine_rows = f.batch_rows == "fetched" || (f.batch_rows == "auto" && o->device.rfind("cuda", 0) != 0);
  return absl::OkStatus();
}

// What needs the partition config, the rank or the credentials: the servers, the per-relation
// fanouts, this machine, the GPU, the job's token.
absl::Status ResolveJob(const base::ArgParser& args, const Flags& f, const base::JobEnv& job,
                        trainer::TrainOptions* o) {
  ASSIGN_OR_RETURN(o->dist, trainer::DistOptionsFromEnv());
  o->dist.timeout = std::chrono::milliseconds(static_cast<int64_t>(f.comm_timeout * 1000));
  ASSIGN_OR_RETURN(const core::PartitionConfig config, core::LoadPartitionConfig(o->part_config));
  // An explicit --ip-config or --num-servers asks for the ip_config rule over the launcher's list.
  const std::string job_servers = args.WasSet("ip-config") || args.WasSet("num-servers") ? "" : job.servers;
  ASSIGN_OR_RETURN(o->graph.servers,
                   base::ResolveServers(f.servers, job_servers, f.ip_config, o->part_config, f.num_servers,
                                        config.num_parts));
  ASSIGN_OR_RETURN(o->sampling.relation_fanouts,
                   sampler::ResolveRelationFanouts(config, o->sampling.fanouts, f.relation_fanouts));
  o->graph.machine_id = f.machine_id >= 0 ? f.machine_id : o->dist.rank / o->trainers_per_machine;
  if (job.features_from_disk_mb >= 0) o->graph.local_row_cache_bytes = int64_t{job.features_from_disk_mb} << 20;
  if (!job.features_cache_policy.empty()) {
    absl::StatusOr<core::CachePolicy> policy = core::CachePolicyFromName(job.features_cache_policy);
    if (!policy.ok()) {
      return absl::InvalidArgumentError(
          StrCat("FANOUT_FEATURES_CACHE_POLICY: ", policy.status().message()));
    }
    o->graph.local_row_cache_policy = *policy;
  }
  if (o->device == "cuda") {
    o->device = trainer::LocalRankDevice(job.local_rank >= 0 ? job.local_rank : o->dist.rank % o->trainers_per_machine,
                                         trainer::CudaDeviceCount());
  }
  // The job's token also guards the trainers' rendezvous.
  ASSIGN_OR_RETURN(auto security, rpc::Security::Load(o->graph.security, rpc::Security::Role::kClient));
  o->dist.auth_token = security.token();
  o->graph.client.security = security;  // DistGraph::Open uses these, without reading the files again
  return absl::OkStatus();
}

// With checkpoints, SIGTERM (what Kubernetes and Slurm send before killing) stops training at
// the next step with a checkpoint every rank writes at that step; exit status 143 says so.
void StopAtNextStepOnSigterm(trainer::TrainOptions* o) {
  if (o->checkpoint.dir.empty()) return;
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop_requested.store(true); };
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  o->stop_requested = &g_stop_requested;
}

// Errors are statuses; what LibTorch (or the allocator) still throws past them becomes the
// tool's one error line, not std::terminate's backtrace.
int Run(const base::ArgParser& args, const trainer::TrainOptions& o) {
  absl::StatusOr<trainer::TrainResult> result = absl::UnknownError("not run");
  try {
    result = trainer::RunTraining(o);
  } catch (const c10::Error& e) {
    result = absl::InternalError(StrCat("LibTorch: ", e.what_without_backtrace()));
  } catch (const std::bad_alloc&) {
    result = absl::ResourceExhaustedError("out of memory");
  }
  if (absl::IsCancelled(result.status()) && o.stop_requested != nullptr) {  // SIGTERM here or to another rank
    std::fprintf(stderr, "fanout-train: rank %d: %s; resume with --auto-resume (or --resume)\n", o.dist.rank,
                 std::string(result.status().message()).c_str());
    return 128 + SIGTERM;
  }
  if (!result.ok()) {
    return args.Fail(absl::Status(result.status().code(), StrCat("rank ", o.dist.rank, ": ", result.status().message())));
  }
  return 0;
}

int Main(int argc, char** argv) {
  fanout::base::KeepLargeAllocations();
  fanout::base::StartHeartbeatFromEnvironment();  // only under fanout-launch
  // Every step allocates the same large tensors again: keep them (trainer/cpu_allocator.h).
  fanout::trainer::InstallCachingCpuAllocator();
  // c10d's NCCL backend must block on a dead peer rather than hang the GPU stream; set here,
  // before gRPC or Gloo start threads (setenv is not thread-safe). A user's setting is kept.
  setenv("NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
  setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
  base::JobEnv job;
  trainer::TrainOptions o;
  Flags f;
  if (absl::Status s = ReadEnvironment(&job, &o, &f); !s.ok()) {
    std::fprintf(stderr, "fanout-train: error: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  base::ArgParser args("fanout-train", "[--part-config FILE] [flags]   (usually started by fanout-launch)");
  args.SetDescription(
      StrCat("Trains a GNN (", base::StrJoin(trainer::BuiltInModelNames(), ", "),
             ", or a TorchScript model of your own) on a partitioned graph with neighbour-sampled mini-batches;\n") +
      "gradients are averaged across every trainer of the job (Gloo on CPU, NCCL on GPU).\n\n");
  AddLayoutFlags(args, &o, &f);
  AddModelFlags(args, &o, &f);
  AddTaskFlags(args, &o, &f);
  AddSystemFlags(args, &o, &f);
  AddOutputFlags(args, &o, &f);
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  if (absl::Status s = CheckFlags(args, f, &o); !s.ok()) return args.Fail(s);
  if (absl::Status s = ResolveJob(args, f, job, &o); !s.ok()) return args.Fail(s);
  StopAtNextStepOnSigterm(&o);
  base::MemoryReportAtExit memory("trainer");
  return Run(args, o);
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }

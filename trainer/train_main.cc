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
#include "base/status.h"
#include "base/strings.h"
#include "base/text_reader.h"
#include "core/partition_config.h"
#include "rpc/security.h"
#include "trainer/cpu_allocator.h"
#include "trainer/task.h"
#include "trainer/torch_util.h"
#include "trainer/training.h"

namespace {

using namespace fanout;
using base::StrCat;

// Set by SIGTERM (with --checkpoint-dir): training stops at the next step, checkpointed.
std::atomic<bool> g_stop_requested{false};

std::string Env(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// An integer from the environment; the error names the variable.
absl::Status EnvInt(const char* name, int* out) {
  std::string v = Env(name);
  if (v.empty()) return absl::OkStatus();
  int64_t x = 0;
  if (!base::ParseInt64(v, &x) || x < 0 || x > (1 << 30)) {
    return absl::InvalidArgumentError(
        StrCat("environment variable ", name, "='", v, "' is not a count"));
  }
  *out = static_cast<int>(x);
  return absl::OkStatus();
}

std::string SelfDir() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string path = n > 0 ? std::string(self, n) : "";
  return path.substr(0, path.rfind('/') + 1);
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
  // fanout-launch's variables (base/job_env.h), else torchrun's names for the same facts.
  absl::StatusOr<base::JobEnv> job = base::JobEnv::FromEnvironment();
  if (!job.ok()) {
    std::fprintf(stderr, "fanout-train: error: %s\n", std::string(job.status().message()).c_str());
    return 2;
  }
  for (auto [torchrun, field] : {std::pair{"LOCAL_WORLD_SIZE", &base::JobEnv::num_trainers},
                                 std::pair{"GROUP_RANK", &base::JobEnv::machine_id},
                                 std::pair{"LOCAL_RANK", &base::JobEnv::local_rank}}) {
    if ((*job).*field >= 0) continue;
    if (absl::Status s = EnvInt(torchrun, &((*job).*field)); !s.ok()) {
      std::fprintf(stderr, "fanout-train: error: %s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  trainer::TrainOptions o;
  std::string model = "sage", ip_config = job->ip_config, servers;
  int num_servers = job->num_servers >= 0 ? job->num_servers : 1;
  int machine_id = job->machine_id;
  double deadline = 60, comm_timeout = 300;
  int64_t feature_cache_mb = 512;
  int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.part_config = job->part_config;
  if (job->num_trainers >= 0) o.trainers_per_machine = job->num_trainers;
  if (job->num_samplers >= 0) o.loader.num_samplers = job->num_samplers;
  if (job->restart_count > 0) o.restart_count = job->restart_count;
  o.loader.sampler_binary = SelfDir() + "fanout-sampler";
  int omp_threads = 0;  // OMP_NUM_THREADS, as the launcher sets it (0 = unset)
  if (absl::Status s = EnvInt("OMP_NUM_THREADS", &omp_threads); !s.ok()) {
    std::fprintf(stderr, "fanout-train: error: %s\n", std::string(s.message()).c_str());
    return 2;
  }

  base::ArgParser args("fanout-train",
                       "[--part-config FILE] [flags]   (usually started by fanout-launch)");
  args.SetDescription(
      "Trains a GNN (GraphSAGE, GCN or GAT) on a partitioned graph with neighbour-sampled "
      "mini-batches;\n"
      "gradients are averaged across every trainer of the job (Gloo on CPU, NCCL on GPU).\n\n");
  args.AddString("part-config", &o.part_config,
                 "the <name>.json written by fanout-partition [FANOUT_PART_CONFIG]");
  args.AddString("ip-config", &ip_config,
                 "machines of the job; finds the servers [FANOUT_IP_CONFIG]");
  args.AddInt("num-servers", &num_servers, "servers per machine [FANOUT_NUM_SERVERS]", 1);
  args.AddString("servers", &servers, "PART=HOST:PORT,... instead of --ip-config");
  args.AddInt("machine-id", &machine_id, "this machine's partition, read from its files [FANOUT_MACHINE_ID]");
  args.SetDefaultText("machine-id", "rank / trainers per machine");
  args.AddInt("num-trainers", &o.trainers_per_machine,
              "trainers per machine [FANOUT_NUM_TRAINERS]");
  args.AddString("model", &model,
                 "the GNN: sage, gcn, gat, rgcn (typed graphs: one weight per relation), or a TorchScript file "
                 "(.pt; docs/models.md)",
                 [](const std::string& v) { return trainer::ParseModelKind(v).status(); });
  args.AddInt("hidden", &o.model.hidden, "hidden width (per head for gat)");
  std::vector<int64_t> heads = {o.model.heads};
  args.AddIntList("heads", &heads, "gat attention heads: one for every layer, or one per layer (8,1)");
  args.AddDouble("dropout", &o.model.dropout, "dropout probability");
  args.AddDouble("lr", &o.lr, "Adam learning rate");
  args.AddDouble("weight-decay", &o.weight_decay, "Adam weight decay");
  args.AddInt("epochs", &o.epochs, "epochs to train");
  args.AddInt("batch-size", &o.sampling.batch_size, "seeds per mini-batch per trainer");
  args.AddIntList("fanouts", &o.sampling.fanouts,
                  "neighbours per layer, input layer first (-1 = all); sets the layer count");
  args.AddIntList("eval-fanouts", &o.eval_fanouts, "fanouts for evaluation (default: --fanouts)");
  std::vector<std::string> relation_fanouts;
  args.AddRepeatedString("relation-fanout", &relation_fanouts,
                         "typed graphs: REL=F0,F1,... gives relation REL (or SRC:REL:DST) its own fanout per layer; "
                         "the other relations take --fanouts (repeat it per relation)");
  args.AddInt("eval-batch-size", &o.eval_batch_size, "seeds per evaluation batch");
  args.AddInt("eval-every", &o.eval_every, "validate every N epochs, and after the last (0: never)");
  args.AddBool("test", &o.test, "report the test metric after the last epoch (--no-test: skip)");
  std::string negative_sampling = "uniform";
  args.AddChoice("task", &o.task, trainer::TaskNames(), StrCat("what to train for: ", trainer::TaskHelp()));
  args.AddInt("negatives", &o.link.negatives, "link: negative pairs per positive edge in training");
  args.AddString("negative-sampling", &negative_sampling,
                 "link: how negatives are drawn: uniform, or degree (probability ~ in-degree^0.75)",
                 [](const std::string& v) {
                   return v == "uniform" || v == "degree" ? absl::OkStatus()
                                                          : absl::InvalidArgumentError("expected uniform or degree");
                 });
  args.AddInt("embed-dim", &o.link.embed_dim, "link: embedding width, the model's output (0: --hidden)");
  std::string scorer = "dot";
  args.AddString("scorer", &scorer,
                 "link: a pair's score from its two embeddings: dot (product) or mlp (3 layers over their "
                 "element-wise product, trained with the model)",
                 [](const std::string& v) { return trainer::ParseScorerKind(v).status(); });
  std::string metric = "acc";
  args.AddString("metric", &metric,
                 "evaluation metric, which also picks the best model: acc, roc-auc (one-vs-rest, macro over classes) "
                 "or f1-macro",
                 [](const std::string& v) { return trainer::ParseMetric(v).status(); });
  args.AddUint("seed", &o.sampling.seed, "seed of every random choice (init, shuffles, sampling, dropout)");
  args.AddString("device", &o.device,
                 "cpu, cuda:K, or cuda: this trainer's local rank's GPU (local rank modulo the GPUs it sees), "
                 "so that the trainers of a machine take one GPU each");
  args.AddString("feature-field", &o.sampling.feature_field,
                 "node field of input features (typed graphs: each node type's TYPE/NAME, where it has one)");
  args.AddString("target-ntype", &o.target_ntype,
                 "typed graphs: the node type to classify (default: the one node type with labels)");
  args.AddInt("embed-featureless", &o.embed.dim,
              "typed graphs: learnable embeddings of this width for the node types without features, held by the "
              "servers (start them with fanout-launch --allow-push) and trained by --sparse-optimizer; the typed "
              "features are then projected to the same width. 0: featureless nodes input zeros", 0);
  std::string sparse_optimizer = "adam";
  args.AddChoice("sparse-optimizer", &sparse_optimizer, {"adam", "adagrad"},
                 "optimizer of the learnable embeddings (DGL's SparseAdam / SparseAdagrad: only the rows a step "
                 "touched change)");
  args.AddDouble("sparse-lr", &o.embed.optimizer.lr, "learning rate of the learnable embeddings");
  std::string dist_backend = "auto";
  args.AddChoice("dist-backend", &dist_backend, {"auto", "gloo", "nccl"},
                 "gradient averaging: auto (nccl on a GPU, gloo on the CPU), or gloo with a GPU too (through host "
                 "memory: trainers that share a GPU, which NCCL refuses)");
  args.AddBytes("gpu-cache-bytes", &o.gpu_cache_bytes,
                "keep the input features of the hottest nodes (--gpu-cache-policy) on the training device, up to "
                "this size (e.g. 4G); batches then fetch and copy only the other rows, and each epoch line reports "
                "the cache's hit rate over all trainers. 0: no cache");
  std::string cache_policy = "degree";
  args.AddChoice("gpu-cache-policy", &cache_policy, {"degree", "presample"},
                 "which nodes --gpu-cache-bytes holds: degree = the most in-edges in the graph; presample = the "
                 "nodes this trainer's own batches take most, counted by sampling them before training "
                 "(--gpu-cache-presample-steps), then in-degree");
  args.AddInt("gpu-cache-presample-steps", &o.gpu_cache_presample_steps,
              "--gpu-cache-policy presample: the steps sampled to count (0: a whole epoch)");
  args.AddString("edge-weight", &o.sampling.edge.weight_field,
                 "edge field with one number per edge that weights each message (DGL's edge_weight: SAGE's mean, "
                 "GCN's sum and GAT's attention; block['edge_weight'] in scripted models); default: unweighted");
  args.AddString("edge-feature", &o.sampling.edge.feature_field,
                 "edge field (any width) given to scripted models for every sampled edge as block['edge_feat'], "
                 "float32 [num_edges, width]; the built-in models do not read edge features");
  args.AddString("label-field", &o.sampling.label_field, "node field of labels");
  args.AddInt("num-samplers", &o.loader.num_samplers,
              "sampler processes per trainer; 0 = sample in-process [FANOUT_NUM_SAMPLERS]");
  args.AddInt("sampler-threads", &o.loader.num_threads, "sampling threads when --num-samplers is 0");
  args.AddInt("prefetch", &o.loader.prefetch, "mini-batches made ahead");
  args.AddString("sampler-bin", &o.loader.sampler_binary, "the fanout-sampler program");
  args.AddInt("num-threads", &o.intra_op_threads, "LibTorch intra-op threads");
  args.AddAlias("threads", "num-threads");
  args.SetDefaultText("num-threads", "OMP_NUM_THREADS, else cores / trainers per machine");
  args.AddDouble("deadline", &deadline, "seconds allowed per server call");
  base::AddSecurityFlags(args, &o.graph.security);
  args.AddInt("feature-cache-mb", &feature_cache_mb,
              "memory per process (each sampler, and the trainer when it fetches features itself: "
              "no samplers, or evaluation) for the features of this machine's halo nodes, pulled "
              "once at start so that batches fetch fewer remote rows; 0 = off",
              0, std::numeric_limits<int64_t>::max() >> 20);
  args.AddDouble("comm-timeout", &comm_timeout,
                 "seconds a collective may wait for the other trainers");
  args.AddInt("log-every", &o.log_every, "print a line every N steps (0: per epoch only)");
  args.AddBool("print-batch-checksums", &o.print_batch_checksums,
               "print a CRC-32 of every training batch, per rank (to compare loaders; docs/python.md)");
  std::string progress;
  base::AddProgressFlag(args, &progress);  // rank 0's epochs, evaluation and inference
  args.AddString("metrics-file", &o.metrics_file, "JSON-lines metrics (rank 0)");
  args.AddString("tensorboard-dir", &o.tensorboard_dir,
                 "rank 0 writes a TensorBoard event file here: losses, metrics and the time breakdown per epoch");
  args.AddString("checkpoint-dir", &o.checkpoint_dir,
                 "best.pt (rank 0) and last.rank<r>.pt after every epoch");
  args.AddBool("resume", &o.resume, "continue from --checkpoint-dir's last state");
  args.AddBool("auto-resume", &o.auto_resume,
               "resume from --checkpoint-dir when it holds a checkpoint every rank has, else start from scratch "
               "(one command for a job and its requeued runs)");
  args.AddInt("checkpoint-every-steps", &o.checkpoint_every_steps,
              "also write last.rank<r>.pt every K steps inside an epoch (0 = after each epoch only); "
              "resuming continues at the exact step",
              0);
  args.AddString("load-model", &o.load_model,
                 "start from this checkpoint's model (e.g. best.pt); with --epochs 0, evaluate and infer only");
  args.AddString("save-embeddings", &o.save_embeddings,
                 "after training, full-graph inference: embeddings.npy, predictions.npy and embeddings.json "
                 "in this folder, rows in original node-ID order");
  args.AddBool("overwrite", &o.overwrite, "replace --save-embeddings if an earlier fanout-train wrote it");
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  o.progress = base::ApplyProgressFlag(progress);
  // LibTorch's pool size: --num-threads, else OMP_NUM_THREADS (the launcher sets it), else this
  // trainer's share of the cores. Debian's LibTorch would otherwise start with 1.
  if (!args.WasSet("num-threads")) {
    o.intra_op_threads = omp_threads > 0 ? omp_threads : std::max(1, hw / std::max(1, o.trainers_per_machine));
  }

  if (o.part_config.empty())
    return args.Fail(
        absl::InvalidArgumentError("--part-config (or FANOUT_PART_CONFIG) is required"));
  o.metric = *trainer::ParseMetric(metric);
  o.link.negative_sampling =
      negative_sampling == "degree" ? sampler::NegativeSampling::kDegreePow75 : sampler::NegativeSampling::kUniform;
  auto task = trainer::MakeTask(o.task);
  if (!task.ok()) return args.Fail(task.status());
  if (std::optional<trainer::Metric> fixed = (*task)->fixed_metric()) {
    if (args.WasSet("metric") && o.metric != *fixed) {
      return args.Fail(absl::InvalidArgumentError(StrCat("--task ", o.task, " reports ", trainer::MetricName(*fixed),
                                                         " and selects the model by it: leave --metric out")));
    }
    o.metric = *fixed;
  }
  if (o.task != "link") {
    for (const char* flag : {"negatives", "negative-sampling", "embed-dim", "scorer"}) {
      if (args.WasSet(flag)) {
        return args.Fail(absl::InvalidArgumentError(base::StrCat("--", flag, " applies to --task link only")));
      }
    }
  }
  o.link.scorer = *trainer::ParseScorerKind(scorer);
  if (heads.size() == 1) {
    o.model.heads = heads[0];
  } else {
    o.model.layer_heads = heads;
  }
  // Every flag is checked before anything connects (issue 11: --lr nan reached LibTorch and
  // aborted with a backtrace, --prefetch 0 hung the loader forever).
  if (absl::Status v = trainer::ValidateTrainOptions(o); !v.ok()) return args.Fail(v);
  if (num_servers < 1) {  // only FANOUT_NUM_SERVERS can get here: the flag's range is the parser's
    return args.Fail(absl::InvalidArgumentError(StrCat("FANOUT_NUM_SERVERS must be >= 1, got ", num_servers)));
  }
  if (machine_id < -1) {
    return args.Fail(absl::InvalidArgumentError(StrCat(
        "--machine-id must be a partition number >= 0 (default: rank / trainers per machine), got ",
        machine_id)));
  }
  if (!(deadline > 0))
    return args.Fail(
        absl::InvalidArgumentError(StrCat("--deadline must be > 0 seconds, got ", deadline)));
  if (!(comm_timeout > 0) || comm_timeout > 1e9) {
    return args.Fail(absl::InvalidArgumentError(
        StrCat("--comm-timeout must be in (0, 1e9] seconds, got ", comm_timeout)));
  }
  o.embed.optimizer.kind = *trainer::ParseSparseOptimizer(sparse_optimizer);
  if (o.embed.optimizer.kind == trainer::SparseOptimizerKind::kAdagrad) o.embed.optimizer.eps = 1e-10;  // DGL's
  if (!(std::isfinite(o.embed.optimizer.lr) && o.embed.optimizer.lr > 0)) {
    return args.Fail(
        absl::InvalidArgumentError(StrCat("--sparse-lr must be a number > 0, got ", o.embed.optimizer.lr)));
  }
  auto model_kind = trainer::ParseModelKind(model);
  if (!model_kind.ok()) return args.Fail(model_kind.status());
  o.model.model = *model_kind;
  if (*model_kind == trainer::ModelKind::kScripted) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(model, ec)) {
      return args.Fail(absl::NotFoundError(StrCat("--model ", model, ": no such file (a TorchScript model; see docs/models.md)")));
    }
    o.model.script_path = model;
  }
  auto dist = trainer::DistOptionsFromEnv();
  if (!dist.ok()) return args.Fail(dist.status());
  o.dist = *dist;
  o.dist.timeout = std::chrono::milliseconds(static_cast<int64_t>(comm_timeout * 1000));
  auto config = core::LoadPartitionConfig(o.part_config);
  if (!config.ok()) return args.Fail(config.status());
  // An explicit --ip-config or --num-servers asks for the ip_config rule over the launcher's list.
  const std::string job_servers = args.WasSet("ip-config") || args.WasSet("num-servers") ? "" : job->servers;
  auto map = base::ResolveServers(servers, job_servers, ip_config, o.part_config, num_servers, config->num_parts);
  if (!map.ok()) return args.Fail(map.status());
  o.graph.servers = std::move(*map);
  auto resolved = sampler::ResolveRelationFanouts(*config, o.sampling.fanouts, relation_fanouts);
  if (!resolved.ok()) return args.Fail(resolved.status());
  o.sampling.relation_fanouts = std::move(*resolved);
  o.graph.machine_id = machine_id >= 0 ? machine_id : o.dist.rank / o.trainers_per_machine;
  if (dist_backend != "auto") o.dist_backend = *trainer::ParseCommBackend(dist_backend);
  o.gpu_cache_presample = cache_policy == "presample";
  if (o.device == "cuda") {
    o.device = trainer::LocalRankDevice(job->local_rank >= 0 ? job->local_rank : o.dist.rank % o.trainers_per_machine,
                                        trainer::CudaDeviceCount());
  }
  o.graph.client.deadline_seconds = deadline;
  o.graph.connect_timeout_seconds = deadline;
  // The job's token also guards the trainers' rendezvous.
  auto security = rpc::Security::Load(o.graph.security, rpc::Security::Role::kClient);
  if (!security.ok()) return args.Fail(security.status());
  o.dist.auth_token = security->token();
  o.graph.client.security = *security;  // DistGraph::Open uses these, without reading the files again
  o.graph.cache_field = o.sampling.feature_field;
  o.graph.cache_max_bytes = feature_cache_mb << 20;

  // With checkpoints, SIGTERM (what Kubernetes and Slurm send before killing) stops training at
  // the next step with a checkpoint every rank writes at that step; exit status 143 says so.
  if (!o.checkpoint_dir.empty()) {
    struct sigaction sa {};
    sa.sa_handler = [](int) { g_stop_requested.store(true); };
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, nullptr);
    o.stop_requested = &g_stop_requested;
  }
  // Errors are statuses; what LibTorch (or the allocator) still throws past them becomes the
  // tool's one error line, not std::terminate's backtrace.
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
    return args.Fail(absl::Status(result.status().code(),
                                  StrCat("rank ", o.dist.rank, ": ", result.status().message())));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }

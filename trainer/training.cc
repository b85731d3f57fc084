#include "trainer/training.h"

#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/serialize.h>
#include <torch/serialize/archive.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "base/fsync.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/tensorboard.h"
#include "core/random.h"
#include "core/sampling.h"
#include "nlohmann/json.hpp"
#include "sampler/cache_choice.h"
#include "sampler/loader.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/seed_split.h"
#include "sampler/server_fields.h"
#include "trainer/batch_tensors.h"
#include "trainer/checkpoint.h"
#include "trainer/device_upload.h"
#include "trainer/feature_cache.h"
#include "trainer/inference.h"
#include "trainer/metrics.h"
#include "trainer/task.h"
#include "trainer/torch_util.h"
#include "trainer/typed_input.h"

namespace fanout::trainer {

using base::StrCat;

namespace {

// An epoch's running sums, kept on the device: reading a value (.item()) waits for the device,
// so a step adds tensors and the host reads them only when it prints (--log-every) and once at
// the epoch's end. float64, so the sums are the ones the host would have made.
class EpochSums {
 public:
  void Add(const StepLoss& s) {
    const at::Tensor loss = s.loss.detach().to(at::kDouble) * s.n;
    const at::Tensor correct = s.correct.to(at::kDouble);
    loss_ = loss_.defined() ? loss_ + loss : loss;
    correct_ = correct_.defined() ? correct_ + correct : correct;
    count_ += s.n;
  }
  // Loss sum, correct count, examples: waits for the device.
  std::vector<double> Read() const {
    return {loss_.defined() ? loss_.item<double>() : 0.0, correct_.defined() ? correct_.item<double>() : 0.0, count_};
  }
  // Starts from what Read() returned (a checkpoint inside the epoch): the sums go on in the same
  // order of additions, so the epoch's figures come out as if never interrupted.
  void Restore(const std::vector<double>& read) {
    loss_ = at::full({}, read[0], at::kDouble);
    correct_ = at::full({}, read[1], at::kDouble);
    count_ = read[2];
  }

 private:
  at::Tensor loss_, correct_;
  double count_ = 0;
};

// What typed graphs train with so far (issue 29): node classification on a target type with
// sampled evaluation; refused, naming the flag, where a typed path is not built yet.
absl::Status CheckTypedSupport(const TrainOptions& o, const core::PartitionConfig& config) {
  auto no = [&](const char* what) {
    return absl::UnimplementedError(StrCat(what, " on a typed graph ('", config.graph_name, "': ",
                                           config.node_types.size(), " node types, ", config.edge_types.size(),
                                           " edge types) is not built yet"));
  };
  if (o.gpu_cache_bytes > 0) return no("--gpu-cache-bytes (the device feature cache)");
  if (o.embed.dim > 0 && !o.load_model.empty()) {
    return no("--load-model with --embed-featureless (best.pt holds the model, not the embeddings; --resume reads "
              "them from last.rank<r>.pt)");
  }
  return absl::OkStatus();
}

std::string LastCheckpoint(const TrainOptions& o) {
  return StrCat(o.checkpoint_dir, "/last.rank", o.dist.rank, ".pt");
}

// The last checkpoint before LastCheckpoint's: a rank killed while the others wrote epoch E
// still has E-1 there, so a restart finds an epoch every rank holds.
std::string PreviousCheckpoint(const TrainOptions& o) {
  return StrCat(o.checkpoint_dir, "/last.rank", o.dist.rank, ".prev.pt");
}

class Job final : public JobContext {
 public:
  Job(const TrainOptions& o, std::unique_ptr<Task> task) : o_(o), task_(std::move(task)) {}

  absl::StatusOr<TrainResult> Run();

  // JobContext (task.h): what the task uses.
  const TrainOptions& options() const override { return o_; }
  const core::PartitionConfig& config() const override { return graph_->config(); }
  sampler::DistGraph& graph() override { return *graph_; }
  Communicator& comm() override { return *comm_; }
  GnnModel& model() override { return *model_; }
  c10::Device device() const override { return device_; }
  DeviceUploader& uploader() override { return *uploader_; }
  const FeatureCache* feature_cache() const override { return feature_cache_.get(); }
  absl::StatusOr<BatchTensors> StepTensors(const sampler::MiniBatch& mb, int64_t epoch, int64_t step, bool labels,
                                           Breakdown& t) override;
  absl::StatusOr<at::Tensor> ModelInput(const BatchTensors& bt, const sampler::MiniBatch& mb) override {
    if (typed_input_ == nullptr) return bt.features;
    return typed_input_->Forward(bt, mb, embeddings_.get());
  }
  InferenceOptions Inference() const override;
  bool lead() const override { return comm_->rank() == 0; }
  void Log(const std::string& line) const override;

 private:
  absl::Status Setup();
  // feature_cache_ (--gpu-cache-bytes), its nodes chosen by --gpu-cache-policy.
  absl::Status BuildFeatureCache();
  // From `first_step` on (a job resumed inside the epoch: the steps before it are in
  // resumed_sums_).
  absl::Status TrainEpoch(int64_t epoch, int64_t first_step);
  void SeedStep(int64_t epoch, int64_t step);
  Checkpoint MakeCheckpoint(int64_t epoch) const;
  // This rank's state to continue at (next_epoch, next_step): after an epoch (next_step 0), or
  // inside one, with the epoch's running sums so far (its line then reads as uninterrupted).
  absl::Status SaveLast(int64_t next_epoch, int64_t next_step, const std::vector<double>& epoch_sums = {});
  absl::Status SaveBest(int64_t epoch, double val);
  // "val_acc", "test_roc_auc", ...: the metrics file's and checkpoints' key for the --metric.
  std::string MetricKey(const std::string& prefix) const {
    std::string name(MetricName(o_.metric));
    std::replace(name.begin(), name.end(), '-', '_');
    return prefix + "_" + name;
  }
  // "accuracy", "roc-auc", "f1-macro": how lines name the --metric.
  std::string MetricText() const {
    return o_.metric == Metric::kAccuracy ? "accuracy" : std::string(MetricName(o_.metric));
  }
  // Where to continue, as (epoch, step).
  struct Position {
    int64_t epoch = 0, step = 0;
  };
  // Loads the newest position that every rank has checkpointed (in its last or previous file)
  // and returns it. With none: an error when `required` (--resume), else (0, 0): a restart that
  // came before the first checkpoint starts from scratch.
  absl::StatusOr<Position> Resume(bool required);
  // From a checkpoint inside an epoch: that epoch's running sums (EpochSums::Read and the cache
  // counts) up to the step resumed at; empty otherwise.
  std::vector<double> resumed_sums_;
  absl::Status LoadModel();
  absl::Status SaveEmbeddings();
  void Metrics(const nlohmann::json& j);

  TrainOptions o_;
  std::unique_ptr<Task> task_;
  std::unique_ptr<sampler::DistGraph> graph_;
  std::shared_ptr<const FeatureCache> feature_cache_;  // --gpu-cache-bytes; null: none
  std::string cache_choice_;                           // how its nodes were chosen, for the log
  std::unique_ptr<DeviceUploader> uploader_;           // batches to device_, without blocking the host
  std::unique_ptr<Communicator> comm_;
  c10::Device device_{c10::kCPU};
  std::shared_ptr<GnnModel> model_;
  // Typed graphs: the input layer (registered in the model as "input"), and the learnable
  // embeddings of featureless types with the servers' fields that hold them.
  std::shared_ptr<TypedInput> typed_input_;
  std::unique_ptr<sampler::ServerFields> server_fields_;
  std::unique_ptr<DistEmbeddings> embeddings_;
  std::unique_ptr<torch::optim::Adam> opt_;
  std::unique_ptr<GradientSynchronizer> sync_;
  SplitSizes sizes_;                     // the task's, over all ranks
  std::vector<at::Tensor> best_params_;  // copy of the best-validation parameters
  std::ofstream metrics_;
  std::unique_ptr<base::EventFileWriter> tensorboard_;  // rank 0, --tensorboard-dir
  TrainResult result_;
};

void Job::Log(const std::string& line) const {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void Job::Metrics(const nlohmann::json& j) {
  if (metrics_.is_open()) {
    metrics_ << j.dump() << "\n";
    metrics_.flush();
  }
  if (tensorboard_ != nullptr) {
    int64_t step = result_.epochs_run;
    std::vector<std::pair<std::string, float>> scalars = TensorBoardScalars(j, &step);
    if (absl::Status s = tensorboard_->AddScalars(step, scalars); !s.ok()) {
      Log(StrCat("fanout-train: warning: TensorBoard events no longer written: ", s.message()));
      tensorboard_.reset();
    }
  }
}


absl::Status Job::Setup() {
  ASSIGN_OR_RETURN(core::PartitionConfig config, core::LoadPartitionConfig(o_.part_config));
  if (o_.dist.world_size != config.num_parts * o_.trainers_per_machine) {
    return absl::InvalidArgumentError(StrCat(
        "world size ", o_.dist.world_size, " != ", config.num_parts, " partitions (machines) x ",
        o_.trainers_per_machine, " trainers per machine; partition config ", o_.part_config));
  }
  ASSIGN_OR_RETURN(device_, ParseDevice(o_.device));
  uploader_ = std::make_unique<DeviceUploader>(device_);
  RETURN_IF_ERROR(SetIntraOpThreads(o_.intra_op_threads));
  // The trainer's own graph fetches features only for evaluation or when it samples itself;
  // otherwise only its sampler processes (which get o_.graph) keep the halo cache.
  sampler::DistGraphOptions own = o_.graph;
  if (o_.loader.num_samplers > 0 && o_.eval_every <= 0 && !o_.test) own.cache_max_bytes = 0;
  ASSIGN_OR_RETURN(graph_, sampler::DistGraph::Open(config, own));

  // Model dimensions come from the graph.
  const sampler::SamplerOptions& so = o_.sampling;
  ModelOptions mo = o_.model;
  if (config.typed()) {
    RETURN_IF_ERROR(CheckTypedSupport(o_, config));
    ASSIGN_OR_RETURN(typed_input_, TypedInput::Make(*graph_, so.feature_field, o_.embed.dim, so.seed));
    mo.in_dim = typed_input_->width();
    mo.num_relations = static_cast<int64_t>(config.edge_types.size());
  } else if (o_.embed.dim > 0) {
    // A graph without features (or told to ignore them with --feature-field ''): every node gets
    // a learnable row, the one node type's table.
    if (!so.feature_field.empty() && graph_->NodeFieldSchema(so.feature_field).ok()) {
      return absl::InvalidArgumentError(StrCat("--embed-featureless: graph '", config.graph_name, "' has features '",
                                               so.feature_field, "'; learnable rows are for nodes without features "
                                               "(--feature-field '' trains them in place of the features)"));
    }
    o_.sampling.feature_field = "";
    ASSIGN_OR_RETURN(typed_input_, TypedInput::Make(*graph_, "", o_.embed.dim, so.seed));
    mo.in_dim = typed_input_->width();
  } else {
    if (!o_.target_ntype.empty()) {
      return absl::InvalidArgumentError(
          StrCat("--target-ntype: graph '", config.graph_name, "' has one node type"));
    }
    ASSIGN_OR_RETURN(core::FieldSchema feat, graph_->NodeFieldSchema(so.feature_field));
    mo.in_dim = feat.row_elems();
  }
  for (const auto& [flag, field] : {std::pair{"--edge-weight", &sampler::EdgeDataOptions::weight_field},
                                     {"--edge-feature", &sampler::EdgeDataOptions::feature_field}}) {
    if (so.edge.*field == "") continue;
    sampler::SamplerOptions check;
    check.fanouts = so.fanouts;
    check.feature_field = "";
    check.label_field = "";
    check.edge.*field = so.edge.*field;
    if (absl::Status s = sampler::ValidateSamplerOptions(check, *graph_); !s.ok()) {
      return absl::InvalidArgumentError(StrCat(flag, ": ", s.message()));
    }
  }
  const int64_t in_dim = mo.in_dim;
  ASSIGN_OR_RETURN(mo.num_classes, task_->Prepare(*this));
  sizes_ = task_->sizes();
  mo.num_layers = static_cast<int64_t>(so.fanouts.size());
  RETURN_IF_ERROR(ValidateModelOptions(mo));

  if (o_.gpu_cache_bytes > 0) RETURN_IF_ERROR(BuildFeatureCache());

  // The model first (a scripted one that does not fit the graph fails here, before any peer
  // waits), then join the other trainers and start from rank 0's parameters.
  ASSIGN_OR_RETURN(model_, MakeModel(mo, so.seed));
  RETURN_IF_ERROR(task_->AddModules(*this, *model_, mo));
  if (typed_input_ != nullptr) model_->register_module("input", typed_input_);
  DistOptions d = o_.dist;
  d.backend = o_.dist_backend.value_or(device_.is_cuda() ? CommBackend::kNccl : CommBackend::kGloo);
  d.cuda_device = device_.is_cuda() ? device_.index() : 0;
  ASSIGN_OR_RETURN(comm_, Connect(d));
  RETURN_IF_ERROR(CatchTorch("moving the model", [&] { model_->to(device_); }));
  RETURN_IF_ERROR(BroadcastParameters(*comm_, model_->parameters()));
  if (typed_input_ != nullptr && o_.embed.dim > 0 && !typed_input_->featureless().empty()) {
    ASSIGN_OR_RETURN(server_fields_, sampler::ServerFields::Make(config, o_.graph.servers, o_.graph.client));
    EmbeddingOptions eo = o_.embed;
    eo.seed = core::SplitMix64(so.seed ^ 0xe3bedull);
    ASSIGN_OR_RETURN(embeddings_, DistEmbeddings::Create(*graph_, server_fields_.get(), typed_input_->featureless(), eo,
                                                         *comm_, o_.trainers_per_machine));
  }
  opt_ = std::make_unique<torch::optim::Adam>(
      model_->parameters(), torch::optim::AdamOptions(o_.lr).weight_decay(o_.weight_decay));
  sync_ = std::make_unique<GradientSynchronizer>(model_->parameters());
  if (lead() && !o_.metrics_file.empty()) {
    metrics_.open(o_.metrics_file, o_.resume || o_.restart_count > 0 ? std::ios::app : std::ios::trunc);
    if (!metrics_)
      return absl::PermissionDeniedError(StrCat("cannot write metrics file ", o_.metrics_file));
  }
  if (lead() && !o_.tensorboard_dir.empty()) {
    absl::StatusOr<std::unique_ptr<base::EventFileWriter>> tb = base::EventFileWriter::Open(o_.tensorboard_dir);
    if (!tb.ok()) return absl::Status(tb.status().code(), StrCat("--tensorboard-dir: ", tb.status().message()));
    tensorboard_ = std::move(*tb);
  }
  if (!o_.checkpoint_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o_.checkpoint_dir, ec);
    if (ec)
      return absl::PermissionDeniedError(
          StrCat("cannot create checkpoint folder ", o_.checkpoint_dir, ": ", ec.message()));
  }
  if (lead()) {
    Log(StrCat("fanout-train: graph '", config.graph_name, "' (", config.num_nodes, " nodes, ",
               config.num_parts, " partitions), ", o_.dist.world_size, " trainer(s); ",
               mo.model == ModelKind::kScripted ? StrCat("scripted model ", mo.script_path, ",")
                                                : StrCat(ModelKindName(mo.model), " ", mo.num_layers, " layers, hidden ", mo.hidden, ","),
               " ",
               in_dim, " -> ", mo.num_classes, " classes; fanouts ", base::StrJoin(so.fanouts, ","),
               ", batch ", so.batch_size, "; train/val/test ", sizes_.train, "/", sizes_.val, "/",
               sizes_.test, "; ", o_.loader.num_samplers, " sampler process(es) per trainer; ",
               o_.intra_op_threads, " intra-op thread(s); device ", o_.device));
    if (typed_input_ != nullptr) {
      const core::TypeMap& types = graph_->node_types();
      auto names = [&](const std::vector<int>& ts) {
        std::vector<std::string> n;
        for (int t : ts) n.push_back(types.name(t));
        return base::StrJoin(n, ", ");
      };
      std::vector<std::string> parts;
      if (!typed_input_->featured().empty()) {
        parts.push_back(StrCat(names(typed_input_->featured()), " features",
                               o_.embed.dim > 0 ? StrCat(" projected to ", typed_input_->width()) : std::string()));
      }
      if (!typed_input_->featureless().empty()) {
        parts.push_back(StrCat(names(typed_input_->featureless()), " nodes:",
                       embeddings_ != nullptr
                           ? StrCat(" learnable rows of ", o_.embed.dim, " on the servers (sparse ",
                                    SparseOptimizerName(o_.embed.optimizer.kind), ", lr ", o_.embed.optimizer.lr, ")")
                           : std::string(" zeros (no --embed-featureless)")));
      }
      Log(StrCat("fanout-train: model input: ", base::StrJoin(parts, "; ")));
    }
    if (!so.relation_fanouts.empty()) {
      std::vector<std::string> per;
      for (size_t r = 0; r < config.edge_types.size(); ++r) {
        std::vector<int64_t> f;
        for (const auto& layer : so.relation_fanouts) f.push_back(layer[r]);
        per.push_back(StrCat(config.edge_types[r].ToString(), " ", base::StrJoin(f, ",")));
      }
      Log(StrCat("fanout-train: fanouts per relation: ", base::StrJoin(per, "; ")));
    }
    if (!so.edge.weight_field.empty()) {
      Log(StrCat("fanout-train: messages weighted by edge field '", so.edge.weight_field, "'"));
    }
    if (!so.edge.feature_field.empty()) {
      Log(StrCat("fanout-train: edge field '", so.edge.feature_field, "' in every block as block[\"edge_feat\"]"));
    }
    if (feature_cache_ != nullptr) {
      Log(StrCat("fanout-train: device feature cache: ", feature_cache_->size(), " of ", config.num_nodes,
                 " nodes' rows of '", so.feature_field, "' (", feature_cache_->bytes() >> 20, " MiB: ", cache_choice_, ") on ",
                 o_.device));
    }
    if (const sampler::RowCache* cache = graph_->row_cache()) {
      Log(StrCat("fanout-train: feature cache: ", cache->size(), " halo rows of '", cache->field(), "' (",
                 cache->bytes() >> 20, " MiB) in the trainer", o_.loader.num_samplers > 0 ? " and in each sampler process" : ""));
    } else if (o_.loader.num_samplers > 0 && o_.graph.cache_max_bytes > 0 && config.num_parts > 1) {
      Log(StrCat("fanout-train: feature cache: halo rows of '", o_.graph.cache_field,
                 config.typed() ? "' (TYPE/" + o_.graph.cache_field + " of the featured type with the most halo nodes)"
                                : "'",
                 " in each sampler process (up to ",
                 o_.graph.cache_max_bytes >> 20, " MiB each)"));
    }
  }
  return absl::OkStatus();
}

absl::Status Job::BuildFeatureCache() {
  FeatureCacheOptions fo;
  fo.field = o_.sampling.feature_field;
  fo.max_bytes = o_.gpu_cache_bytes;
  if (o_.gpu_cache_presample) {
    // The batches training will draw, without their data: only which nodes they take.
    const std::vector<int64_t>* nodes = task_->train_nodes();
    if (nodes == nullptr) {
      return absl::InvalidArgumentError("--gpu-cache-policy presample samples node batches; this task takes degree");
    }
    sampler::SamplerOptions so = o_.sampling;
    so.rank = o_.dist.rank;
    so.seeds_per_epoch = sampler::SeedsPerEpoch(sizes_.train, o_.dist.world_size);
    so.feature_field = "";
    so.label_field = "";
    so.edge = {};
    sampler::MiniBatchSampler presampler(graph_.get(), so, *nodes);
    const int64_t steps = o_.gpu_cache_presample_steps > 0
                              ? std::min(o_.gpu_cache_presample_steps, presampler.steps_per_epoch())
                              : presampler.steps_per_epoch();
    const auto t0 = Clock::now();
    ASSIGN_OR_RETURN(fo.counts, sampler::PresampleInputCounts(&presampler, steps, graph_->num_nodes()));
    cache_choice_ = StrCat("the nodes most taken by this trainer's first ", steps, " batches, presampled in ",
                           static_cast<int64_t>(Since(t0) * 1000), " ms; then the most in-edges");
  } else {
    cache_choice_ = "the nodes with the most in-edges";
  }
  ASSIGN_OR_RETURN(feature_cache_, FeatureCache::Build(*graph_, fo, device_));
  return absl::OkStatus();
}

absl::StatusOr<BatchTensors> Job::StepTensors(const sampler::MiniBatch& mb, int64_t epoch, int64_t step, bool labels,
                                              Breakdown& t) {
  t.sample += mb.sample_seconds;
  t.fetch += mb.fetch_seconds;
  const auto t0 = Clock::now();
  ToTensorsOptions to;
  to.device = device_;
  to.num_classes = labels ? model_->options().num_classes : 0;
  to.feature_cache = feature_cache_.get();
  to.uploader = uploader_.get();
  ASSIGN_OR_RETURN(BatchTensors bt, ToTensors(mb, to));
  t.copy += Since(t0);
  t.inputs += static_cast<int64_t>(mb.input_nodes().size());
  t.cached += bt.cached_inputs;
  SeedStep(epoch, step);
  return bt;
}

// Dropout draws from a stream seeded by (seed, epoch, step, rank): a resumed run repeats it.
void Job::SeedStep(int64_t epoch, int64_t step) {
  SeedTorch(core::SplitMix64(o_.sampling.seed ^ core::SplitMix64((static_cast<uint64_t>(epoch) << 32) ^
                                                        (static_cast<uint64_t>(step) << 8) ^
                                                        static_cast<uint64_t>(comm_->rank()))));
}

absl::Status Job::TrainEpoch(int64_t epoch, int64_t first_step) {
  model_->train();
  Breakdown t;
  const auto start = Clock::now();
  EpochSums running;
  if (first_step > 0 && resumed_sums_.size() == 5) {
    running.Restore(resumed_sums_);
    t.cached = static_cast<int64_t>(resumed_sums_[3]);
    t.inputs = static_cast<int64_t>(resumed_sums_[4]);
  }
  resumed_sums_.clear();
  const int64_t steps = task_->steps_per_epoch();
  base::ProgressMeter meter("fanout-train", StrCat("epoch ", epoch), steps, "steps",
                            lead() ? o_.progress : base::ProgressMode::kOff);
  for (int64_t step = first_step; step < steps; ++step) {
    RETURN_IF_ERROR(CatchTorch("zeroing the gradients", [&] { opt_->zero_grad(); }));
    ASSIGN_OR_RETURN(StepLoss s, task_->Step(*this, epoch, step, t));
    auto t0 = Clock::now();
    RETURN_IF_ERROR(CatchTorch("backward", [&] { s.loss.backward(); }));
    t.backward += Since(t0);
    t0 = Clock::now();
    absl::Status synced = sync_->AllReduceMean(*comm_);
    if (!synced.ok()) {
      return absl::Status(synced.code(),
                          StrCat("gradient all-reduce at epoch ", epoch, " step ", step,
                                 " (a trainer is gone or stuck?): ", synced.message()));
    }
    t.allreduce += Since(t0);
    t0 = Clock::now();
    RETURN_IF_ERROR(CatchTorch("optimizer step", [&] { opt_->step(); }));
    if (embeddings_ != nullptr) {
      absl::Status s = embeddings_->Step(*comm_);
      if (!s.ok()) {
        return absl::Status(s.code(), StrCat("learnable embeddings' update at epoch ", epoch, " step ", step, ": ",
                                             s.message()));
      }
    }
    t.update += Since(t0);
    running.Add(s);
    if (lead() && o_.log_every > 0 && (step + 1) % o_.log_every == 0) {  // reads the device: only here
      meter.Clear();  // the line below must not land inside a progress line
      Log(StrCat("epoch ", epoch, " step ", step + 1, "/", steps, " | loss ", s.loss.item<double>(), " | acc ",
                 s.correct.item<double>() / std::max(1.0, s.n)));
    }
    meter.Set(step + 1);
    // A stop asked of any rank (SIGTERM) stops every rank here, after the same step.
    bool stop = false;
    if (o_.stop_requested != nullptr) {
      ASSIGN_OR_RETURN(std::vector<double> asked, AllReduceSum(*comm_, {o_.stop_requested->load() ? 1.0 : 0.0}));
      stop = asked[0] > 0;
    }
    const int64_t every = o_.checkpoint_every_steps;
    if (stop || (every > 0 && (step + 1) % every == 0 && step + 1 < steps)) {
      std::vector<double> sums = running.Read();
      sums.push_back(static_cast<double>(t.cached));
      sums.push_back(static_cast<double>(t.inputs));
      RETURN_IF_ERROR(SaveLast(epoch, step + 1, sums));
    }
    if (stop) {
      meter.Finish();
      return absl::CancelledError(
          StrCat("SIGTERM: stopped after a checkpoint at epoch ", epoch, " step ", step + 1, " of ", steps,
                 " (every rank stops at this step)"));
    }
  }
  meter.Finish();
  std::vector<double> local = running.Read();  // the epoch's one wait for the device
  const double epoch_s = Since(start);
  // The cache's counts ride along: the hit rate is over every rank's inputs, in one collective.
  const size_t cache_counts = local.size();
  local.push_back(static_cast<double>(t.cached));
  local.push_back(static_cast<double>(t.inputs));
  ASSIGN_OR_RETURN(std::vector<double> sums, AllReduceSum(*comm_, local));
  const double loss = sums[0] / std::max(1.0, sums[2]), acc = sums[1] / std::max(1.0, sums[2]);
  const double seeds_per_s = sums[2] / std::max(1e-9, epoch_s);
  double val = -1;
  const bool eval_now =
      o_.eval_every > 0 && ((epoch + 1) % o_.eval_every == 0 || epoch + 1 == o_.epochs);
  std::string val_detail;
  if (eval_now && sizes_.val > 0) {
    ASSIGN_OR_RETURN(val, task_->Evaluate(*this, Split::kVal, epoch));
    val_detail = task_->EvaluationDetail();
  }
  if (lead()) {
    char val_text[32] = "-";
    if (val >= 0) std::snprintf(val_text, sizeof(val_text), "%.4f", val);
    char line[512];
    std::snprintf(
        line, sizeof(line),
        "epoch %lld | loss %.4f | train acc %.4f | val %s %s | %.2f s (sample %.2f, fetch %.2f, "
        "wait %.2f, "
        "copy %.2f, forward %.2f, backward %.2f, all-reduce %.2f, update %.2f) | %.0f seeds/s",
        static_cast<long long>(epoch), loss, acc, o_.metric == Metric::kAccuracy ? "acc" : MetricText().c_str(),
        val_text, epoch_s, t.sample, t.fetch, t.wait, t.copy, t.forward, t.backward, t.allreduce, t.update,
        seeds_per_s);
    std::string text = line;
    // The share of all ranks' input rows that the device caches held.
    const double hit_rate = sums[cache_counts] / std::max(1.0, sums[cache_counts + 1]);
    if (feature_cache_ != nullptr) {
      char hits[48];
      std::snprintf(hits, sizeof(hits), " | cache hits %.1f%%", 100 * hit_rate);
      text += hits;
    }
    Log(!val_detail.empty() ? StrCat(text, " | val ", val_detail) : text);
    nlohmann::json j = {{"event", "epoch"},
                        {"epoch", epoch},
                        {"loss", loss},
                        {"train_acc", acc},
                        {"epoch_seconds", epoch_s},
                        {"sample_seconds", t.sample},
                        {"fetch_seconds", t.fetch},
                        {"wait_seconds", t.wait},
                        {"copy_seconds", t.copy},
                        {"forward_seconds", t.forward},
                        {"backward_seconds", t.backward},
                        {"allreduce_seconds", t.allreduce},
                        {"update_seconds", t.update},
                        {"steps", steps},
                        {"seeds_per_second", seeds_per_s},
                        {"world_size", comm_->world_size()}};
    if (o_.restart_count > 0) j["restart_count"] = o_.restart_count;
    if (val >= 0) j[MetricKey("val")] = val;
    if (feature_cache_ != nullptr) j["cache_hit_rate"] = hit_rate;
    if (val >= 0) {
      const nlohmann::json figures = task_->EvaluationMetrics();  // (items() does not keep a temporary alive)
      for (const auto& [name, value] : figures.items()) j["val_" + name] = value;
    }
    Metrics(j);
  }
  if (val >= 0 && val > result_.best_val_metric) RETURN_IF_ERROR(SaveBest(epoch, val));
  if (!o_.checkpoint_dir.empty()) RETURN_IF_ERROR(SaveLast(epoch + 1, 0));
  result_.epochs_run = epoch + 1;
  return absl::OkStatus();
}

InferenceOptions Job::Inference() const {
  InferenceOptions io;
  io.batch_size = o_.eval_batch_size;
  io.feature_field = o_.sampling.feature_field;
  io.edge = o_.sampling.edge;
  io.trainers_per_machine = o_.trainers_per_machine;
  io.progress = o_.progress;
  // A typed graph's model input is the typed input layer's rows (projections, embeddings).
  if (typed_input_ != nullptr) {
    io.model_input = [input = typed_input_.get(), embeddings = embeddings_.get()](const BatchTensors& bt,
                                                                                 const sampler::MiniBatch& mb) {
      return input->Forward(bt, mb, embeddings);
    };
  }
  return io;
}

// What both checkpoints record besides the model: its hyper-parameters and how it was trained.
Checkpoint Job::MakeCheckpoint(int64_t epoch) const {
  Checkpoint c;
  c.info["hyper_parameters"] = HyperParameters(model_->options());
  c.info["training"] = {{"graph", graph_->config().graph_name},
                        {"fanouts", o_.sampling.fanouts},
                        {"batch_size", o_.sampling.batch_size},
                        {"lr", o_.lr},
                        {"weight_decay", o_.weight_decay},
                        {"seed", o_.sampling.seed},
                        {"world_size", comm_->world_size()},
                        {"feature_field", o_.sampling.feature_field},
                        {"edge_weight_field", o_.sampling.edge.weight_field},
                        {"edge_feature_field", o_.sampling.edge.feature_field},
                        {"label_field", o_.sampling.label_field}};
  task_->DescribeTraining(c.info["training"]);
  c.info["epoch"] = epoch;
  c.state_dict = model_->StateDict();
  return c;
}

absl::Status Job::SaveBest(int64_t epoch, double val) {
  result_.best_val_metric = val;
  result_.best_epoch = epoch;
  // Every rank keeps the best parameters in memory (for the final test); rank 0 also writes them.
  best_params_.clear();
  for (const auto& p : model_->parameters()) best_params_.push_back(p.detach().clone());
  if (embeddings_ != nullptr) RETURN_IF_ERROR(embeddings_->Snapshot(comm_->rank()));
  if (o_.checkpoint_dir.empty() || !lead()) return absl::OkStatus();
  Checkpoint c = MakeCheckpoint(epoch);
  c.info["metric"] = MetricName(o_.metric);
  c.info[MetricKey("val")] = val;
  return WriteCheckpoint(o_.checkpoint_dir + "/best.pt", c);
}

absl::Status Job::SaveLast(int64_t next_epoch, int64_t next_step, const std::vector<double>& epoch_sums) {
  // "epoch" stays the last whole epoch (-1: none yet), as best.pt's; "resume_at" says where to go on.
  Checkpoint c = MakeCheckpoint(next_epoch - 1);
  c.info["rank"] = comm_->rank();
  c.info["resume_at"] = {next_epoch, next_step};
  if (!epoch_sums.empty()) c.info["epoch_sums"] = epoch_sums;
  c.info["best_val_metric"] = result_.best_val_metric;
  c.info["best_epoch"] = result_.best_epoch;
  if (embeddings_ != nullptr) {
    ASSIGN_OR_RETURN(c.embeddings, embeddings_->Tables(comm_->rank()));
  }
  RETURN_IF_ERROR(CatchTorch("saving the optimizer state", [&] {
    torch::serialize::OutputArchive ar;
    opt_->save(ar);
    ar.save_to([&](const void* data, size_t n) {
      c.optimizer.append(static_cast<const char*>(data), n);
      return n;
    });
  }));
  RETURN_IF_ERROR(KeepAsPrevious(LastCheckpoint(o_), PreviousCheckpoint(o_)));
  return WriteCheckpoint(LastCheckpoint(o_), c);
}

absl::StatusOr<Job::Position> Job::Resume(bool required) {
  // This rank's checkpoints, newest first, and where each continues.
  const std::string paths[2] = {LastCheckpoint(o_), PreviousCheckpoint(o_)};
  std::optional<Checkpoint> held[2];
  absl::Status read = absl::OkStatus();
  for (int i = 0; i < 2 && read.ok(); ++i) {
    absl::StatusOr<Checkpoint> c = ReadCheckpoint(paths[i]);
    if (absl::IsNotFound(c.status())) continue;
    if (!c.ok()) {
      read = c.status();
    } else {
      held[i] = std::move(*c);
    }
  }
  // Every rank's two positions (-1: none), gathered by a sum in which each rank fills its own
  // slots, plus how many ranks read their files. Every rank joins, read or not, so that one
  // rank's failure ends the others now instead of after --comm-timeout.
  const int w = comm_->world_size(), r = comm_->rank();
  std::vector<double> all(2 * w + 1, 0.0);
  double keys[2] = {-1, -1};
  for (int i = 0; i < 2; ++i) {
    if (held[i]) keys[i] = ResumeKey(*held[i]);
  }
  all[2 * r] = keys[0] + 1;  // +1: a sum of zeros means "none"
  all[2 * r + 1] = keys[1] + 1;
  all[2 * w] = read.ok() ? 1 : 0;
  ASSIGN_OR_RETURN(std::vector<double> sums, AllReduceSum(*comm_, all));
  RETURN_IF_ERROR(read);
  if (sums[2 * w] != w) {
    return absl::FailedPreconditionError("resuming: another rank could not read its checkpoint (see its error)");
  }
  sums.pop_back();
  for (double& k : sums) k -= 1;
  const double best = NewestKeyEveryRankHolds(sums);
  if (best < 0) {
    if (!required) {
      if (lead()) {
        Log(StrCat("fanout-train: ", o_.restart_count > 0 ? StrCat("restart ", o_.restart_count, ": ") : std::string(),
                   "no position is checkpointed on every rank in ", o_.checkpoint_dir, "; starting from scratch"));
      }
      return Position{};
    }
    auto where = [&](int i) {
      if (!held[i]) return StrCat("no ", paths[i]);
      const double k = keys[i];
      return StrCat(paths[i], " at epoch ", KeyEpoch(k), " step ", KeyStep(k));
    };
    return absl::NotFoundError(StrCat("--resume: no checkpoint position that every rank holds (this rank: ", where(0),
                                      ", ", where(1), "; written after each epoch with --checkpoint-dir)"));
  }
  const Position at{KeyEpoch(best), KeyStep(best)};
  const int pick = held[0] && keys[0] == best ? 0 : 1;
  const std::string& path = paths[pick];
  Checkpoint& c = *held[pick];
  auto load = [&]() -> absl::Status {
    const int64_t seed = c.info["training"].value("seed", int64_t{-1});
    if (seed != static_cast<int64_t>(o_.sampling.seed)) {
      return absl::FailedPreconditionError(StrCat("--resume: checkpoint ", path, " was written with --seed ", seed,
                                                  ", this run has --seed ", o_.sampling.seed,
                                                  "; resume with the same seed"));
    }
    RETURN_IF_ERROR(LoadStateDict(*model_, c, path));
    if (c.optimizer.empty()) {
      return absl::InvalidArgumentError(StrCat("--resume: checkpoint ", path, " holds no optimizer state"));
    }
    RETURN_IF_ERROR(CatchTorch(StrCat("loading the optimizer state of ", path), [&] {
      torch::serialize::InputArchive ar;
      ar.load_from(c.optimizer.data(), c.optimizer.size());
      opt_->load(ar);
    }));
    if (embeddings_ != nullptr) {
      if (absl::Status s = embeddings_->Load(c.embeddings, comm_->rank()); !s.ok()) {
        return absl::Status(s.code(), StrCat("--resume: checkpoint ", path, ": ", s.message()));
      }
    }
    result_.best_val_metric = c.info.value("best_val_metric", -1.0);
    result_.best_epoch = c.info.value("best_epoch", int64_t{-1});
    resumed_sums_.clear();
    if (at.step > 0 && c.info.contains("epoch_sums") && c.info["epoch_sums"].is_array()) {
      for (const nlohmann::json& x : c.info["epoch_sums"]) resumed_sums_.push_back(x.is_number() ? x.get<double>() : 0.0);
    }
    return absl::OkStatus();
  };
  const absl::Status loaded = load();
  ASSIGN_OR_RETURN(std::vector<double> ok, AllReduceSum(*comm_, {loaded.ok() ? 1.0 : 0.0}));
  RETURN_IF_ERROR(loaded);
  if (ok[0] != w) {
    return absl::FailedPreconditionError("--resume: another rank could not load its checkpoint (see its error)");
  }
  if (lead()) {
    Log(StrCat("fanout-train: resumed from ", path,
               at.step == 0 ? StrCat(" after epoch ", at.epoch - 1) : StrCat(" at epoch ", at.epoch, " step ", at.step),
               o_.restart_count > 0 ? StrCat(" (restart ", o_.restart_count, ")") : std::string()));
  }
  return at;
}

absl::StatusOr<TrainResult> Job::Run() {
  RETURN_IF_ERROR(Setup());
  Position first;
  // A restarted job (fanout-launch --max-restarts) with checkpoints resumes where it can.
  const bool restarted = o_.auto_resume || (o_.restart_count > 0 && !o_.checkpoint_dir.empty());
  if (o_.resume || restarted) {
    ASSIGN_OR_RETURN(first, Resume(/*required=*/o_.resume));
  }
  const bool from_start = first.epoch == 0 && first.step == 0;
  if (!o_.load_model.empty() && from_start) RETURN_IF_ERROR(LoadModel());
  if (first.epoch < o_.epochs) {
    RETURN_IF_ERROR(task_->StartTraining(*this, first.epoch, first.step));
    for (int64_t epoch = first.epoch; epoch < o_.epochs; ++epoch) {
      RETURN_IF_ERROR(TrainEpoch(epoch, epoch == first.epoch ? first.step : 0));
    }
  }
  if (!o_.test) {
    RETURN_IF_ERROR(SaveEmbeddings());
    RETURN_IF_ERROR(comm_->Barrier());
    return result_;
  }
  if (sizes_.test == 0) {
    // A split without test examples (test_idx.npy is optional): say so rather than print 0.
    if (lead()) Log(StrCat("fanout-train: no test ", MetricText(), ": ", task_->NoTestReason()));
    RETURN_IF_ERROR(SaveEmbeddings());
    RETURN_IF_ERROR(comm_->Barrier());
    return result_;
  }
  // Test: the final model, and the best-validation one (the usual model selection).
  // The test metric of the model as it stands, with the task's other figures.
  std::string test_detail;
  nlohmann::json test_metrics;
  auto test = [&](double* metric) -> absl::Status {
    ASSIGN_OR_RETURN(*metric, task_->Evaluate(*this, Split::kTest, o_.epochs));
    test_detail = task_->EvaluationDetail();
    test_metrics = task_->EvaluationMetrics();
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(test(&result_.final_test_metric));
  result_.test_metric = result_.final_test_metric;
  bool best_not_tested = false;
  if (result_.best_epoch < 0 || result_.best_epoch == o_.epochs - 1) {
    // No validation, or the best model is the final one: one test pass says it all.
  } else if (!best_params_.empty()) {
    torch::NoGradGuard no_grad;
    auto params = model_->parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(best_params_[i]);
    // The best epoch's learnable embeddings back on the servers (each rank its own rows).
    if (embeddings_ != nullptr) RETURN_IF_ERROR(embeddings_->Restore(*comm_));
    RETURN_IF_ERROR(test(&result_.test_metric));
  } else if (embeddings_ != nullptr) {
    // Resumed, and no better model since: best.pt holds its model but not its embeddings, so the
    // final model (with the embeddings it trained) is the one tested.
    best_not_tested = true;
  } else if (result_.best_epoch >= 0 && !o_.checkpoint_dir.empty()) {
    // Resumed, and no better model since: rank 0 reads best.pt and hands it to every rank.
    if (lead()) {
      const std::string best = o_.checkpoint_dir + "/best.pt";
      ASSIGN_OR_RETURN(Checkpoint c, ReadCheckpoint(best));
      RETURN_IF_ERROR(LoadStateDict(*model_, c, best));
    }
    RETURN_IF_ERROR(BroadcastParameters(*comm_, model_->parameters()));
    RETURN_IF_ERROR(test(&result_.test_metric));
  }
  if (lead()) {
    const std::string m = MetricText();
    if (best_not_tested) {
      Log(StrCat("fanout-train: test ", m, " ", Fixed4(result_.test_metric), " (final model; the best validation ", m,
                 " ", Fixed4(result_.best_val_metric), " was epoch ", result_.best_epoch,
                 ", before --resume, whose learnable embeddings were not kept)"));
    } else if (result_.best_epoch < 0) {
      Log(StrCat("fanout-train: test ", m, " ", Fixed4(result_.test_metric), " (",
                 result_.epochs_run == 0 && !o_.load_model.empty() ? StrCat("model of ", o_.load_model)
                                                                   : std::string("final model; no validation"),
                 ")"));
    } else {
      Log(StrCat("fanout-train: test ", m, " ", Fixed4(result_.test_metric), " (model of epoch ", result_.best_epoch,
                 ", best validation ", m, " ", Fixed4(result_.best_val_metric), "); final model's test ", m, " ",
                 Fixed4(result_.final_test_metric)));
    }
    nlohmann::json j = {{"event", "test"},
                        {"metric", MetricName(o_.metric)},
                        {MetricKey("test"), result_.test_metric},
                        {MetricKey("final_test"), result_.final_test_metric},
                        {MetricKey("best_val"), result_.best_val_metric},
                        {"best_epoch", result_.best_epoch}};
    if (o_.restart_count > 0) j["restart_count"] = o_.restart_count;
    if (!test_detail.empty()) {
      // The other figures of the model whose test metric comes first above.
      Log(StrCat("fanout-train: test ", test_detail));
    }
    for (const auto& [name, value] : test_metrics.items()) j["test_" + name] = value;
    Metrics(j);
  }
  RETURN_IF_ERROR(SaveEmbeddings());
  RETURN_IF_ERROR(comm_->Barrier());
  return result_;
}

// Rank 0 reads the checkpoint and every rank gets its parameters: the file need only be on rank
// 0's machine. Every rank learns of a failure at once (not after --comm-timeout).
absl::Status Job::LoadModel() {
  absl::Status loaded;
  if (lead()) {
    absl::StatusOr<Checkpoint> c = ReadCheckpoint(o_.load_model);
    loaded = c.ok() ? LoadStateDict(*model_, *c, o_.load_model) : c.status();
    if (loaded.ok()) {
      Log(StrCat("fanout-train: loaded the model of ", o_.load_model, " (epoch ", c->info.value("epoch", int64_t{-1}), ")"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<double> bad, AllReduceSum(*comm_, {loaded.ok() ? 0.0 : 1.0}));
  RETURN_IF_ERROR(loaded);
  if (bad[0] > 0) return absl::FailedPreconditionError(StrCat("--load-model: rank 0 could not load ", o_.load_model));
  return BroadcastParameters(*comm_, model_->parameters());
}

absl::Status Job::SaveEmbeddings() {
  if (o_.save_embeddings.empty()) return absl::OkStatus();
  InferenceOptions io = Inference();
  io.on_layer = [&](int64_t layer, int64_t layers, double seconds) {
    Log(StrCat("fanout-train: inference: layer ", layer + 1, "/", layers, " done for all nodes (", seconds, " s)"));
  };
  const auto start = Clock::now();
  ASSIGN_OR_RETURN(InferenceResult r, InferAllNodes(*model_, *graph_, *comm_, io));
  if (lead() && !r.layerwise) {
    Log(StrCat("fanout-train: inference: ", o_.model.script_path,
               " has no forward_layer, so every layer used full neighbourhoods"));
  }
  NodeOutputFiles files;
  files.dir = o_.save_embeddings;
  files.overwrite = o_.overwrite;
  files.predictions = task_->WritesPredictions();
  files.info = {{"graph", graph_->config().graph_name},
                {"hyper_parameters", HyperParameters(model_->options())},
                {"layerwise", r.layerwise}};
  if (result_.epochs_run == 0 && !o_.load_model.empty()) {
    files.info["checkpoint"] = o_.load_model;
  } else {
    files.info["epoch"] = result_.best_epoch >= 0 ? result_.best_epoch : result_.epochs_run - 1;
    if (result_.best_epoch >= 0 && !o_.checkpoint_dir.empty()) files.info["checkpoint"] = o_.checkpoint_dir + "/best.pt";
  }
  RETURN_IF_ERROR(WriteNodeOutputs(r, *graph_, *comm_, files));
  if (lead()) {
    Log(StrCat("fanout-train: wrote embeddings and predictions of ", graph_->num_nodes(), " nodes to ",
               o_.save_embeddings, graph_->config().typed() ? " (a folder per node type)" : "", " (", Since(start),
               " s)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateTrainOptions(const TrainOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(StrCat(parts...)); };
  absl::StatusOr<std::unique_ptr<Task>> task = MakeTask(o.task);
  if (!task.ok()) return bad("--task: ", task.status().message());
  // Written as !(ok) so that NaN, which fails every comparison, is refused too.
  if (!(std::isfinite(o.lr) && o.lr > 0)) return bad("--lr must be a number > 0, got ", o.lr);
  if (!(std::isfinite(o.weight_decay) && o.weight_decay >= 0)) {
    return bad("--weight-decay must be a number >= 0, got ", o.weight_decay);
  }
  if (!(o.model.dropout >= 0 && o.model.dropout < 1))
    return bad("--dropout must be in [0, 1), got ", o.model.dropout);
  if (o.model.hidden < 1) return bad("--hidden must be >= 1, got ", o.model.hidden);
  if (o.model.heads < 1) return bad("--heads must be >= 1, got ", o.model.heads);
  for (int64_t h : o.model.layer_heads) {
    if (h < 1) return bad("--heads must be >= 1 in every layer, got ", base::StrJoin(o.model.layer_heads, ","));
  }
  const std::vector<int64_t>& fanouts = o.sampling.fanouts;
  if (!o.model.layer_heads.empty() && o.model.layer_heads.size() != fanouts.size()) {
    return bad("--heads has ", o.model.layer_heads.size(), " values for ", fanouts.size(),
               " layers (--fanouts): give one for every layer, or one per layer");
  }
  if (!o.sampling.edge.feature_field.empty() && o.model.model != ModelKind::kScripted) {
    return bad("--edge-feature: the built-in ", ModelKindName(o.model.model),
               " model does not read edge features; use --edge-weight for one number per edge, or a scripted model "
               "(docs/models.md) that reads block[\"edge_feat\"]");
  }
  if (o.epochs < (o.load_model.empty() ? 1 : 0)) {
    return bad("--epochs must be >= 1 (>= 0 with --load-model: evaluate or infer only), got ", o.epochs);
  }
  if (o.sampling.batch_size < 1) return bad("--batch-size must be >= 1, got ", o.sampling.batch_size);
  if (o.eval_batch_size < 1) return bad("--eval-batch-size must be >= 1, got ", o.eval_batch_size);
  RETURN_IF_ERROR(core::CheckLayerFanouts("--fanouts", fanouts));
  if (!o.eval_fanouts.empty()) RETURN_IF_ERROR(core::CheckLayerFanouts("--eval-fanouts", o.eval_fanouts));
  if (!o.eval_fanouts.empty() && o.eval_fanouts.size() != fanouts.size()) {
    return bad("--eval-fanouts has ", o.eval_fanouts.size(), " layers, --fanouts ", fanouts.size(),
               "; they must match");
  }
  if (o.eval_every < 0) return bad("--eval-every must be >= 0 (0: never), got ", o.eval_every);
  if (o.log_every < 0)
    return bad("--log-every must be >= 0 (0: per epoch only), got ", o.log_every);
  if (o.loader.num_samplers < 0)
    return bad("--num-samplers must be >= 0 (0: sample in-process), got ", o.loader.num_samplers);
  if (o.loader.num_threads < 1) return bad("--sampler-threads must be >= 1, got ", o.loader.num_threads);
  if (o.loader.prefetch < 1) {
    return bad("--prefetch must be >= 1 (batches made ahead; with 0 none could ever be made), got ",
               o.loader.prefetch);
  }
  if (o.intra_op_threads < 1) return bad("--num-threads must be >= 1, got ", o.intra_op_threads);
  if (o.gpu_cache_bytes < 0) return bad("--gpu-cache-bytes must be >= 0 (0: no cache), got ", o.gpu_cache_bytes);
  if (o.gpu_cache_presample_steps < 0) {
    return bad("--gpu-cache-presample-steps must be >= 0 (0: a whole epoch), got ", o.gpu_cache_presample_steps);
  }
  if (o.dist_backend == CommBackend::kNccl && !o.device.starts_with("cuda")) {
    return bad("--dist-backend nccl needs a GPU (--device cuda), not --device ", o.device);
  }
  if (o.trainers_per_machine < 1)
    return bad("--num-trainers must be >= 1, got ", o.trainers_per_machine);
  if (o.resume && o.checkpoint_dir.empty()) return bad("--resume needs --checkpoint-dir");
  if (o.checkpoint_every_steps > 0 && o.checkpoint_dir.empty()) return bad("--checkpoint-every-steps needs --checkpoint-dir");
  if (o.auto_resume && o.checkpoint_dir.empty()) return bad("--auto-resume needs --checkpoint-dir");
  if (o.auto_resume && o.resume) return bad("--auto-resume and --resume: give one");
  if (o.resume && !o.load_model.empty()) {
    return bad("--resume and --load-model both say where to start: give one");
  }
  if (std::optional<Metric> m = (*task)->fixed_metric(); m && *m != o.metric) {
    return bad("--task ", o.task, " reports ", MetricName(*m), " and selects the model by it, not by --metric ",
               MetricName(o.metric));
  }
  return (*task)->Validate(o);
}

absl::StatusOr<TrainResult> RunTraining(const TrainOptions& options) {
  RETURN_IF_ERROR(ValidateTrainOptions(options));
  ASSIGN_OR_RETURN(std::unique_ptr<Task> task, MakeTask(options.task));
  Job job(options, std::move(task));
  return job.Run();
}

std::vector<std::pair<std::string, float>> TensorBoardScalars(const nlohmann::json& j, int64_t* step) {
  if (j.contains("epoch") && j["epoch"].is_number_integer()) *step = j["epoch"].get<int64_t>();
  const std::string event = j.value("event", std::string("metrics"));
  // Key prefix -> tag prefix; the first that matches wins ("final_test_" before "test_").
  static const std::pair<std::string_view, std::string_view> kGroups[] = {
      {"final_test_", "test/final_"}, {"best_val_", "val/best_"}, {"train_", "train/"},
      {"val_", "val/"},               {"test_", "test/"}};
  std::vector<std::pair<std::string, float>> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_number() || key == "epoch" || key == "steps" || key == "world_size") continue;
    std::string tag;
    if (key.size() > 8 && key.ends_with("_seconds")) {
      tag = "time/" + key.substr(0, key.size() - 8);
    } else if (key == "loss") {
      tag = "train/loss";
    } else {
      for (const auto& [prefix, group] : kGroups) {
        if (key.size() > prefix.size() && key.starts_with(prefix)) {
          tag = StrCat(group, key.substr(prefix.size()));
          break;
        }
      }
      if (tag.empty()) tag = StrCat(event, "/", key);
    }
    out.emplace_back(std::move(tag), value.get<float>());
  }
  return out;
}

}  // namespace fanout::trainer

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

#include "core/tensorboard.h"
#include "core/fsync.h"
#include "core/random.h"
#include "core/status.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"
#include "sampler/batch_checksum.h"
#include "sampler/cache_choice.h"
#include "sampler/link_sampler.h"
#include "sampler/loader.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/seed_split.h"
#include "trainer/batch_tensors.h"
#include "trainer/checkpoint.h"
#include "trainer/device_upload.h"
#include "trainer/feature_cache.h"
#include "trainer/inference.h"
#include "trainer/metrics.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {

using core::StrCat;
using Clock = std::chrono::steady_clock;

namespace {

std::string Fixed4(double x) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4f", x);
  return text;
}

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Where an epoch's time went, summed over its steps (seconds).
struct Breakdown {
  double sample =
      0;             // producer time sampling blocks and labels (overlaps training when prefetched)
  double fetch = 0;  // producer time gathering input features
  double wait = 0;   // trainer idle, waiting for the next batch
  double copy = 0;   // mini-batch -> tensors (and to the device)
  double forward = 0;
  double backward = 0;
  double allreduce = 0;  // gradient synchronisation
  double update = 0;     // optimizer step
  int64_t inputs = 0;    // input nodes of the epoch's batches
  int64_t cached = 0;    // of which the device feature cache held the features
};

// One step's batch through the model: the loss to minimise, and what the epoch line reports.
struct StepLoss {
  at::Tensor loss;
  double n = 0;        // examples (seeds; for links, positive and negative pairs)
  at::Tensor correct;  // of them, classified right: a 0-dim tensor on the device (read lazily)
};

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

 private:
  at::Tensor loss_, correct_;
  double count_ = 0;
};

// All IDs whose mask row is set, split among the ranks with SplitSeeds (every rank then holds a
// disjoint share; together they cover the mask exactly once).
absl::StatusOr<std::vector<int64_t>> RankShare(const sampler::DistGraph& g, const std::string& mask,
                                               int tpm, int rank, int64_t* total) {
  ASSIGN_OR_RETURN(std::string bytes, g.PullWholeNodeField(mask));
  std::vector<int64_t> ids = sampler::MaskToIds(bytes);
  *total = static_cast<int64_t>(ids.size());
  auto split = sampler::SplitSeeds(ids, g.node_book(), tpm);
  return std::move(split[rank]);
}

std::string LastCheckpoint(const TrainOptions& o) {
  return StrCat(o.checkpoint_dir, "/last.rank", o.dist.rank, ".pt");
}

class Job {
 public:
  explicit Job(const TrainOptions& o) : o_(o) {}

  absl::StatusOr<TrainResult> Run();

 private:
  absl::Status Setup();
  // The sampler options of training batches (the loader's, before the cache's nodes are set).
  sampler::SamplerOptions TrainSamplerOptions() const;
  // feature_cache_ (--gpu-cache-bytes), its nodes chosen by --gpu-cache-policy.
  absl::Status BuildFeatureCache();
  // loader: node classification's batches (null for link prediction, which samples inline).
  absl::Status TrainEpoch(sampler::BatchLoader* loader, int64_t epoch);
  absl::StatusOr<StepLoss> NodeForward(sampler::BatchLoader& loader, int64_t epoch, int64_t step, Breakdown& t);
  absl::StatusOr<StepLoss> LinkForward(int64_t epoch, int64_t step, Breakdown& t);
  void SeedStep(int64_t epoch, int64_t step);
  absl::StatusOr<BatchTensors> StepTensors(const sampler::MiniBatch& mb, int64_t epoch, int64_t step, bool labels,
                                           Breakdown& t);
  // Link prediction over held-out pairs (val or test files): ROC-AUC, returned, and MRR and
  // Hits@K against each positive's own negatives, kept in link_detail_ for the logs.
  absl::StatusOr<double> EvaluateLink(const core::NpyArray& pos, const core::NpyArray& neg);
  // Full-graph inference as this job runs it (link evaluation, --save-embeddings).
  InferenceOptions Inference() const;
  // The --metric over a whole split, all ranks combined exactly (metrics.h).
  absl::StatusOr<double> Evaluate(const std::vector<int64_t>& ids, int64_t epoch, const char* what);
  Checkpoint MakeCheckpoint(int64_t epoch) const;
  absl::Status SaveLast(int64_t epoch);
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
  absl::StatusOr<int64_t> Resume();
  absl::Status LoadModel();
  absl::Status SaveEmbeddings();
  void Log(const std::string& line) const;
  void Metrics(const nlohmann::json& j);
  bool lead() const { return comm_->rank() == 0; }

  TrainOptions o_;
  std::unique_ptr<sampler::DistGraph> graph_;
  std::shared_ptr<const FeatureCache> feature_cache_;  // --gpu-cache-bytes; null: none
  std::string cache_choice_;                           // how its nodes were chosen, for the log
  std::unique_ptr<DeviceUploader> uploader_;           // batches to device_, without blocking the host
  std::unique_ptr<Communicator> comm_;
  c10::Device device_{c10::kCPU};
  std::shared_ptr<GnnModel> model_;
  // Link prediction: scores pairs of embeddings; the submodule "scorer" of model_, so that its
  // parameters train, synchronise and checkpoint with the model's.
  std::shared_ptr<LinkScorer> scorer_;
  std::unique_ptr<torch::optim::Adam> opt_;
  std::unique_ptr<GradientSynchronizer> sync_;
  std::vector<int64_t> train_, val_, test_;
  // Link prediction: the batch sampler, held-out pairs, and the last evaluation's ranking metrics.
  absl::Status StartLinkSampler(int64_t first_epoch);
  std::unique_ptr<sampler::LinkBatchSource> link_loader_;
  core::NpyArray val_pos_, val_neg_, test_pos_, test_neg_;
  std::string link_detail_;
  nlohmann::json link_metrics_;
  std::vector<at::Tensor> best_params_;  // copy of the best-validation parameters
  int64_t train_total_ = 0, val_total_ = 0, test_total_ = 0;
  std::ofstream metrics_;
  std::unique_ptr<core::EventFileWriter> tensorboard_;  // rank 0, --tensorboard-dir
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
  if (o_.num_samplers > 0 && o_.eval_every <= 0 && !o_.test) own.cache_max_bytes = 0;
  ASSIGN_OR_RETURN(graph_, sampler::DistGraph::Open(config, own));

  // Model dimensions come from the graph.
  ASSIGN_OR_RETURN(core::FieldSchema feat, graph_->NodeFieldSchema(o_.feature_field));
  for (const auto& [flag, field] : {std::pair{"--edge-weight", &sampler::EdgeDataOptions::weight_field},
                                     {"--edge-feature", &sampler::EdgeDataOptions::feature_field}}) {
    if (o_.edge.*field == "") continue;
    sampler::SamplerOptions check;
    check.fanouts = o_.fanouts;
    check.feature_field = "";
    check.label_field = "";
    check.edge.*field = o_.edge.*field;
    if (absl::Status s = sampler::ValidateSamplerOptions(check, *graph_); !s.ok()) {
      return absl::InvalidArgumentError(StrCat(flag, ": ", s.message()));
    }
  }
  const int64_t in_dim = feat.row_elems();
  ModelOptions mo = o_.model;
  mo.in_dim = in_dim;
  if (o_.link) {
    mo.num_classes = o_.embed_dim > 0 ? o_.embed_dim : o_.model.hidden;  // the embedding width
  } else if (config.num_classes <= 0) {
    return absl::FailedPreconditionError(StrCat(
        "partition config ", o_.part_config, " records no num_classes: the dataset has no labels"));
  } else {
    mo.num_classes = config.num_classes;
  }
  mo.num_layers = static_cast<int64_t>(o_.fanouts.size());
  RETURN_IF_ERROR(ValidateModelOptions(mo));
  if (!o_.eval_fanouts.empty() && o_.eval_fanouts.size() != o_.fanouts.size()) {
    return absl::InvalidArgumentError(StrCat("--eval-fanouts has ", o_.eval_fanouts.size(),
                                             " layers, --fanouts ", o_.fanouts.size(),
                                             "; they must match"));
  }

  const int rank = o_.dist.rank, tpm = o_.trainers_per_machine;
  if (o_.link) {
    // Positives: every stored edge. Held-out pairs and their negatives: link/ (--edge-split).
    train_total_ = config.edge_bounds.empty() ? 0 : config.edge_bounds.back();
    for (auto [file, array] : {std::pair{"valid_pos", &val_pos_}, {"valid_neg", &val_neg_}, {"test_pos", &test_pos_},
                               {"test_neg", &test_neg_}}) {
      const std::string path = StrCat(config.base_dir, "/link/", file, ".npy");
      absl::StatusOr<core::NpyArray> a = core::NpyArray::Map(path);
      if (!a.ok()) {
        return absl::FailedPreconditionError(StrCat("--task link: cannot read ", path, " (", a.status().message(),
                                                    "); partition the graph with fanout-partition --edge-split"));
      }
      if (a->dtype() != core::DType::kInt64 || a->shape().size() != 2 || a->shape()[1] != 2) {
        return absl::InvalidArgumentError(StrCat(path, ": expected int64 [n, 2] node pairs"));
      }
      *array = std::move(*a);
    }
    if (val_neg_.rows() % std::max<int64_t>(1, val_pos_.rows()) != 0 ||
        test_neg_.rows() % std::max<int64_t>(1, test_pos_.rows()) != 0) {
      return absl::InvalidArgumentError(StrCat(config.base_dir, "/link: the negatives are not a whole number per positive"));
    }
    if (o_.eval_every > 0) val_total_ = val_pos_.rows();
    if (o_.test) test_total_ = test_pos_.rows();
  } else {
    ASSIGN_OR_RETURN(train_, RankShare(*graph_, o_.train_mask, tpm, rank, &train_total_));
    if (o_.eval_every > 0) {
      ASSIGN_OR_RETURN(val_, RankShare(*graph_, o_.val_mask, tpm, rank, &val_total_));
    }
    if (o_.test) {
      ASSIGN_OR_RETURN(test_, RankShare(*graph_, o_.test_mask, tpm, rank, &test_total_));
    }
  }
  if (train_total_ < o_.dist.world_size) {
    return absl::FailedPreconditionError(StrCat(o_.link ? "the graph has " : "field '", o_.link ? "" : o_.train_mask,
                                                o_.link ? "" : "' marks ", train_total_,
                                                o_.link ? " edges" : " training nodes", ", fewer than the ",
                                                o_.dist.world_size, " trainers"));
  }

  if (o_.gpu_cache_bytes > 0) RETURN_IF_ERROR(BuildFeatureCache());

  // The model first (a scripted one that does not fit the graph fails here, before any peer
  // waits), then join the other trainers and start from rank 0's parameters.
  ASSIGN_OR_RETURN(model_, MakeModel(mo, o_.seed));
  if (o_.link) {
    RETURN_IF_ERROR(CatchTorch("building the link scorer", [&] {
      scorer_ = model_->register_module(
          "scorer", std::make_shared<LinkScorer>(o_.scorer, mo.num_classes, core::SplitMix64(o_.seed ^ 0x5c0e)));
    }));
  }
  DistOptions d = o_.dist;
  d.backend = o_.dist_backend.value_or(device_.is_cuda() ? CommBackend::kNccl : CommBackend::kGloo);
  d.cuda_device = device_.is_cuda() ? device_.index() : 0;
  ASSIGN_OR_RETURN(comm_, Connect(d));
  RETURN_IF_ERROR(CatchTorch("moving the model", [&] { model_->to(device_); }));
  RETURN_IF_ERROR(BroadcastParameters(*comm_, model_->parameters()));
  opt_ = std::make_unique<torch::optim::Adam>(
      model_->parameters(), torch::optim::AdamOptions(o_.lr).weight_decay(o_.weight_decay));
  sync_ = std::make_unique<GradientSynchronizer>(model_->parameters());
  if (lead() && !o_.metrics_file.empty()) {
    metrics_.open(o_.metrics_file, o_.resume ? std::ios::app : std::ios::trunc);
    if (!metrics_)
      return absl::PermissionDeniedError(StrCat("cannot write metrics file ", o_.metrics_file));
  }
  if (lead() && !o_.tensorboard_dir.empty()) {
    absl::StatusOr<std::unique_ptr<core::EventFileWriter>> tb = core::EventFileWriter::Open(o_.tensorboard_dir);
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
               in_dim, " -> ", mo.num_classes, " classes; fanouts ", core::StrJoin(o_.fanouts, ","),
               ", batch ", o_.batch_size, "; train/val/test ", train_total_, "/", val_total_, "/",
               test_total_, "; ", o_.num_samplers, " sampler process(es) per trainer; ",
               o_.intra_op_threads, " intra-op thread(s); device ", o_.device));
    if (!o_.edge.weight_field.empty()) {
      Log(StrCat("fanout-train: messages weighted by edge field '", o_.edge.weight_field, "'"));
    }
    if (!o_.edge.feature_field.empty()) {
      Log(StrCat("fanout-train: edge field '", o_.edge.feature_field, "' in every block as block[\"edge_feat\"]"));
    }
    if (feature_cache_ != nullptr) {
      Log(StrCat("fanout-train: device feature cache: ", feature_cache_->size(), " of ", config.num_nodes,
                 " nodes' rows of '", o_.feature_field, "' (", feature_cache_->bytes() >> 20, " MiB: ", cache_choice_, ") on ",
                 o_.device));
    }
    if (const sampler::RowCache* cache = graph_->row_cache()) {
      Log(StrCat("fanout-train: feature cache: ", cache->size(), " halo rows of '", cache->field(), "' (",
                 cache->bytes() >> 20, " MiB) in the trainer", o_.num_samplers > 0 ? " and in each sampler process" : ""));
    } else if (o_.num_samplers > 0 && o_.graph.cache_max_bytes > 0 && config.num_parts > 1) {
      Log(StrCat("fanout-train: feature cache: halo rows of '", o_.graph.cache_field, "' in each sampler process (up to ",
                 o_.graph.cache_max_bytes >> 20, " MiB each)"));
    }
  }
  return absl::OkStatus();
}

sampler::SamplerOptions Job::TrainSamplerOptions() const {
  sampler::SamplerOptions so;
  so.fanouts = o_.fanouts;
  so.batch_size = o_.batch_size;
  so.seed = o_.seed;
  so.rank = o_.dist.rank;
  so.seeds_per_epoch = sampler::SeedsPerEpoch(train_total_, o_.dist.world_size);
  so.feature_field = o_.feature_field;
  so.edge = o_.edge;
  so.label_field = o_.label_field;
  return so;
}

absl::Status Job::BuildFeatureCache() {
  FeatureCacheOptions fo;
  fo.field = o_.feature_field;
  fo.max_bytes = o_.gpu_cache_bytes;
  if (o_.gpu_cache_presample) {
    // The batches training will draw, without their data: only which nodes they take.
    sampler::SamplerOptions so = TrainSamplerOptions();
    so.feature_field = "";
    so.label_field = "";
    so.edge = {};
    sampler::MiniBatchSampler presampler(graph_.get(), so, train_);
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

absl::StatusOr<StepLoss> Job::NodeForward(sampler::BatchLoader& loader, int64_t epoch, int64_t step, Breakdown& t) {
  auto t0 = Clock::now();
  ASSIGN_OR_RETURN(sampler::MiniBatch mb, loader.Next());
  if (mb.epoch != epoch || mb.step != step) {
    return absl::InternalError(StrCat("loader gave epoch ", mb.epoch, " step ", mb.step,
                                      ", expected ", epoch, " step ", step));
  }
  t.wait += Since(t0);
  if (o_.print_batch_checksums) {
    std::printf("rank %d batch %lld %lld crc %u\n", o_.dist.rank, static_cast<long long>(epoch),
                static_cast<long long>(step), sampler::BatchChecksum(mb));
  }
  ASSIGN_OR_RETURN(BatchTensors bt, StepTensors(mb, epoch, step, /*labels=*/true, t));
  t0 = Clock::now();
  StepLoss s;
  RETURN_IF_ERROR(CatchTorch("forward", [&] {
    opt_->zero_grad();
    const at::Tensor logits = model_->Forward(bt.blocks, bt.features);
    s.loss = torch::nn::functional::cross_entropy(logits, bt.labels);
    s.correct = logits.argmax(1).eq(bt.labels).sum();
  }));
  s.n = static_cast<double>(mb.seeds.size());
  t.forward += Since(t0);
  return s;
}

// Link prediction: the model embeds every endpoint of the batch's pairs; a pair's score is the
// dot product of its two embeddings; binary cross-entropy against positive (1) and negative (0).
absl::StatusOr<StepLoss> Job::LinkForward(int64_t epoch, int64_t step, Breakdown& t) {
  auto t0 = Clock::now();
  ASSIGN_OR_RETURN(sampler::LinkMiniBatch lb, link_loader_->Next());
  if (lb.epoch != epoch || lb.step != step) {
    return absl::InternalError(StrCat("link loader gave epoch ", lb.epoch, " step ", lb.step, ", expected ", epoch,
                                      " step ", step));
  }
  t.wait += Since(t0);
  ASSIGN_OR_RETURN(BatchTensors bt, StepTensors(lb.nodes, epoch, step, /*labels=*/false, t));
  t0 = Clock::now();
  StepLoss s;
  RETURN_IF_ERROR(CatchTorch("forward", [&] {
    opt_->zero_grad();
    const at::Tensor h = model_->Forward(bt.blocks, bt.features);
    // The pairs' endpoints, copied like the batch (without blocking the host).
    const std::vector<at::Tensor> ends = uploader_->Upload({at::tensor(lb.pos_src, at::kLong), at::tensor(lb.pos_dst, at::kLong),
                                                            at::tensor(lb.neg_src, at::kLong), at::tensor(lb.neg_dst, at::kLong)});
    auto pair_scores = [&](const at::Tensor& a, const at::Tensor& b) {
      return scorer_->Score(h.index_select(0, a), h.index_select(0, b));
    };
    const at::Tensor pos = pair_scores(ends[0], ends[1]);
    const at::Tensor neg = pair_scores(ends[2], ends[3]);
    const at::Tensor scores = at::cat({pos, neg});
    const at::Tensor labels = at::cat({at::ones_like(pos), at::zeros_like(neg)});
    s.loss = torch::nn::functional::binary_cross_entropy_with_logits(scores, labels);
    s.correct = pos.gt(0).sum() + neg.le(0).sum();
    s.n = static_cast<double>(scores.size(0));
  }));
  t.forward += Since(t0);
  return s;
}

// A step's batch as tensors on the device (labels checked against the classes when `labels`),
// its producer's times added to `t`, and dropout seeded for the step.
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
  SeedTorch(core::SplitMix64(o_.seed ^ core::SplitMix64((static_cast<uint64_t>(epoch) << 32) ^
                                                        (static_cast<uint64_t>(step) << 8) ^
                                                        static_cast<uint64_t>(comm_->rank()))));
}

absl::Status Job::TrainEpoch(sampler::BatchLoader* loader, int64_t epoch) {
  model_->train();
  Breakdown t;
  const auto start = Clock::now();
  EpochSums running;
  const int64_t steps = o_.link ? link_loader_->steps_per_epoch() : loader->steps_per_epoch();
  core::ProgressMeter meter("fanout-train", StrCat("epoch ", epoch), steps, "steps",
                            lead() ? o_.progress : core::ProgressMode::kOff);
  for (int64_t step = 0; step < steps; ++step) {
    ASSIGN_OR_RETURN(StepLoss s, o_.link ? LinkForward(epoch, step, t) : NodeForward(*loader, epoch, step, t));
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
    t.update += Since(t0);
    running.Add(s);
    if (lead() && o_.log_every > 0 && (step + 1) % o_.log_every == 0) {  // reads the device: only here
      meter.Clear();  // the line below must not land inside a progress line
      Log(StrCat("epoch ", epoch, " step ", step + 1, "/", steps, " | loss ", s.loss.item<double>(), " | acc ",
                 s.correct.item<double>() / std::max(1.0, s.n)));
    }
    meter.Set(step + 1);
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
  if (eval_now && val_total_ > 0) {
    ASSIGN_OR_RETURN(val, Evaluate(val_, epoch, "validation"));
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
    Log(o_.link && val >= 0 ? StrCat(text, " | val ", link_detail_) : text);
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
    if (val >= 0) j[MetricKey("val")] = val;
    if (feature_cache_ != nullptr) j["cache_hit_rate"] = hit_rate;
    if (o_.link && val >= 0) {
      for (const auto& [name, value] : link_metrics_.items()) j["val_" + name] = value;
    }
    Metrics(j);
  }
  if (val >= 0 && val > result_.best_val_metric) RETURN_IF_ERROR(SaveBest(epoch, val));
  if (!o_.checkpoint_dir.empty()) RETURN_IF_ERROR(SaveLast(epoch));
  result_.epochs_run = epoch + 1;
  return absl::OkStatus();
}

absl::StatusOr<double> Job::Evaluate(const std::vector<int64_t>& ids, int64_t epoch,
                                     const char* what) {
  if (o_.link) {
    const bool test = std::string_view(what) == "test";
    return EvaluateLink(test ? test_pos_ : val_pos_, test ? test_neg_ : val_neg_);
  }
  MetricAccumulator metric(o_.metric, model_->options().num_classes);
  if (!ids.empty()) {
    sampler::SamplerOptions so;
    so.fanouts = o_.eval_fanouts.empty() ? o_.fanouts : o_.eval_fanouts;
    so.batch_size = o_.eval_batch_size;
    so.shuffle = false;
    so.seed = core::SplitMix64(o_.seed + 0x5eed);
    so.rank = comm_->rank();
    so.feature_field = o_.feature_field;
    so.edge = o_.edge;
    so.label_field = o_.label_field;
    if (feature_cache_ != nullptr) so.cached_nodes = feature_cache_->nodes();
    sampler::LoaderOptions lo;
    lo.num_threads = std::max(1, o_.sampler_threads);
    lo.prefetch = o_.prefetch;
    lo.first_epoch = epoch;
    ASSIGN_OR_RETURN(auto loader, sampler::MakeBatchLoader(graph_.get(), o_.graph, so, ids, lo));
    model_->eval();
    torch::NoGradGuard no_grad;
    ToTensorsOptions to;
    to.device = device_;
    to.num_classes = model_->options().num_classes;
    to.feature_cache = feature_cache_.get();
    to.uploader = uploader_.get();
    core::ProgressMeter meter("fanout-train", what, loader->steps_per_epoch(), "batches",
                              lead() ? o_.progress : core::ProgressMode::kOff);
    for (int64_t step = 0; step < loader->steps_per_epoch(); ++step) {
      ASSIGN_OR_RETURN(sampler::MiniBatch mb, loader->Next());
      ASSIGN_OR_RETURN(BatchTensors bt, ToTensors(mb, to));
      RETURN_IF_ERROR(CatchTorch(StrCat(what, " forward"),
                                 [&] { metric.Add(model_->Forward(bt.blocks, bt.features), bt.labels); }));
      meter.Set(step + 1);
    }
    model_->train();
  }
  return metric.Reduce(*comm_);
}

absl::Status Job::StartLinkSampler(int64_t first_epoch) {
  const int world = comm_->world_size(), rank = comm_->rank();
  std::vector<int64_t> mine = sampler::RankEdgeSeeds(graph_->config(), o_.trainers_per_machine, rank);
  // Every rank takes as many edges per epoch as the smallest share (no collective may wait on a
  // rank that has run out).
  std::vector<double> counts(world, 0);
  counts[rank] = static_cast<double>(mine.size());
  ASSIGN_OR_RETURN(counts, AllReduceSum(*comm_, counts));
  sampler::LinkSamplerOptions lo;
  lo.sampling.fanouts = o_.fanouts;
  lo.sampling.batch_size = o_.batch_size;
  lo.sampling.seed = o_.seed;
  lo.sampling.rank = rank;
  lo.sampling.feature_field = o_.feature_field;
  lo.sampling.edge = o_.edge;
  if (feature_cache_ != nullptr) lo.sampling.cached_nodes = feature_cache_->nodes();
  lo.negatives = o_.negatives;
  lo.negative_sampling = o_.negative_sampling;
  lo.edges_per_epoch = static_cast<int64_t>(*std::min_element(counts.begin(), counts.end()));
  if (lo.edges_per_epoch < 1) {
    return absl::FailedPreconditionError("--task link: a trainer's partition stores no edges to train on");
  }
  // Link batches are made by sampler processes (--num-samplers N) or threads of this process;
  // either makes the same batches.
  const int threads = std::max(1, o_.sampler_threads);
  if (o_.num_samplers > 0) {
    sampler::LoaderOptions po;
    po.num_samplers = o_.num_samplers;
    po.prefetch = o_.prefetch;
    po.first_epoch = first_epoch;
    po.num_epochs = o_.epochs - first_epoch;
    po.sampler_binary = o_.sampler_binary;
    po.part_config_path = o_.part_config;
    ASSIGN_OR_RETURN(link_loader_, sampler::MakeLinkProcessLoader(graph_.get(), o_.graph, lo, std::move(mine), po));
  } else {
    ASSIGN_OR_RETURN(link_loader_, sampler::LinkBatchLoader::Create(graph_.get(), lo, mine, threads, o_.prefetch,
                                                                    first_epoch, o_.epochs - first_epoch));
  }
  if (lead()) {
    Log(StrCat("fanout-train: link prediction: ", lo.edges_per_epoch, " positive edges per trainer per epoch, ",
               o_.negatives, " negative(s) each (", o_.negative_sampling == sampler::NegativeSampling::kUniform
                                                        ? "uniform"
                                                        : "degree^0.75",
               "); ", ScorerKindName(o_.scorer),
               " scorer; seed edges excluded from their blocks in both directions; batches made by ",
               o_.num_samplers > 0 ? StrCat(o_.num_samplers, " sampler process(es)") : StrCat(threads, " thread(s)"),
               ", ", o_.prefetch, " ahead"));
  }
  return absl::OkStatus();
}

InferenceOptions Job::Inference() const {
  InferenceOptions io;
  io.batch_size = o_.eval_batch_size;
  io.feature_field = o_.feature_field;
  io.edge = o_.edge;
  io.trainers_per_machine = o_.trainers_per_machine;
  io.progress = o_.progress;
  return io;
}

absl::StatusOr<double> Job::EvaluateLink(const core::NpyArray& pos, const core::NpyArray& neg) {
  ASSIGN_OR_RETURN(InferenceResult r, InferAllNodes(*model_, *graph_, *comm_, Inference()));
  model_->train();
  // This rank's slice of the positives, with their negatives.
  const int world = comm_->world_size(), rank = comm_->rank();
  const int64_t n = pos.rows(), k = n > 0 ? neg.rows() / n : 1;
  const int64_t lo = n * rank / world, hi = n * (rank + 1) / world;
  const int64_t* p = pos.data_as<int64_t>();
  const int64_t* q = neg.data_as<int64_t>();
  std::vector<int64_t> ids(p + 2 * lo, p + 2 * hi);
  ids.insert(ids.end(), q + 2 * lo * k, q + 2 * hi * k);
  ASSIGN_OR_RETURN(at::Tensor rows, FetchNodeRows(*comm_, graph_->node_book(), o_.trainers_per_machine, r, ids));
  at::Tensor pos_score, neg_score;
  RETURN_IF_ERROR(CatchTorch("link evaluation", [&] {
    at::NoGradGuard no_grad;  // (the scorer has no dropout: no eval mode needed)
    const at::Tensor pairs = rows.to(device_).view({-1, 2, rows.size(1)});  // [pairs, 2, width]
    const at::Tensor scores = scorer_->Score(pairs.select(1, 0), pairs.select(1, 1));
    pos_score = scores.narrow(0, 0, hi - lo);
    neg_score = scores.narrow(0, hi - lo, (hi - lo) * k).reshape({hi - lo, k});
  }));
  // ROC-AUC over all pairs, on the raw scores.
  MetricAccumulator auc(Metric::kRocAuc, 2);
  RETURN_IF_ERROR(CatchTorch("link evaluation", [&] {
    auc.AddBinaryScores(at::cat({pos_score, neg_score.flatten()}),
                        at::cat({at::ones({hi - lo}, at::kLong), at::zeros({(hi - lo) * k}, at::kLong)}));
  }));
  ASSIGN_OR_RETURN(double roc_auc, auc.Reduce(*comm_));
  const std::vector<int64_t> ks = {1, 10, 50};
  RankingSums sums;
  RETURN_IF_ERROR(CatchTorch("link evaluation", [&] { AddRankings(pos_score, neg_score, ks, &sums); }));
  std::vector<double> v = {sums.reciprocal_rank, sums.count};
  v.insert(v.end(), sums.hits.begin(), sums.hits.end());
  ASSIGN_OR_RETURN(v, AllReduceSum(*comm_, v));
  const double count = std::max(1.0, v[1]);
  link_metrics_ = {{"mrr", v[0] / count}};
  link_detail_ = StrCat("mrr ", Fixed4(v[0] / count));
  for (size_t i = 0; i < ks.size(); ++i) {
    link_metrics_[StrCat("hits@", ks[i])] = v[2 + i] / count;
    if (k >= ks[i]) link_detail_ += StrCat(", hits@", ks[i], " ", Fixed4(v[2 + i] / count));
  }
  link_detail_ += StrCat(" over ", k, " negative(s) each");
  return roc_auc;
}

// What both checkpoints record besides the model: its hyper-parameters and how it was trained.
Checkpoint Job::MakeCheckpoint(int64_t epoch) const {
  Checkpoint c;
  c.info["hyper_parameters"] = HyperParameters(model_->options());
  c.info["training"] = {{"graph", graph_->config().graph_name},
                        {"fanouts", o_.fanouts},
                        {"batch_size", o_.batch_size},
                        {"lr", o_.lr},
                        {"weight_decay", o_.weight_decay},
                        {"seed", o_.seed},
                        {"world_size", comm_->world_size()},
                        {"feature_field", o_.feature_field},
                        {"edge_weight_field", o_.edge.weight_field},
                        {"edge_feature_field", o_.edge.feature_field},
                        {"label_field", o_.label_field}};
  if (o_.link) {
    c.info["training"]["task"] = "link";
    c.info["training"]["scorer"] = std::string(ScorerKindName(o_.scorer));
  }
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
  if (o_.checkpoint_dir.empty() || !lead()) return absl::OkStatus();
  Checkpoint c = MakeCheckpoint(epoch);
  c.info["metric"] = MetricName(o_.metric);
  c.info[MetricKey("val")] = val;
  return WriteCheckpoint(o_.checkpoint_dir + "/best.pt", c);
}

absl::Status Job::SaveLast(int64_t epoch) {
  Checkpoint c = MakeCheckpoint(epoch);
  c.info["rank"] = comm_->rank();
  c.info["best_val_metric"] = result_.best_val_metric;
  c.info["best_epoch"] = result_.best_epoch;
  RETURN_IF_ERROR(CatchTorch("saving the optimizer state", [&] {
    torch::serialize::OutputArchive ar;
    opt_->save(ar);
    ar.save_to([&](const void* data, size_t n) {
      c.optimizer.append(static_cast<const char*>(data), n);
      return n;
    });
  }));
  return WriteCheckpoint(LastCheckpoint(o_), c);
}

absl::StatusOr<int64_t> Job::Resume() {
  const std::string path = LastCheckpoint(o_);
  int64_t epoch = -1;
  auto load = [&]() -> absl::Status {
    absl::StatusOr<Checkpoint> c = ReadCheckpoint(path);
    if (absl::IsNotFound(c.status())) {
      return absl::NotFoundError(StrCat("--resume: no checkpoint ", path, " (written after each epoch with --checkpoint-dir)"));
    }
    RETURN_IF_ERROR(c.status());
    const int64_t seed = c->info["training"].value("seed", int64_t{-1});
    if (seed != static_cast<int64_t>(o_.seed)) {
      return absl::FailedPreconditionError(StrCat("--resume: checkpoint ", path, " was written with --seed ", seed,
                                                  ", this run has --seed ", o_.seed, "; resume with the same seed"));
    }
    RETURN_IF_ERROR(LoadStateDict(*model_, *c, path));
    if (c->optimizer.empty()) {
      return absl::InvalidArgumentError(StrCat("--resume: checkpoint ", path, " holds no optimizer state"));
    }
    RETURN_IF_ERROR(CatchTorch(StrCat("loading the optimizer state of ", path), [&] {
      torch::serialize::InputArchive ar;
      ar.load_from(c->optimizer.data(), c->optimizer.size());
      opt_->load(ar);
    }));
    epoch = c->info.value("epoch", int64_t{-1});
    result_.best_val_metric = c->info.value("best_val_metric", -1.0);
    result_.best_epoch = c->info.value("best_epoch", int64_t{-1});
    return absl::OkStatus();
  };
  const absl::Status loaded = load();
  // Every rank joins this check, loaded or not, so that one rank's failure ends the others now
  // instead of after --comm-timeout; and all epochs must be equal (W * sum(e^2) == sum(e)^2).
  const double e = loaded.ok() ? static_cast<double>(epoch) : 0;
  ASSIGN_OR_RETURN(std::vector<double> sums, AllReduceSum(*comm_, {loaded.ok() ? 1.0 : 0.0, e, e * e}));
  RETURN_IF_ERROR(loaded);
  const double w = comm_->world_size();
  if (sums[0] != w) {
    return absl::FailedPreconditionError("--resume: another rank could not load its checkpoint (see its error)");
  }
  if (w * sums[2] != sums[1] * sums[1]) {
    return absl::FailedPreconditionError(StrCat("--resume: rank ", comm_->rank(), "'s checkpoint ", path,
                                                " is at epoch ", epoch, " but other ranks' are not"));
  }
  if (lead()) Log(StrCat("fanout-train: resumed from ", path, " after epoch ", epoch));
  return epoch + 1;
}

absl::StatusOr<TrainResult> Job::Run() {
  RETURN_IF_ERROR(Setup());
  int64_t first = 0;
  if (o_.resume) {
    ASSIGN_OR_RETURN(first, Resume());
  }
  if (!o_.load_model.empty()) RETURN_IF_ERROR(LoadModel());
  if (first < o_.epochs && o_.link) {
    RETURN_IF_ERROR(StartLinkSampler(first));
    for (int64_t epoch = first; epoch < o_.epochs; ++epoch) RETURN_IF_ERROR(TrainEpoch(nullptr, epoch));
  } else if (first < o_.epochs) {
    sampler::SamplerOptions so = TrainSamplerOptions();
    if (feature_cache_ != nullptr) so.cached_nodes = feature_cache_->nodes();
    sampler::LoaderOptions lo;
    lo.num_samplers = o_.num_samplers;
    lo.num_threads = std::max(1, o_.sampler_threads);
    lo.prefetch = o_.prefetch;
    lo.first_epoch = first;
    lo.num_epochs = o_.epochs - first;
    lo.sampler_binary = o_.sampler_binary;
    lo.part_config_path = o_.part_config;
    ASSIGN_OR_RETURN(auto loader, sampler::MakeBatchLoader(graph_.get(), o_.graph, so, train_, lo));
    for (int64_t epoch = first; epoch < o_.epochs; ++epoch)
      RETURN_IF_ERROR(TrainEpoch(loader.get(), epoch));
  }
  if (!o_.test) {
    RETURN_IF_ERROR(SaveEmbeddings());
    RETURN_IF_ERROR(comm_->Barrier());
    return result_;
  }
  if (test_total_ == 0) {
    // A split without test nodes (test_idx.npy is optional): say so rather than print 0.
    if (lead()) Log(StrCat("fanout-train: no test accuracy: field '", o_.test_mask, "' marks no nodes"));
    RETURN_IF_ERROR(SaveEmbeddings());
    RETURN_IF_ERROR(comm_->Barrier());
    return result_;
  }
  // Test: the final model, and the best-validation one (the usual model selection).
  ASSIGN_OR_RETURN(result_.final_test_metric, Evaluate(test_, o_.epochs, "test"));
  result_.test_metric = result_.final_test_metric;
  if (result_.best_epoch < 0 || result_.best_epoch == o_.epochs - 1) {
    // No validation, or the best model is the final one: one test pass says it all.
  } else if (!best_params_.empty()) {
    torch::NoGradGuard no_grad;
    auto params = model_->parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(best_params_[i]);
    ASSIGN_OR_RETURN(result_.test_metric, Evaluate(test_, o_.epochs, "test"));
  } else if (result_.best_epoch >= 0 && !o_.checkpoint_dir.empty()) {
    // Resumed, and no better model since: rank 0 reads best.pt and hands it to every rank.
    if (lead()) {
      const std::string best = o_.checkpoint_dir + "/best.pt";
      ASSIGN_OR_RETURN(Checkpoint c, ReadCheckpoint(best));
      RETURN_IF_ERROR(LoadStateDict(*model_, c, best));
    }
    RETURN_IF_ERROR(BroadcastParameters(*comm_, model_->parameters()));
    ASSIGN_OR_RETURN(result_.test_metric, Evaluate(test_, o_.epochs, "test"));
  }
  if (lead()) {
    const std::string m = MetricText();
    if (result_.best_epoch < 0) {
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
    if (o_.link) {
      // The ranking metrics of the model whose test roc-auc comes first above.
      Log(StrCat("fanout-train: test ", link_detail_));
      for (const auto& [name, value] : link_metrics_.items()) j["test_" + name] = value;
    }
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
  files.predictions = !o_.link;
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
               o_.save_embeddings, " (", Since(start), " s)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateTrainOptions(const TrainOptions& o) {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(StrCat(parts...)); };
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
    if (h < 1) return bad("--heads must be >= 1 in every layer, got ", core::StrJoin(o.model.layer_heads, ","));
  }
  if (!o.model.layer_heads.empty() && o.model.layer_heads.size() != o.fanouts.size()) {
    return bad("--heads has ", o.model.layer_heads.size(), " values for ", o.fanouts.size(),
               " layers (--fanouts): give one for every layer, or one per layer");
  }
  if (o.negatives < 1 || o.negatives > 1000) return bad("--negatives must be in [1, 1000], got ", o.negatives);
  if (o.embed_dim < 0) return bad("--embed-dim must be >= 0 (0: --hidden), got ", o.embed_dim);
  if (!o.edge.feature_field.empty() && o.model.model != ModelKind::kScripted) {
    return bad("--edge-feature: the built-in ", ModelKindName(o.model.model),
               " model does not read edge features; use --edge-weight for one number per edge, or a scripted model "
               "(docs/models.md) that reads block[\"edge_feat\"]");
  }
  if (o.epochs < (o.load_model.empty() ? 1 : 0)) {
    return bad("--epochs must be >= 1 (>= 0 with --load-model: evaluate or infer only), got ", o.epochs);
  }
  if (o.batch_size < 1) return bad("--batch-size must be >= 1, got ", o.batch_size);
  if (o.eval_batch_size < 1) return bad("--eval-batch-size must be >= 1, got ", o.eval_batch_size);
  for (const auto& [flag, fanouts] :
       {std::pair{"--fanouts", &o.fanouts}, {"--eval-fanouts", &o.eval_fanouts}}) {
    for (size_t i = 0; i < fanouts->size(); ++i) {
      if ((*fanouts)[i] == 0 || (*fanouts)[i] < -1) {
        return bad(flag, ": layer ", i, " has fanout ", (*fanouts)[i],
                   "; a fanout is a positive count or -1 (all neighbours)");
      }
    }
  }
  if (o.fanouts.empty()) return bad("--fanouts: at least one layer is needed");
  if (!o.eval_fanouts.empty() && o.eval_fanouts.size() != o.fanouts.size()) {
    return bad("--eval-fanouts has ", o.eval_fanouts.size(), " layers, --fanouts ",
               o.fanouts.size(), "; they must match");
  }
  if (o.eval_every < 0) return bad("--eval-every must be >= 0 (0: never), got ", o.eval_every);
  if (o.log_every < 0)
    return bad("--log-every must be >= 0 (0: per epoch only), got ", o.log_every);
  if (o.num_samplers < 0)
    return bad("--num-samplers must be >= 0 (0: sample in-process), got ", o.num_samplers);
  if (o.sampler_threads < 1) return bad("--sampler-threads must be >= 1, got ", o.sampler_threads);
  if (o.prefetch < 1) {
    return bad("--prefetch must be >= 1 (batches made ahead; with 0 none could ever be made), got ",
               o.prefetch);
  }
  if (o.intra_op_threads < 1) return bad("--num-threads must be >= 1, got ", o.intra_op_threads);
  if (o.gpu_cache_bytes < 0) return bad("--gpu-cache-bytes must be >= 0 (0: no cache), got ", o.gpu_cache_bytes);
  if (o.gpu_cache_presample_steps < 0) {
    return bad("--gpu-cache-presample-steps must be >= 0 (0: a whole epoch), got ", o.gpu_cache_presample_steps);
  }
  if (o.gpu_cache_presample && o.link) {
    return bad("--gpu-cache-policy presample samples node batches; --task link takes --gpu-cache-policy degree");
  }
  if (o.dist_backend == CommBackend::kNccl && !o.device.starts_with("cuda")) {
    return bad("--dist-backend nccl needs a GPU (--device cuda), not --device ", o.device);
  }
  if (o.trainers_per_machine < 1)
    return bad("--num-trainers must be >= 1, got ", o.trainers_per_machine);
  if (o.resume && o.checkpoint_dir.empty()) return bad("--resume needs --checkpoint-dir");
  if (o.resume && !o.load_model.empty()) {
    return bad("--resume and --load-model both say where to start: give one");
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainResult> RunTraining(const TrainOptions& options) {
  RETURN_IF_ERROR(ValidateTrainOptions(options));
  Job job(options);
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

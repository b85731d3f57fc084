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

#include "core/fsync.h"
#include "core/random.h"
#include "core/status.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"
#include "sampler/loader.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/seed_split.h"
#include "trainer/batch_tensors.h"
#include "trainer/checkpoint.h"
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
  absl::Status TrainEpoch(sampler::BatchLoader& loader, int64_t epoch);
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
  std::unique_ptr<Communicator> comm_;
  c10::Device device_{c10::kCPU};
  std::shared_ptr<GnnModel> model_;
  std::unique_ptr<torch::optim::Adam> opt_;
  std::unique_ptr<GradientSynchronizer> sync_;
  std::vector<int64_t> train_, val_, test_;
  std::vector<at::Tensor> best_params_;  // copy of the best-validation parameters
  int64_t train_total_ = 0, val_total_ = 0, test_total_ = 0;
  std::ofstream metrics_;
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
}

absl::Status Job::Setup() {
  ASSIGN_OR_RETURN(core::PartitionConfig config, core::LoadPartitionConfig(o_.part_config));
  if (o_.dist.world_size != config.num_parts * o_.trainers_per_machine) {
    return absl::InvalidArgumentError(StrCat(
        "world size ", o_.dist.world_size, " != ", config.num_parts, " partitions (machines) x ",
        o_.trainers_per_machine, " trainers per machine; partition config ", o_.part_config));
  }
  ASSIGN_OR_RETURN(device_, ParseDevice(o_.device));
  RETURN_IF_ERROR(SetIntraOpThreads(o_.intra_op_threads));
  // The trainer's own graph fetches features only for evaluation or when it samples itself;
  // otherwise only its sampler processes (which get o_.graph) keep the halo cache.
  sampler::DistGraphOptions own = o_.graph;
  if (o_.num_samplers > 0 && o_.eval_every <= 0 && !o_.test) own.cache_max_bytes = 0;
  ASSIGN_OR_RETURN(graph_, sampler::DistGraph::Open(config, own));

  // Model dimensions come from the graph.
  ASSIGN_OR_RETURN(core::FieldSchema feat, graph_->NodeFieldSchema(o_.feature_field));
  const int64_t in_dim = feat.row_elems();
  if (config.num_classes <= 0) {
    return absl::FailedPreconditionError(StrCat(
        "partition config ", o_.part_config, " records no num_classes: the dataset has no labels"));
  }
  ModelOptions mo = o_.model;
  mo.in_dim = in_dim;
  mo.num_classes = config.num_classes;
  mo.num_layers = static_cast<int64_t>(o_.fanouts.size());
  RETURN_IF_ERROR(ValidateModelOptions(mo));
  if (!o_.eval_fanouts.empty() && o_.eval_fanouts.size() != o_.fanouts.size()) {
    return absl::InvalidArgumentError(StrCat("--eval-fanouts has ", o_.eval_fanouts.size(),
                                             " layers, --fanouts ", o_.fanouts.size(),
                                             "; they must match"));
  }

  const int rank = o_.dist.rank, tpm = o_.trainers_per_machine;
  ASSIGN_OR_RETURN(train_, RankShare(*graph_, o_.train_mask, tpm, rank, &train_total_));
  if (o_.eval_every > 0) {
    ASSIGN_OR_RETURN(val_, RankShare(*graph_, o_.val_mask, tpm, rank, &val_total_));
  }
  if (o_.test) {
    ASSIGN_OR_RETURN(test_, RankShare(*graph_, o_.test_mask, tpm, rank, &test_total_));
  }
  if (train_total_ < o_.dist.world_size) {
    return absl::FailedPreconditionError(StrCat("field '", o_.train_mask, "' marks ", train_total_,
                                                " training nodes, fewer than the ",
                                                o_.dist.world_size, " trainers"));
  }

  // The model first (a scripted one that does not fit the graph fails here, before any peer
  // waits), then join the other trainers and start from rank 0's parameters.
  ASSIGN_OR_RETURN(model_, MakeModel(mo, o_.seed));
  DistOptions d = o_.dist;
  d.backend = device_.is_cuda() ? CommBackend::kNccl : CommBackend::kGloo;
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

absl::Status Job::TrainEpoch(sampler::BatchLoader& loader, int64_t epoch) {
  model_->train();
  Breakdown t;
  const auto start = Clock::now();
  double loss_sum = 0, correct = 0, count = 0;
  const int64_t steps = loader.steps_per_epoch();
  ToTensorsOptions to;
  to.device = device_;
  to.num_classes = model_->options().num_classes;
  for (int64_t step = 0; step < steps; ++step) {
    auto t0 = Clock::now();
    ASSIGN_OR_RETURN(sampler::MiniBatch mb, loader.Next());
    if (mb.epoch != epoch || mb.step != step) {
      return absl::InternalError(StrCat("loader gave epoch ", mb.epoch, " step ", mb.step,
                                        ", expected ", epoch, " step ", step));
    }
    t.wait += Since(t0);
    t.sample += mb.sample_seconds;
    t.fetch += mb.fetch_seconds;
    t0 = Clock::now();
    ASSIGN_OR_RETURN(BatchTensors bt, ToTensors(mb, to));
    t.copy += Since(t0);
    // Dropout draws from a stream seeded by (seed, epoch, step, rank): a resumed run repeats it.
    SeedTorch(core::SplitMix64(o_.seed ^ core::SplitMix64((static_cast<uint64_t>(epoch) << 32) ^
                                                          (static_cast<uint64_t>(step) << 8) ^
                                                          static_cast<uint64_t>(comm_->rank()))));
    at::Tensor loss, logits;
    t0 = Clock::now();
    RETURN_IF_ERROR(CatchTorch("forward", [&] {
      opt_->zero_grad();
      logits = model_->Forward(bt.blocks, bt.features);
      loss = torch::nn::functional::cross_entropy(logits, bt.labels);
    }));
    t.forward += Since(t0);
    t0 = Clock::now();
    RETURN_IF_ERROR(CatchTorch("backward", [&] { loss.backward(); }));
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
    const double n = static_cast<double>(mb.seeds.size());
    const double l = loss.item<double>();
    const double c = logits.argmax(1).eq(bt.labels).sum().item<double>();
    loss_sum += l * n;
    correct += c;
    count += n;
    if (lead() && o_.log_every > 0 && (step + 1) % o_.log_every == 0) {
      Log(StrCat("epoch ", epoch, " step ", step + 1, "/", steps, " | loss ", l, " | acc ",
                 c / std::max(1.0, n)));
    }
  }
  const double epoch_s = Since(start);
  ASSIGN_OR_RETURN(std::vector<double> sums, AllReduceSum(*comm_, {loss_sum, correct, count}));
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
    Log(line);
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
    Metrics(j);
  }
  if (val >= 0 && val > result_.best_val_metric) RETURN_IF_ERROR(SaveBest(epoch, val));
  if (!o_.checkpoint_dir.empty()) RETURN_IF_ERROR(SaveLast(epoch));
  result_.epochs_run = epoch + 1;
  return absl::OkStatus();
}

absl::StatusOr<double> Job::Evaluate(const std::vector<int64_t>& ids, int64_t epoch,
                                     const char* what) {
  MetricAccumulator metric(o_.metric, model_->options().num_classes);
  if (!ids.empty()) {
    sampler::SamplerOptions so;
    so.fanouts = o_.eval_fanouts.empty() ? o_.fanouts : o_.eval_fanouts;
    so.batch_size = o_.eval_batch_size;
    so.shuffle = false;
    so.seed = core::SplitMix64(o_.seed + 0x5eed);
    so.rank = comm_->rank();
    so.feature_field = o_.feature_field;
    so.label_field = o_.label_field;
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
    for (int64_t step = 0; step < loader->steps_per_epoch(); ++step) {
      ASSIGN_OR_RETURN(sampler::MiniBatch mb, loader->Next());
      ASSIGN_OR_RETURN(BatchTensors bt, ToTensors(mb, to));
      RETURN_IF_ERROR(CatchTorch(StrCat(what, " forward"),
                                 [&] { metric.Add(model_->Forward(bt.blocks, bt.features), bt.labels); }));
    }
    model_->train();
  }
  return metric.Reduce(*comm_);
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
                        {"label_field", o_.label_field}};
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
  if (first < o_.epochs) {
    sampler::SamplerOptions so;
    so.fanouts = o_.fanouts;
    so.batch_size = o_.batch_size;
    so.seed = o_.seed;
    so.rank = comm_->rank();
    so.seeds_per_epoch = sampler::SeedsPerEpoch(train_total_, comm_->world_size());
    so.feature_field = o_.feature_field;
    so.label_field = o_.label_field;
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
      RETURN_IF_ERROR(TrainEpoch(*loader, epoch));
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
    Metrics({{"event", "test"},
             {"metric", MetricName(o_.metric)},
             {MetricKey("test"), result_.test_metric},
             {MetricKey("final_test"), result_.final_test_metric},
             {MetricKey("best_val"), result_.best_val_metric},
             {"best_epoch", result_.best_epoch}});
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
  InferenceOptions io;
  io.batch_size = o_.eval_batch_size;
  io.feature_field = o_.feature_field;
  io.trainers_per_machine = o_.trainers_per_machine;
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
  if (o.intra_op_threads < 1) return bad("--threads must be >= 1, got ", o.intra_op_threads);
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

}  // namespace fanout::trainer

#include "trainer/training.h"

#include <malloc.h>
#include <ATen/record_function.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/serialize.h>
#include <torch/serialize/archive.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
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
#include "sampler/loader.h"
#include "trainer/batch_tensors.h"
#include "trainer/checkpoint.h"
#include "trainer/cpu_allocator.h"
#include "trainer/device_upload.h"
#include "trainer/feature_cache.h"
#include "trainer/inference.h"
#include "trainer/job.h"
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

std::string LastCheckpoint(const TrainOptions& o) {
  return StrCat(o.checkpoint.dir, "/last.rank", o.dist.rank, ".pt");
}

// The last checkpoint before LastCheckpoint's: a rank killed while the others wrote epoch E
// still has E-1 there, so a restart finds an epoch every rank holds.
std::string PreviousCheckpoint(const TrainOptions& o) {
  return StrCat(o.checkpoint.dir, "/last.rank", o.dist.rank, ".prev.pt");
}

}  // namespace


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
  absl::StatusOr<BatchTensors> made;
  {
    RECORD_USER_SCOPE("fanout::batch_tensors");
    made = ToTensors(mb, to);
  }
  ASSIGN_OR_RETURN(BatchTensors bt, std::move(made));
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

absl::Status Job::StepUpdate(int64_t epoch, int64_t step, StepLoss& s, Breakdown& t) {
  auto t0 = Clock::now();
  sync_->BeginBackward(*comm_);
  RETURN_IF_ERROR(CatchTorch("backward", [&] { s.loss.backward(); }));
  t.backward += Since(t0);
  t0 = Clock::now();
  absl::Status synced = sync_->AllReduceMean(*comm_);
  if (!synced.ok()) {
    return absl::Status(synced.code(), StrCat("gradient all-reduce at epoch ", epoch, " step ", step,
                                              " (a trainer is gone or stuck?): ", synced.message()));
  }
  t.allreduce += Since(t0);
  t0 = Clock::now();
  RETURN_IF_ERROR(CatchTorch("optimizer step", [&] {
    RECORD_USER_SCOPE("fanout::optimizer_step");
    opt_->step();
  }));
  if (absl::Status e = input_->Step(*comm_); !e.ok()) {
    return absl::Status(e.code(), StrCat("learnable embeddings' update at epoch ", epoch, " step ", step, ": ",
                                         e.message()));
  }
  t.update += Since(t0);
  return absl::OkStatus();
}

absl::StatusOr<bool> Job::StopOrCheckpoint(int64_t epoch, int64_t step, int64_t steps,
                                           const std::function<std::vector<double>()>& sums_so_far) {
  // A stop asked of any rank (SIGTERM) stops every rank here, after the same step.
  bool stop = false;
  if (o_.stop_requested != nullptr) {
    ASSIGN_OR_RETURN(std::vector<double> asked, AllReduceSum(*comm_, {o_.stop_requested->load() ? 1.0 : 0.0}));
    stop = asked[0] > 0;
  }
  const int64_t every = o_.checkpoint.every_steps;
  if (stop || (every > 0 && (step + 1) % every == 0 && step + 1 < steps)) {
    RETURN_IF_ERROR(SaveLast(epoch, step + 1, sums_so_far()));
  }
  return stop;
}

void Job::ReportProfile(const OpProfile& p) {
  if (!lead()) return;
  Log(p.Format());
  Metrics(p.ToJson());
}

void Job::ReportEpoch(const EpochReport& r) {
  const Breakdown& t = r.t;
  char val_text[32] = "-";
  if (r.val >= 0) std::snprintf(val_text, sizeof(val_text), "%.4f", r.val);
  char line[512];
  std::snprintf(line, sizeof(line),
                "epoch %lld | loss %.4f | train acc %.4f | val %s %s | %.2f s (sample %.2f, fetch %.2f, "
                "wait %.2f, "
                "copy %.2f, forward %.2f, backward %.2f, all-reduce %.2f, update %.2f) | %.0f seeds/s",
                static_cast<long long>(r.epoch), r.loss, r.acc,
                o_.eval.metric == Metric::kAccuracy ? "acc" : MetricText().c_str(), val_text, r.epoch_s, t.sample, t.fetch,
                t.wait, t.copy, t.forward, t.backward, t.allreduce, t.update, r.seeds_per_s);
  std::string text = line;
  if (feature_cache_ != nullptr) {
    char hits[48];
    std::snprintf(hits, sizeof(hits), " | cache hits %.1f%%", 100 * r.hit_rate);
    text += hits;
  }
  // This trainer's (and its samplers') bytes to and from other machines since the last report.
  base::WireTotals wire;
  if (o_.graph.client.wire != nullptr) {
    const base::WireTotals now = o_.graph.client.wire->Read();
    wire = now - wire_mark_;
    wire_mark_ = now;
    text += StrCat(" | wire ", wire.Describe());
  }
  Log(!r.val_detail.empty() ? StrCat(text, " | val ", r.val_detail) : text);
  nlohmann::json j = {{"event", "epoch"},
                      {"epoch", r.epoch},
                      {"loss", r.loss},
                      {"train_acc", r.acc},
                      {"epoch_seconds", r.epoch_s},
                      {"sample_seconds", t.sample},
                      {"fetch_seconds", t.fetch},
                      {"wait_seconds", t.wait},
                      {"copy_seconds", t.copy},
                      {"forward_seconds", t.forward},
                      {"backward_seconds", t.backward},
                      {"allreduce_seconds", t.allreduce},
                      {"update_seconds", t.update},
                      {"steps", r.steps},
                      {"seeds_per_second", r.seeds_per_s},
                      {"world_size", comm_->world_size()}};
  if (o_.restart_count > 0) j["restart_count"] = o_.restart_count;
  if (o_.graph.client.wire != nullptr) {
    nlohmann::json kinds = nlohmann::json::object();
    for (int k = 0; k < base::kNumWireKinds; ++k) {
      kinds[std::string(base::WireKindName(static_cast<base::WireKind>(k)))] = {{"sent", wire.sent[k]},
                                                                                 {"received", wire.received[k]}};
    }
    j["wire_bytes"] = kinds;
    j["wire_mb"] = static_cast<double>(wire.total()) / 1e6;
  }
  if (r.val >= 0) j[MetricKey("val")] = r.val;
  if (feature_cache_ != nullptr) j["cache_hit_rate"] = r.hit_rate;
  if (r.val >= 0) {
    const nlohmann::json figures = task_->EvaluationMetrics();  // (items() does not keep a temporary alive)
    for (const auto& [name, value] : figures.items()) j["val_" + name] = value;
  }
  Metrics(j);
}

absl::StatusOr<double> Job::Evaluate(Split split, int64_t epoch) {
  ReleaseCachedCpuBlocks();
  absl::StatusOr<double> metric = task_->Evaluate(*this, split, epoch);
  ReleaseCachedCpuBlocks();
  return metric;
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
                            lead() ? o_.output.progress : base::ProgressMode::kOff);
  // The epoch's running sums with the cache's counts (what a checkpoint inside the epoch keeps).
  auto sums_so_far = [&] {
    std::vector<double> sums = running.Read();
    sums.push_back(static_cast<double>(t.cached));
    sums.push_back(static_cast<double>(t.inputs));
    return sums;
  };
  // --profile-steps: steps [profile_begin, profile_end) of the second epoch (the first when it
  // is the only one); its first step is left out (it waits for the loader's first batches).
  int64_t profile_begin = -1, profile_end = -1;
  if (o_.output.profile_steps > 0 && epoch == std::min<int64_t>(1, o_.epochs - 1)) {
    profile_begin = std::max(first_step, std::min<int64_t>(1, steps - 1));
    profile_end = std::min(steps, profile_begin + o_.output.profile_steps);
  }
  OpProfiler profiler;
  for (int64_t step = first_step; step < steps; ++step) {
    if (step == profile_begin) profiler.Start();
    RETURN_IF_ERROR(CatchTorch("zeroing the gradients", [&] { opt_->zero_grad(); }));
    ASSIGN_OR_RETURN(StepLoss s, task_->Step(*this, epoch, step, t));
    RETURN_IF_ERROR(StepUpdate(epoch, step, s, t));
    running.Add(s);
    if (step + 1 == profile_end) ReportProfile(profiler.Stop(profile_end - profile_begin));
    if (lead() && o_.output.log_every > 0 && (step + 1) % o_.output.log_every == 0) {  // reads the device: only here
      meter.Clear();  // the line below must not land inside a progress line
      Log(StrCat("epoch ", epoch, " step ", step + 1, "/", steps, " | loss ", s.loss.item<double>(), " | acc ",
                 s.correct.item<double>() / std::max(1.0, s.n)));
    }
    meter.Set(step + 1);
    ASSIGN_OR_RETURN(const bool stop, StopOrCheckpoint(epoch, step, steps, sums_so_far));
    if (stop) {
      meter.Finish();
      return absl::CancelledError(StrCat("SIGTERM: stopped after a checkpoint at epoch ", epoch, " step ", step + 1,
                                         " of ", steps, " (every rank stops at this step)"));
    }
  }
  meter.Finish();
  // The epoch's one wait for the device. The cache's counts ride along: the hit rate is over
  // every rank's inputs, in one collective.
  const std::vector<double> local = sums_so_far();
  const double epoch_s = Since(start);
  if (epoch + 1 == o_.epochs) {
    task_->FinishTraining();
    malloc_trim(0);  // what the training batches left in glibc's heap goes back to the system
  }
  ASSIGN_OR_RETURN(std::vector<double> sums, AllReduceSum(*comm_, local));
  EpochReport r{.epoch = epoch,
                .steps = steps,
                .loss = sums[0] / std::max(1.0, sums[2]),
                .acc = sums[1] / std::max(1.0, sums[2]),
                .epoch_s = epoch_s,
                .seeds_per_s = sums[2] / std::max(1e-9, epoch_s),
                .hit_rate = sums[3] / std::max(1.0, sums[4]),  // the share of all ranks' input rows the caches held
                .t = t};
  const bool eval_now = o_.eval.every > 0 && ((epoch + 1) % o_.eval.every == 0 || epoch + 1 == o_.epochs);
  if (eval_now && sizes_.val > 0) {
    ASSIGN_OR_RETURN(r.val, Evaluate(Split::kVal, epoch));
    r.val_detail = task_->EvaluationDetail();
  }
  if (lead()) ReportEpoch(r);
  if (r.val >= 0 && r.val > result_.best_val_metric) RETURN_IF_ERROR(SaveBest(epoch, r.val));
  if (!o_.checkpoint.dir.empty()) RETURN_IF_ERROR(SaveLast(epoch + 1, 0));
  result_.epochs_run = epoch + 1;
  return absl::OkStatus();
}

InferenceOptions Job::Inference() const {
  InferenceOptions io;
  io.batch_size = o_.eval.batch_size;
  io.feature_field = o_.sampling.feature_field;
  io.edge = o_.sampling.edge;
  io.trainers_per_machine = o_.trainers_per_machine;
  io.progress = o_.output.progress;
  // A typed graph's model input is the typed input layer's rows (projections, embeddings).
  if (input_->transforms()) {
    io.model_input = [input = input_.get()](const BatchTensors& bt, const sampler::MiniBatch& mb) {
      return input->Forward(bt, mb);
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
  RETURN_IF_ERROR(input_->Snapshot(comm_->rank()));
  if (o_.checkpoint.dir.empty() || !lead()) return absl::OkStatus();
  Checkpoint c = MakeCheckpoint(epoch);
  c.info["metric"] = MetricName(o_.eval.metric);
  c.info[MetricKey("val")] = val;
  return WriteCheckpoint(o_.checkpoint.dir + "/best.pt", c);
}

absl::Status Job::SaveLast(int64_t next_epoch, int64_t next_step, const std::vector<double>& epoch_sums) {
  // "epoch" stays the last whole epoch (-1: none yet), as best.pt's; "resume_at" says where to go on.
  Checkpoint c = MakeCheckpoint(next_epoch - 1);
  c.info["rank"] = comm_->rank();
  c.info["resume_at"] = {next_epoch, next_step};
  if (!epoch_sums.empty()) c.info["epoch_sums"] = epoch_sums;
  c.info["best_val_metric"] = result_.best_val_metric;
  c.info["best_epoch"] = result_.best_epoch;
  ASSIGN_OR_RETURN(c.embeddings, input_->Save(comm_->rank()));
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
                   "no position is checkpointed on every rank in ", o_.checkpoint.dir, "; starting from scratch"));
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
    if (absl::Status s = input_->Load(c.embeddings, comm_->rank()); !s.ok()) {
      return absl::Status(s.code(), StrCat("--resume: checkpoint ", path, ": ", s.message()));
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
  const bool restarted = o_.checkpoint.auto_resume || (o_.restart_count > 0 && !o_.checkpoint.dir.empty());
  if (o_.checkpoint.resume || restarted) {
    ASSIGN_OR_RETURN(first, Resume(/*required=*/o_.checkpoint.resume));
  }
  const bool from_start = first.epoch == 0 && first.step == 0;
  if (!o_.checkpoint.load_model.empty() && from_start) RETURN_IF_ERROR(LoadModel());
  if (first.epoch < o_.epochs) {
    RETURN_IF_ERROR(task_->StartTraining(*this, first.epoch, first.step));
    for (int64_t epoch = first.epoch; epoch < o_.epochs; ++epoch) {
      RETURN_IF_ERROR(TrainEpoch(epoch, epoch == first.epoch ? first.step : 0));
    }
  }
  // (With sampler processes they print their own; this process's gathers are then evaluation's.)
  if (const std::string r = graph_->graph().HaloCacheReport(); !r.empty()) Log(StrCat("fanout-train: ", r));
  if (!o_.eval.test) {
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
    ASSIGN_OR_RETURN(*metric, Evaluate(Split::kTest, o_.epochs));
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
    RETURN_IF_ERROR(input_->Restore(*comm_));
    RETURN_IF_ERROR(test(&result_.test_metric));
  } else if (input_->has_sparse_rows()) {
    // Resumed, and no better model since: best.pt holds its model but not its embeddings, so the
    // final model (with the embeddings it trained) is the one tested.
    best_not_tested = true;
  } else if (result_.best_epoch >= 0 && !o_.checkpoint.dir.empty()) {
    // Resumed, and no better model since: rank 0 reads best.pt and hands it to every rank.
    if (lead()) {
      const std::string best = o_.checkpoint.dir + "/best.pt";
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
                 result_.epochs_run == 0 && !o_.checkpoint.load_model.empty() ? StrCat("model of ", o_.checkpoint.load_model)
                                                                   : std::string("final model; no validation"),
                 ")"));
    } else {
      Log(StrCat("fanout-train: test ", m, " ", Fixed4(result_.test_metric), " (model of epoch ", result_.best_epoch,
                 ", best validation ", m, " ", Fixed4(result_.best_val_metric), "); final model's test ", m, " ",
                 Fixed4(result_.final_test_metric)));
    }
    nlohmann::json j = {{"event", "test"},
                        {"metric", MetricName(o_.eval.metric)},
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
    absl::StatusOr<Checkpoint> c = ReadCheckpoint(o_.checkpoint.load_model);
    loaded = c.ok() ? LoadStateDict(*model_, *c, o_.checkpoint.load_model) : c.status();
    if (loaded.ok()) {
      Log(StrCat("fanout-train: loaded the model of ", o_.checkpoint.load_model, " (epoch ", c->info.value("epoch", int64_t{-1}), ")"));
    }
  }
  ASSIGN_OR_RETURN(std::vector<double> bad, AllReduceSum(*comm_, {loaded.ok() ? 0.0 : 1.0}));
  RETURN_IF_ERROR(loaded);
  if (bad[0] > 0) return absl::FailedPreconditionError(StrCat("--load-model: rank 0 could not load ", o_.checkpoint.load_model));
  return BroadcastParameters(*comm_, model_->parameters());
}

absl::Status Job::SaveEmbeddings() {
  if (o_.output.save_embeddings.empty()) return absl::OkStatus();
  InferenceOptions io = Inference();
  io.on_layer = [&](int64_t layer, int64_t layers, double seconds) {
    Log(StrCat("fanout-train: inference: layer ", layer + 1, "/", layers, " done for all nodes (", seconds, " s)"));
  };
  const auto start = Clock::now();
  ASSIGN_OR_RETURN(InferenceResult r, InferAllNodes(*model_, graph_->graph(), *comm_, io));
  if (lead() && !r.layerwise) {
    Log(StrCat("fanout-train: inference: ", o_.model.script_path,
               " has no forward_layer, so every layer used full neighbourhoods"));
  }
  NodeOutputFiles files;
  files.dir = o_.output.save_embeddings;
  files.overwrite = o_.output.overwrite;
  files.predictions = task_->WritesPredictions();
  files.info = {{"graph", graph_->config().graph_name},
                {"hyper_parameters", HyperParameters(model_->options())},
                {"layerwise", r.layerwise}};
  if (result_.epochs_run == 0 && !o_.checkpoint.load_model.empty()) {
    files.info["checkpoint"] = o_.checkpoint.load_model;
  } else {
    files.info["epoch"] = result_.best_epoch >= 0 ? result_.best_epoch : result_.epochs_run - 1;
    if (result_.best_epoch >= 0 && !o_.checkpoint.dir.empty()) files.info["checkpoint"] = o_.checkpoint.dir + "/best.pt";
  }
  RETURN_IF_ERROR(WriteNodeOutputs(r, graph_->graph(), *comm_, files));
  if (lead()) {
    Log(StrCat("fanout-train: wrote embeddings and predictions of ", graph_->graph().num_nodes(), " nodes to ",
               o_.output.save_embeddings, graph_->config().typed() ? " (a folder per node type)" : "", " (", Since(start),
               " s)"));
  }
  return absl::OkStatus();
}

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
  if (o.epochs < (o.checkpoint.load_model.empty() ? 1 : 0)) {
    return bad("--epochs must be >= 1 (>= 0 with --load-model: evaluate or infer only), got ", o.epochs);
  }
  RETURN_IF_ERROR(core::CheckBatchSize("--batch-size", o.sampling.batch_size));
  RETURN_IF_ERROR(core::CheckBatchSize("--eval-batch-size", o.eval.batch_size));
  RETURN_IF_ERROR(core::CheckLayerFanouts("--fanouts", fanouts));
  if (!o.eval.fanouts.empty()) RETURN_IF_ERROR(core::CheckLayerFanouts("--eval-fanouts", o.eval.fanouts));
  if (!o.eval.fanouts.empty() && o.eval.fanouts.size() != fanouts.size()) {
    return bad("--eval-fanouts has ", o.eval.fanouts.size(), " layers, --fanouts ", fanouts.size(),
               "; they must match");
  }
  if (o.eval.every < 0) return bad("--eval-every must be >= 0 (0: never), got ", o.eval.every);
  if (o.output.log_every < 0)
    return bad("--log-every must be >= 0 (0: per epoch only), got ", o.output.log_every);
  if (o.loader.num_samplers < 0)
    return bad("--num-samplers must be >= 0 (0: sample in-process), got ", o.loader.num_samplers);
  if (o.loader.num_threads < 1) return bad("--sampler-threads must be >= 1, got ", o.loader.num_threads);
  if (o.loader.prefetch < 1) {
    return bad("--prefetch must be >= 1 (batches made ahead; with 0 none could ever be made), got ",
               o.loader.prefetch);
  }
  if (o.intra_op_threads < 1) return bad("--num-threads must be >= 1, got ", o.intra_op_threads);
  if (o.device_cache.bytes < 0) return bad("--gpu-cache-bytes must be >= 0 (0: no cache), got ", o.device_cache.bytes);
  if (o.row_cache_presample_steps < 0) {
    return bad("--feature-cache-presample-steps must be >= 0 (0: a whole epoch), got ", o.row_cache_presample_steps);
  }
  if (o.device_cache.presample_steps < 0) {
    return bad("--gpu-cache-presample-steps must be >= 0 (0: a whole epoch), got ", o.device_cache.presample_steps);
  }
  if (o.dist_backend == CommBackend::kNccl && !o.device.starts_with("cuda")) {
    return bad("--dist-backend nccl needs a GPU (--device cuda), not --device ", o.device);
  }
  if (o.trainers_per_machine < 1)
    return bad("--num-trainers must be >= 1, got ", o.trainers_per_machine);
  if (o.checkpoint.resume && o.checkpoint.dir.empty()) return bad("--resume needs --checkpoint-dir");
  if (o.checkpoint.every_steps > 0 && o.checkpoint.dir.empty()) return bad("--checkpoint-every-steps needs --checkpoint-dir");
  if (o.checkpoint.auto_resume && o.checkpoint.dir.empty()) return bad("--auto-resume needs --checkpoint-dir");
  if (o.checkpoint.auto_resume && o.checkpoint.resume) return bad("--auto-resume and --resume: give one");
  if (o.checkpoint.resume && !o.checkpoint.load_model.empty()) {
    return bad("--resume and --load-model both say where to start: give one");
  }
  if (std::optional<Metric> m = (*task)->fixed_metric(); m && *m != o.eval.metric) {
    return bad("--task ", o.task, " reports ", MetricName(*m), " and selects the model by it, not by --metric ",
               MetricName(o.eval.metric));
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

// The training job of one rank (fanout-train): what RunTraining (training.h) runs. Internal to
// the library fanout_training: training.cc holds the loop, checkpoints and outputs,
// job_setup.cc the setup.
#pragma once

#include <torch/optim/adam.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/tensorboard.h"
#include "nlohmann/json.hpp"
#include "sampler/job_graph.h"
#include "trainer/checkpoint.h"
#include "trainer/device_upload.h"
#include "trainer/feature_cache.h"
#include "trainer/inference.h"
#include "trainer/model_input.h"
#include "trainer/op_profile.h"
#include "trainer/task.h"
#include "trainer/train_result.h"

namespace fanout::trainer {

class Job final : public JobContext {
 public:
  Job(const TrainOptions& o, std::unique_ptr<Task> task) : o_(o), task_(std::move(task)) {}
  // The task goes first: its loaders' threads sample graph_ until they are stopped, and a job
  // that fails mid-epoch leaves them mid-batch (members would destroy graph_ before task_).
  ~Job() override;

  absl::StatusOr<TrainResult> Run();

  // JobContext (task.h): what the task uses.
  const TrainOptions& options() const override { return o_; }
  const core::PartitionConfig& config() const override { return graph_->config(); }
  sampler::DistGraph& graph() override { return *graph_->mutable_graph(); }
  Communicator& comm() override { return *comm_; }
  GnnModel& model() override { return *model_; }
  c10::Device device() const override { return device_; }
  DeviceUploader& uploader() override { return *uploader_; }
  const FeatureCache* feature_cache() const override { return feature_cache_.get(); }
  absl::StatusOr<BatchTensors> StepTensors(const sampler::MiniBatch& mb, int64_t epoch, int64_t step, bool labels,
                                           Breakdown& t) override;
  absl::StatusOr<at::Tensor> ModelInput(const BatchTensors& bt, const sampler::MiniBatch& mb) override {
    return input_->Forward(bt, mb);
  }
  InferenceOptions Inference() const override;
  bool lead() const override { return comm_->rank() == 0; }
  void Log(const std::string& line) const override;

 private:
  // Setup (job_setup.cc), in steps: the graph and the device; the model's input (plain
  // features, the typed input layer, learnable rows); the edge fields asked for; the model and
  // the other trainers; the files the job writes; the lead's lines about all of it.
  absl::Status Setup();
  absl::Status OpenGraph(const core::PartitionConfig& config);
  absl::Status PrepareInput(const core::PartitionConfig& config, ModelOptions* mo);
  absl::Status CheckEdgeFields() const;
  absl::Status BuildModelAndJoin(const core::PartitionConfig& config, const ModelOptions& mo);
  absl::Status OpenOutputs();
  void LogSetup(const core::PartitionConfig& config, const ModelOptions& mo, int64_t in_dim) const;
  // feature_cache_ (--gpu-cache-bytes), its nodes chosen by --gpu-cache-policy.
  absl::Status BuildFeatureCache();
  // The graph's remote-row cache ranked by presampled batches (--feature-cache-rows presample).
  absl::Status BuildRowCache();
  // How often this trainer's first `steps` batches (0: an epoch) take each node as an input,
  // presampled without their data by the task (Task::PresampleInputs); counted once for both
  // caches when they ask for the same steps. `how` says what was counted and how long it took, for the log.
  absl::StatusOr<const std::vector<int64_t>*> Presampled(int64_t steps, std::string* how);
  // From `first_step` on (a job resumed inside the epoch: the steps before it are in
  // resumed_sums_).
  absl::Status TrainEpoch(int64_t epoch, int64_t first_step);
  // The task's evaluation of `split`, with the tensor allocator's kept blocks handed back before
  // (training's shapes) and after (evaluation's larger batches').
  absl::StatusOr<double> Evaluate(Split split, int64_t epoch);
  // After the task's forward: backward, gradient all-reduce, the optimisers' step.
  absl::Status StepUpdate(int64_t epoch, int64_t step, StepLoss& s, Breakdown& t);
  // After step `step`: whether any rank was asked to stop (SIGTERM); then, or every
  // --checkpoint-every-steps, a checkpoint with the epoch's sums so far.
  absl::StatusOr<bool> StopOrCheckpoint(int64_t epoch, int64_t step, int64_t steps,
                                        const std::function<std::vector<double>()>& sums_so_far);
  // An epoch's figures, summed over every rank, for its line and metrics record.
  struct EpochReport {
    int64_t epoch = 0, steps = 0;
    double loss = 0, acc = 0, epoch_s = 0, seeds_per_s = 0, hit_rate = 0;
    double val = -1;  // -1: not evaluated this epoch
    std::string val_detail;
    Breakdown t;
  };
  void ReportEpoch(const EpochReport& r);
  void ReportProfile(const OpProfile& p);
  void SeedStep(int64_t epoch, int64_t step);
  Checkpoint MakeCheckpoint(int64_t epoch) const;
  // This rank's state to continue at (next_epoch, next_step): after an epoch (next_step 0), or
  // inside one, with the epoch's running sums so far (its line then reads as uninterrupted).
  absl::Status SaveLast(int64_t next_epoch, int64_t next_step, const std::vector<double>& epoch_sums = {});
  absl::Status SaveBest(int64_t epoch, double val);
  // "val_acc", "test_roc_auc", ...: the metrics file's and checkpoints' key for the --metric.
  std::string MetricKey(const std::string& prefix) const {
    std::string name(MetricName(o_.eval.metric));
    std::replace(name.begin(), name.end(), '-', '_');
    return prefix + "_" + name;
  }
  // "accuracy", "roc-auc", "f1-macro": how lines name the --metric.
  std::string MetricText() const {
    return o_.eval.metric == Metric::kAccuracy ? "accuracy" : std::string(MetricName(o_.eval.metric));
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
  // The graph's reads and created fields, and the watch of the other machines
  // (--unreachable-timeout): the handle the Python data plane's scripts use too.
  std::unique_ptr<sampler::JobGraph> graph_;
  base::WireTotals wire_mark_;  // o_.graph.client.wire at the last epoch report (or the end of setup)
  std::shared_ptr<const FeatureCache> feature_cache_;  // --gpu-cache-bytes; null: none
  std::string cache_choice_;                           // how its nodes were chosen, for the log
  std::string row_cache_choice_;                       // the same for the graph's row cache
  int64_t presampled_steps_ = -1;                      // Presampled's last count, of this many steps
  std::vector<int64_t> presampled_;
  std::string presampled_how_;
  std::unique_ptr<DeviceUploader> uploader_;           // batches to device_, without blocking the host
  std::unique_ptr<Communicator> comm_;
  c10::Device device_{c10::kCPU};
  std::shared_ptr<GnnModel> model_;
  // What the model reads first (features, a typed input layer, learnable rows): model_input.h.
  std::unique_ptr<trainer::ModelInput> input_;
  std::unique_ptr<torch::optim::Adam> opt_;
  std::unique_ptr<GradientSynchronizer> sync_;
  SplitSizes sizes_;                     // the task's, over all ranks
  std::vector<at::Tensor> best_params_;  // copy of the best-validation parameters
  std::ofstream metrics_;
  std::unique_ptr<base::EventFileWriter> tensorboard_;  // rank 0, --tensorboard-dir
  TrainResult result_;
};

}  // namespace fanout::trainer

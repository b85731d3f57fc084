// What a training job trains for: the Task interface, and the job services a task uses.
//
// The job (training.cc) owns what every task shares: the graph, the device, the model, the
// optimiser, gradient synchronisation, the epoch loop and its lines, checkpoints, test-time
// model selection and full-graph inference. A task owns what differs: its examples (training
// nodes, or edges and held-out pairs), the model's output width and any module it adds (a link
// scorer), its training batches, the loss of one step, its evaluation metric, and what it adds
// to checkpoints and outputs. Node classification (node_task.cc) and link prediction
// (link_task.cc) are the two; a new task is one new file and one line in task.cc's registry.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "core/partition_config.h"
#include "sampler/dist_graph.h"
#include "sampler/minibatch.h"
#include "trainer/batch_tensors.h"
#include "trainer/device_upload.h"
#include "trainer/dist.h"
#include "trainer/feature_cache.h"
#include "trainer/inference.h"
#include "trainer/metrics.h"
#include "trainer/models.h"
#include "trainer/train_options.h"

namespace fanout::trainer {

using Clock = std::chrono::steady_clock;
// Seconds from `t` to now, for a Breakdown.
inline double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
// `x` with four decimals, as the epoch and test lines print metrics.
std::string Fixed4(double x);

// Where an epoch's time went, summed over its steps (seconds).
struct Breakdown {
  double sample = 0;  // producer time sampling blocks and labels (overlaps training when prefetched)
  double fetch = 0;   // producer time gathering input features
  double wait = 0;    // trainer idle, waiting for the next batch
  double copy = 0;    // mini-batch -> tensors (and to the device)
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

// INTERNAL naming `loader` unless its batch (`got_epoch`, `got_step`) is the one the job's loop
// is at: a loader that skips or repeats a batch is a bug, never a result.
absl::Status CheckBatchOrder(const char* loader, int64_t got_epoch, int64_t got_step, int64_t epoch, int64_t step);

// The job's loader settings for training from (first_epoch, first_step) to the last epoch:
// --num-samplers and friends, resumable and stopping with the trainer (SIGTERM with checkpoints).
sampler::LoaderOptions TrainingLoaderOptions(const TrainOptions& o, int64_t first_epoch, int64_t first_step);

// How many examples each split has, over all ranks (0: none, or not evaluated in this job).
struct SplitSizes {
  int64_t train = 0, val = 0, test = 0;
};

enum class Split { kVal, kTest };

// What the job offers its task. Valid from Task::Prepare on, except comm() and model(), which
// exist from Task::AddModules on.
class JobContext {
 public:
  virtual ~JobContext() = default;
  virtual const TrainOptions& options() const = 0;
  virtual const core::PartitionConfig& config() const = 0;
  virtual sampler::DistGraph& graph() = 0;
  virtual Communicator& comm() = 0;
  virtual GnnModel& model() = 0;
  virtual c10::Device device() const = 0;
  virtual DeviceUploader& uploader() = 0;
  virtual const FeatureCache* feature_cache() const = 0;  // --gpu-cache-bytes; null: none
  // A step's batch as tensors on the device (labels checked against the classes when `labels`),
  // its producer's times added to `t`, and dropout seeded for (epoch, step, rank).
  virtual absl::StatusOr<BatchTensors> StepTensors(const sampler::MiniBatch& mb, int64_t epoch, int64_t step,
                                                   bool labels, Breakdown& t) = 0;
  // The model's input rows for a step's batch: its features, or on a typed graph the typed
  // input layer's rows (projected features, learnable embeddings; typed_input.h).
  virtual absl::StatusOr<at::Tensor> ModelInput(const BatchTensors& bt, const sampler::MiniBatch& mb) = 0;
  // Full-graph inference as this job runs it (batch size, fields, progress).
  virtual InferenceOptions Inference() const = 0;
  virtual bool lead() const = 0;                      // rank 0, which prints
  virtual void Log(const std::string& line) const = 0;  // one line on stdout
};

class Task {
 public:
  virtual ~Task() = default;

  // Checks the options only this task reads, naming the flag (ValidateTrainOptions calls it,
  // before anything connects).
  virtual absl::Status Validate(const TrainOptions&) const { return absl::OkStatus(); }
  // The metric the task always reports and selects by (link prediction: ROC-AUC); none: the
  // --metric the user chose.
  virtual std::optional<Metric> fixed_metric() const { return std::nullopt; }

  // Reads the task's examples (this rank's share) and checks that the graph suits the task;
  // the graph is open, the model not yet built. Returns the model's output width.
  virtual absl::StatusOr<int64_t> Prepare(JobContext& job) = 0;
  virtual SplitSizes sizes() const = 0;
  // How many times each node of the graph is an input of this rank's training batches, steps
  // [0, steps) of epoch 0 (`steps` <= 0: the whole epoch), sampled through job.graph() without
  // their data, exactly as StartTraining's loader will draw them (sampler/cache_choice.h): what
  // --feature-cache-rows presample and --gpu-cache-policy presample rank their rows by. Called
  // after Prepare, before the model and its communicator exist. `*steps_done`: the steps sampled.
  virtual absl::StatusOr<std::vector<int64_t>> PresampleInputs(JobContext& job, int64_t steps,
                                                               int64_t* steps_done) = 0;

  // Registers the task's own modules in the model (before its parameters are broadcast,
  // synchronised and checkpointed with the model's).
  virtual absl::Status AddModules(JobContext&, GnnModel&, const ModelOptions&) { return absl::OkStatus(); }

  // Starts the training batches of epochs [first_epoch, options().epochs), the first one at
  // `first_step` (a job resumed from a checkpoint inside an epoch).
  virtual absl::Status StartTraining(JobContext& job, int64_t first_epoch, int64_t first_step) = 0;
  virtual int64_t steps_per_epoch() const = 0;
  // The last training step is done: let go of the training batches (sampler processes, their
  // batch files, batches made ahead) before the final evaluation, which then has their memory.
  virtual void FinishTraining() = 0;
  // Step `step` of `epoch`: its batch through the model (gradients already zeroed); the loss's
  // backward pass, the all-reduce and the update are the job's.
  virtual absl::StatusOr<StepLoss> Step(JobContext& job, int64_t epoch, int64_t step, Breakdown& t) = 0;

  // The --metric over a whole split, every rank's examples counted once (all ranks call it).
  // `epoch` seeds the sampling of the evaluation's batches.
  virtual absl::StatusOr<double> Evaluate(JobContext& job, Split split, int64_t epoch) = 0;
  // The last evaluation's other figures: a text for the lines ("mrr 0.5, hits@10 0.9 ...") and
  // the metrics file's keys (without their "val_"/"test_" prefix). Empty by default.
  virtual std::string EvaluationDetail() const { return ""; }
  virtual nlohmann::json EvaluationMetrics() const { return nlohmann::json::object(); }
  // Why there is no test figure when sizes().test is 0.
  virtual std::string NoTestReason() const = 0;

  // What checkpoints record of the task, added to their "training" object.
  virtual void DescribeTraining(nlohmann::json&) const {}
  // Whether --save-embeddings also writes predictions.npy (the output is class scores).
  virtual bool WritesPredictions() const = 0;
};

// The registered tasks' names, in the order --help lists them.
std::vector<std::string> TaskNames();
// One line per registered task for --help.
std::string TaskHelp();
// A new task of that name; NOT_FOUND names the registered ones.
absl::StatusOr<std::unique_ptr<Task>> MakeTask(std::string_view name);

// The registered tasks (task.cc's registry calls these).
std::unique_ptr<Task> MakeNodeClassificationTask();
std::unique_ptr<Task> MakeLinkPredictionTask();

}  // namespace fanout::trainer

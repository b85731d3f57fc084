// Node classification (--task node): the seeds are the nodes a mask field marks, split among
// the ranks; a step's loss is the cross-entropy of the seeds' logits against their labels; the
// metric is --metric over the val or test mask's nodes.
#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <cstdio>

#include "base/status.h"
#include "base/strings.h"
#include "core/random.h"
#include "sampler/batch_checksum.h"
#include "sampler/cache_choice.h"
#include "sampler/loader.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/seed_split.h"
#include "trainer/cpu_allocator.h"
#include "trainer/task.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {
namespace {

using base::StrCat;

// All IDs whose mask row is set, split among the ranks with SplitSeeds (every rank then holds a
// disjoint share; together they cover the mask exactly once). A typed mask (TYPE/NAME) marks
// nodes of its type.
absl::StatusOr<std::vector<int64_t>> RankShare(const sampler::DistGraph& g, const std::string& mask, int tpm,
                                               int rank, int64_t* total) {
  ASSIGN_OR_RETURN(std::string bytes, g.PullWholeNodeField(mask));
  std::vector<int64_t> ids = sampler::MaskToIds(bytes);
  ASSIGN_OR_RETURN(core::FieldSchema schema, g.NodeFieldSchema(mask));
  if (!schema.node_type.empty()) {  // row i is type-wise ID i
    ASSIGN_OR_RETURN(const int type, g.node_types().TypeId(schema.node_type));
    for (int64_t& v : ids) v = g.node_types().ToHomogeneous(type, v);
  }
  *total = static_cast<int64_t>(ids.size());
  auto split = sampler::SplitSeeds(ids, g.node_book(), tpm);
  return std::move(split[rank]);
}

// The node type a typed graph's node classification predicts: --target-ntype, or the one type
// with a label field.
absl::StatusOr<int> TargetType(const sampler::DistGraph& g, const TrainOptions& o) {
  const core::TypeMap& types = g.node_types();
  if (!o.target_ntype.empty()) {
    absl::StatusOr<int> t = types.TypeId(o.target_ntype);
    if (!t.ok()) return absl::InvalidArgumentError(StrCat("--target-ntype: ", t.status().message()));
    return *t;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> keys, sampler::TypedFieldKeys(g, o.sampling.label_field, "label"));
  std::vector<int> labelled;
  for (int t = 0; t < types.num_types(); ++t) {
    if (!keys[t].empty()) labelled.push_back(t);
  }
  if (labelled.size() != 1) {
    std::vector<std::string> names;
    for (int t : labelled) names.push_back(types.name(t));
    return absl::InvalidArgumentError(StrCat("node types ", base::StrJoin(names, ", "), " of graph '",
                                             g.config().graph_name, "' have labels: choose one with --target-ntype"));
  }
  return labelled[0];
}

class NodeClassification final : public Task {
 public:
  absl::StatusOr<int64_t> Prepare(JobContext& job) override {
    const TrainOptions& o = job.options();
    const core::PartitionConfig& config = job.config();
    if (config.num_classes <= 0) {
      return absl::FailedPreconditionError(
          StrCat("partition config ", o.part_config, " records no num_classes: the dataset has no labels"));
    }
    const int rank = o.dist.rank, tpm = o.trainers_per_machine;
    // A typed graph's masks are its target type's (TYPE/train_mask ...).
    std::string prefix;
    if (config.typed()) {
      ASSIGN_OR_RETURN(const int target, TargetType(job.graph(), o));
      prefix = job.graph().node_types().name(target) + "/";
      if (rank == 0) {  // (before the group exists: job.lead() needs it)
        job.Log(StrCat("fanout-train: node classification of node type ", job.graph().node_types().name(target)));
      }
    }
    test_mask_ = prefix + o.test_mask;
    ASSIGN_OR_RETURN(train_, RankShare(job.graph(), prefix + o.train_mask, tpm, rank, &sizes_.train));
    if (o.eval.every > 0) {
      ASSIGN_OR_RETURN(val_, RankShare(job.graph(), prefix + o.val_mask, tpm, rank, &sizes_.val));
    }
    if (o.eval.test) {
      ASSIGN_OR_RETURN(test_, RankShare(job.graph(), test_mask_, tpm, rank, &sizes_.test));
    }
    if (sizes_.train < o.dist.world_size) {
      return absl::FailedPreconditionError(StrCat("field '", prefix + o.train_mask, "' marks ", sizes_.train,
                                                  " training nodes, fewer than the ", o.dist.world_size,
                                                  " trainers"));
    }
    return config.num_classes;
  }

  SplitSizes sizes() const override { return sizes_; }

  absl::StatusOr<std::vector<int64_t>> PresampleInputs(JobContext& job, int64_t steps, int64_t* steps_done) override {
    const sampler::SamplerOptions so = TrainingSampler(job);
    const int64_t epoch_steps = sampler::StepsPerEpoch(so, static_cast<int64_t>(train_.size()));
    *steps_done = steps > 0 ? std::min(steps, epoch_steps) : epoch_steps;
    return sampler::PresampleSeeds(&job.graph(), so, train_, *steps_done);
  }

  absl::Status StartTraining(JobContext& job, int64_t first_epoch, int64_t first_step) override {
    ASSIGN_OR_RETURN(loader_, sampler::MakeBatchLoader(&job.graph(), job.options().graph, TrainingSampler(job), train_,
                                                       TrainingLoaderOptions(job.options(), first_epoch, first_step)));
    return absl::OkStatus();
  }

  int64_t steps_per_epoch() const override { return loader_->steps_per_epoch(); }
  void FinishTraining() override { loader_.reset(); }

  absl::StatusOr<StepLoss> Step(JobContext& job, int64_t epoch, int64_t step, Breakdown& t) override {
    auto t0 = Clock::now();
    ASSIGN_OR_RETURN(sampler::MiniBatch mb, loader_->Next());
    RETURN_IF_ERROR(CheckBatchOrder("loader", mb.epoch, mb.step, epoch, step));
    t.wait += Since(t0);
    if (job.options().output.print_batch_checksums) {
      std::printf("rank %d batch %lld %lld crc %u\n", job.options().dist.rank, static_cast<long long>(epoch),
                  static_cast<long long>(step), sampler::BatchChecksum(mb));
    }
    ASSIGN_OR_RETURN(BatchTensors bt, job.StepTensors(mb, epoch, step, /*labels=*/true, t));
    t0 = Clock::now();
    StepLoss s;
    ASSIGN_OR_RETURN(const at::Tensor x, job.ModelInput(bt, mb));
    RETURN_IF_ERROR(CatchTorch("forward", [&] {
      const at::Tensor logits = job.model().Forward(bt.blocks, x);
      s.loss = torch::nn::functional::cross_entropy(logits, bt.labels);
      s.correct = logits.argmax(1).eq(bt.labels).sum();
    }));
    s.n = static_cast<double>(mb.seeds.size());
    t.forward += Since(t0);
    return s;
  }

  absl::StatusOr<double> Evaluate(JobContext& job, Split split, int64_t epoch) override {
    const TrainOptions& o = job.options();
    const std::vector<int64_t>& ids = split == Split::kVal ? val_ : test_;
    const char* what = split == Split::kVal ? "validation" : "test";
    GnnModel& model = job.model();
    MetricAccumulator metric(o.eval.metric, model.options().num_classes);
    if (!ids.empty()) {
      sampler::SamplerOptions so = o.sampling;
      if (!o.eval.fanouts.empty()) {
        so.fanouts = o.eval.fanouts;  // for every relation
        so.relation_fanouts.clear();
      }
      so.batch_size = o.eval.batch_size;
      so.shuffle = false;
      so.seed = core::SplitMix64(o.sampling.seed + 0x5eed);
      so.rank = job.comm().rank();
      if (job.feature_cache() != nullptr) so.cached_nodes = job.feature_cache()->nodes();
      sampler::LoaderOptions lo;
      lo.num_threads = std::max(1, o.loader.num_threads);
      // Evaluation's batches (--eval-batch-size, 4096 seeds) are several training batches each
      // and live in this process's heap: their blocks are made one ahead, their features fetched
      // when taken, so that one batch's features are in memory at a time. Made ahead with
      // features, they set the job's memory peak (the products-scale comparison,
      // docs/benchmarks.md: machine 0's peak 4.4 GB, 2.6 GB while training).
      lo.prefetch = 1;
      lo.features_ahead = false;
      lo.first_epoch = epoch;
      ASSIGN_OR_RETURN(auto loader, sampler::MakeBatchLoader(&job.graph(), o.graph, so, ids, lo));
      model.eval();
      torch::NoGradGuard no_grad;
      ToTensorsOptions to;
      to.device = job.device();
      to.num_classes = model.options().num_classes;
      to.feature_cache = job.feature_cache();
      to.uploader = &job.uploader();
      base::ProgressMeter meter("fanout-train", what, loader->steps_per_epoch(), "batches",
                                job.lead() ? o.output.progress : base::ProgressMode::kOff);
      for (int64_t step = 0; step < loader->steps_per_epoch(); ++step) {
        // The tensor blocks the last batch's forward kept would sit beside this batch's input
        // rows, which arrive next, and set the job's peak (products scale, machine 0: 0.2 GB of
        // 2.6; docs/benchmarks.md): handed back first. Each batch is a different shape anyway, and
        // evaluation took no longer for it.
        ReleaseCachedCpuBlocks();
        ASSIGN_OR_RETURN(sampler::MiniBatch mb, loader->Next());
        ASSIGN_OR_RETURN(BatchTensors bt, ToTensors(mb, to));
        ASSIGN_OR_RETURN(at::Tensor x, job.ModelInput(bt, mb));
        // The model gets the only reference to the input rows (the batch and its tensors let go
        // of theirs), so that it can hand them back after its input layer (GnnModel::Infer).
        mb.features = sampler::Rows();
        bt.features = at::Tensor();
        RETURN_IF_ERROR(CatchTorch(StrCat(what, " forward"),
                                   [&] { metric.Add(model.Infer(bt.blocks, std::move(x)), bt.labels); }));
        meter.Set(step + 1);
      }
      model.train();
    }
    return metric.Reduce(job.comm());
  }

  std::string NoTestReason() const override { return StrCat("field '", test_mask_, "' marks no nodes"); }
  bool WritesPredictions() const override { return true; }

 private:
  // The training batches' sampler: this rank's share of every epoch's seeds, the device cache's
  // nodes left out of their features.
  sampler::SamplerOptions TrainingSampler(const JobContext& job) const {
    const TrainOptions& o = job.options();
    sampler::SamplerOptions so = o.sampling;
    so.rank = o.dist.rank;
    so.seeds_per_epoch = sampler::SeedsPerEpoch(sizes_.train, o.dist.world_size);
    if (job.feature_cache() != nullptr) so.cached_nodes = job.feature_cache()->nodes();
    return so;
  }

  std::vector<int64_t> train_, val_, test_;
  SplitSizes sizes_;
  std::string test_mask_;
  std::unique_ptr<sampler::BatchLoader> loader_;
};

}  // namespace

std::unique_ptr<Task> MakeNodeClassificationTask() { return std::make_unique<NodeClassification>(); }

}  // namespace fanout::trainer

// ValidateTrainOptions: every option fanout-train takes by flag is checked before anything
// connects, and the error names the flag and what is valid. (The flags' parsing and the checks
// in train_main.cc run through the real binary in train_cli_test's BadFlags case.)
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "trainer/training.h"

namespace fanout::trainer {
namespace {

struct Case {
  std::string what;  // the flag as the user would give it
  std::function<void(TrainOptions&)> set;
  std::string expected;  // in the message
};

TEST(TrainOptionsTest, EveryBadValueIsRefusedNamingItsFlag) {
  const std::vector<Case> cases = {
      {"--lr -1", [](TrainOptions& o) { o.lr = -1; }, "--lr must be a number > 0, got -1"},
      {"--lr 0", [](TrainOptions& o) { o.lr = 0; }, "--lr must be a number > 0"},
      {"--weight-decay -1", [](TrainOptions& o) { o.weight_decay = -1; }, "--weight-decay must be a number >= 0, got -1"},
      {"--prefetch 0", [](TrainOptions& o) { o.loader.prefetch = 0; }, "--prefetch must be >= 1"},
      {"--eval-batch-size 0", [](TrainOptions& o) { o.eval.batch_size = 0; }, "--eval-batch-size must be >= 1, got 0"},
      {"--batch-size 0", [](TrainOptions& o) { o.sampling.batch_size = 0; }, "--batch-size must be >= 1, got 0"},
      {"--dropout 1", [](TrainOptions& o) { o.model.dropout = 1; }, "--dropout must be in [0, 1)"},
      {"--dropout -0.1", [](TrainOptions& o) { o.model.dropout = -0.1; }, "--dropout must be in [0, 1)"},
      {"--hidden 0", [](TrainOptions& o) { o.model.hidden = 0; }, "--hidden must be >= 1"},
      {"--heads 0", [](TrainOptions& o) { o.model.heads = 0; }, "--heads must be >= 1"},
      {"--heads 8,1,1", [](TrainOptions& o) { o.model.layer_heads = {8, 1, 1}; },
       "--heads has 3 values for 2 layers (--fanouts)"},
      {"--heads 4,0", [](TrainOptions& o) { o.model.layer_heads = {4, 0}; }, "--heads must be >= 1 in every layer, got 4,0"},
      {"--epochs 0", [](TrainOptions& o) { o.epochs = 0; }, "--epochs must be >= 1"},
      {"--fanouts 5,0", [](TrainOptions& o) { o.sampling.fanouts = {5, 0}; }, "--fanouts: layer 1 has fanout 0"},
      {"--fanouts ''", [](TrainOptions& o) { o.sampling.fanouts = {}; }, "--fanouts: at least one layer is needed"},
      {"--eval-fanouts 5,-2", [](TrainOptions& o) { o.eval.fanouts = {5, -2}; }, "--eval-fanouts: layer 1 has fanout -2"},
      {"--eval-fanouts 5", [](TrainOptions& o) { o.eval.fanouts = {5}; }, "--eval-fanouts has 1 layers, --fanouts 2"},
      {"--eval-every -1", [](TrainOptions& o) { o.eval.every = -1; }, "--eval-every must be >= 0"},
      {"--log-every -1", [](TrainOptions& o) { o.output.log_every = -1; }, "--log-every must be >= 0"},
      {"--num-samplers -1", [](TrainOptions& o) { o.loader.num_samplers = -1; }, "--num-samplers must be >= 0"},
      {"--sampler-threads 0", [](TrainOptions& o) { o.loader.num_threads = 0; }, "--sampler-threads must be >= 1"},
      {"--num-threads 0", [](TrainOptions& o) { o.intra_op_threads = 0; }, "--num-threads must be >= 1"},
      {"--dist-backend nccl", [](TrainOptions& o) { o.dist_backend = CommBackend::kNccl; },
       "--dist-backend nccl needs a GPU (--device cuda), not --device cpu"},
      {"--gpu-cache-bytes -1", [](TrainOptions& o) { o.device_cache.bytes = -1; }, "--gpu-cache-bytes must be >= 0"},
      {"--gpu-cache-presample-steps -1", [](TrainOptions& o) { o.device_cache.presample_steps = -1; },
       "--gpu-cache-presample-steps must be >= 0"},
      {"--task link --metric acc", [](TrainOptions& o) { o.task = "link"; },
       "--task link reports roc-auc and selects the model by it"},
      {"--task link --negatives 0",
       [](TrainOptions& o) {
         o.task = "link";
         o.eval.metric = Metric::kRocAuc;
         o.link.draw.negatives = 0;
       },
       "--negatives must be in [1, 1000], got 0"},
      {"--task link --embed-dim -1",
       [](TrainOptions& o) {
         o.task = "link";
         o.eval.metric = Metric::kRocAuc;
         o.link.embed_dim = -1;
       },
       "--embed-dim must be >= 0"},
      {"--task graph", [](TrainOptions& o) { o.task = "graph"; }, "no training task 'graph' (the tasks are: node, link)"},
      {"--num-trainers 0", [](TrainOptions& o) { o.trainers_per_machine = 0; }, "--num-trainers must be >= 1"},
      {"--edge-feature weight", [](TrainOptions& o) { o.sampling.edge.feature_field = "weight"; },
       "--edge-feature: the built-in sage model does not read edge features"},
      {"--resume", [](TrainOptions& o) { o.checkpoint.resume = true; }, "--resume needs --checkpoint-dir"},
      {"--resume --load-model",
       [](TrainOptions& o) {
         o.checkpoint.resume = true;
         o.checkpoint.dir = "ckpt";
         o.checkpoint.load_model = "best.pt";
       },
       "--resume and --load-model both say where to start"},
  };
  ASSERT_TRUE(ValidateTrainOptions(TrainOptions{}).ok()) << ValidateTrainOptions(TrainOptions{});
  for (const Case& c : cases) {
    TrainOptions o;
    c.set(o);
    const absl::Status s = ValidateTrainOptions(o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.what << ": " << s;
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << c.what << ": " << s;
  }
  // --epochs 0 is allowed with --load-model (evaluate or infer only).
  TrainOptions infer;
  infer.epochs = 0;
  infer.checkpoint.load_model = "best.pt";
  EXPECT_TRUE(ValidateTrainOptions(infer).ok()) << ValidateTrainOptions(infer);
}

}  // namespace
}  // namespace fanout::trainer

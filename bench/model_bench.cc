// Model compute per training step on real sampled mini-batches (docs/benchmarks.md), side by side
// in one run:
//   GEMM rate   what this LibTorch + BLAS reaches at the model's own matrix shapes (and a square
//               1024^3 product), on the intra-op threads given;
//   per model   forward + loss + backward of sage / gcn / gat in training mode, with the fused
//               message-passing kernels and with the ATen composition they replaced
//               (ModelOptions::fused), alternating batch by batch;
//   FLOP floor  for sage, the step's matrix-product FLOPs at the measured GEMM rate: what a step
//               would cost if nothing but its GEMMs ran.
// Batches come from an in-process MiniBatchSampler over a 1-partition graph's files.
#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>

#include "base/cli.h"
#include "base/malloc_tuning.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/partition_config.h"
#include "sampler/dist_graph.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/seed_split.h"
#include "trainer/batch_tensors.h"
#include "trainer/cpu_allocator.h"
#include "trainer/models.h"
#include "trainer/torch_util.h"

namespace {

using namespace fanout;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// GFLOP/s of x [m, k] times w [n, k]^T over `reps` calls after one warm-up call, into a
// preallocated output (the BLAS's own rate), or into a fresh one each call as at::linear does
// (what a model sees: a large output is freshly mapped memory, page-faulted in as it is written).
double GemmRate(int64_t m, int64_t k, int64_t n, int reps, bool fresh_output = false) {
  const at::Tensor x = at::randn({m, k}), w = at::randn({n, k});
  at::Tensor out = at::empty({m, n});
  auto once = [&] {
    if (fresh_output) {
      at::linear(x, w);
    } else {
      at::mm_out(out, x, w.t());
    }
  };
  once();
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) once();
  return 2.0 * m * k * n * reps / Since(t0) / 1e9;
}

// Matrix-product FLOPs of one training step of trainer/models.cc's GraphSAGE on `blocks`:
// forward (fc_self on destinations; fc_neigh on the sources or on the destinations' mean, as
// ProjectBeforeAggregating picks), then
// backward's weight gradients (same FLOPs) and input gradients (same again, except for the input
// layer, whose features need none).
double SageStepFlops(const std::vector<trainer::BlockTensors>& blocks, int64_t in_dim, int64_t hidden,
                     int64_t classes) {
  double total = 0;
  for (size_t l = 0; l < blocks.size(); ++l) {
    const double in = l == 0 ? in_dim : hidden, out = l + 1 == blocks.size() ? classes : hidden;
    const double d = blocks[l].num_dst, s = blocks[l].num_src;
    const bool project_first = trainer::ProjectBeforeAggregating(blocks[l], in, out);
    const double forward = 2 * d * in * out + 2 * (project_first ? s : d) * in * out;
    total += forward * (l == 0 ? 2 : 3);
  }
  return total;
}

struct StepTimes {
  double forward = 0, backward = 0;
};

StepTimes Step(trainer::GnnModel& model, const trainer::BatchTensors& bt) {
  StepTimes t;
  model.zero_grad();
  auto t0 = Clock::now();
  at::Tensor loss = torch::nn::functional::cross_entropy(model.Forward(bt.blocks, bt.features), bt.labels);
  t.forward = Since(t0);
  t0 = Clock::now();
  loss.backward();
  t.backward = Since(t0);
  return t;
}

int Run(int argc, char** argv) {
  base::KeepLargeAllocations();
  std::string part_config, models = "sage,gcn,gat", scripted, scripted_baseline = "sage";
  sampler::SamplerOptions so;
  int64_t batches = 6, hidden = 256, heads = 4;
  int threads = 1;
  base::ArgParser args("model_bench", "--part-config FILE [flags]");
  args.AddString("part-config", &part_config, "partition config of a graph cut into 1 partition");
  args.AddIntList("fanouts", &so.fanouts, "per layer, input layer first");
  args.AddInt("batch-size", &so.batch_size, "seeds per batch");
  args.AddInt("batches", &batches, "batches measured per model and path (after one warm-up)");
  args.AddInt("hidden", &hidden, "hidden width");
  args.AddInt("heads", &heads, "gat heads");
  args.AddInt("threads", &threads, "LibTorch intra-op threads");
  args.AddString("models", &models, "comma list of sage,gcn,gat");
  args.AddString("scripted", &scripted, "also time this TorchScript model against the built-in --scripted-baseline");
  args.AddString("scripted-baseline", &scripted_baseline, "the built-in model the scripted one implements");
  bool composition = true;
  args.AddBool("composition", &composition, "also time the ATen composition (--no-composition: fused only, for profiling)");
  bool caching_allocator = true;
  args.AddBool("caching-allocator", &caching_allocator, "LibTorch tensors from trainer/cpu_allocator.h, as fanout-train");
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  if (caching_allocator) trainer::InstallCachingCpuAllocator();
  if (absl::Status s = trainer::SetIntraOpThreads(threads); !s.ok()) return args.Fail(s);

  auto cfg = core::LoadPartitionConfig(part_config);
  if (!cfg.ok()) return args.Fail(cfg.status());
  if (cfg->num_parts != 1) return args.Fail(absl::InvalidArgumentError("--part-config must have 1 partition"));
  auto g = sampler::DistGraph::Open(*cfg, {.machine_id = 0});
  if (!g.ok()) return args.Fail(g.status());
  auto mask = (*g)->PullWholeNodeField("train_mask");
  if (!mask.ok()) return args.Fail(mask.status());
  sampler::MiniBatchSampler sampler(g->get(), so, sampler::MaskToIds(*mask));
  std::vector<trainer::BatchTensors> batch;
  std::vector<sampler::MiniBatch> keep;  // the tensors borrow the batches' feature memory
  double edges = 0;
  for (int64_t i = 0; i <= batches; ++i) {
    auto mb = sampler.Sample(0, i);
    if (!mb.ok()) return args.Fail(mb.status());
    auto bt = trainer::ToTensors(*mb, {.num_classes = cfg->num_classes});
    if (!bt.ok()) return args.Fail(bt.status());
    for (const auto& b : bt->blocks) edges += i > 0 ? b.num_edges() : 0;
    batch.push_back(std::move(*bt));
    keep.push_back(std::move(*mb));
  }
  const int64_t in_dim = batch[0].features.size(1);
  std::printf("graph %s: %lld nodes; fanouts %s, batch %lld, %lld batches (after 1 warm-up); %d intra-op thread(s)\n",
              cfg->graph_name.c_str(), static_cast<long long>(cfg->num_nodes),
              base::StrJoin(so.fanouts, ",").c_str(), static_cast<long long>(so.batch_size),
              static_cast<long long>(batches), threads);
  for (size_t l = 0; l < batch[1].blocks.size(); ++l) {
    const auto& b = batch[1].blocks[l];
    std::printf("  block %zu: %lld src, %lld dst, %lld edges\n", l, static_cast<long long>(b.num_src),
                static_cast<long long>(b.num_dst), static_cast<long long>(b.num_edges()));
  }

  // The GEMM rate at sage's shapes: layer 0's two products over its destinations, layer 1's.
  const auto& b0 = batch[1].blocks[0];
  const double square = GemmRate(1024, 1024, 1024, 5);
  const double layer0 = GemmRate(b0.num_dst, in_dim, hidden, 5);
  const double layer0_cat = GemmRate(b0.num_dst, 2 * in_dim, hidden, 5);
  const double layer0_fresh = GemmRate(b0.num_dst, in_dim, hidden, 5, /*fresh_output=*/true);
  const double layer1 = GemmRate(batch[1].blocks.size() > 1 ? batch[1].blocks[1].num_dst : 1024, hidden, hidden, 5);
  std::printf("GEMM rate: %.1f GFLOP/s square 1024^3; %.1f at [%lld x %lld] x [%lld x %lld]; %.1f at [%lld x %lld] x [%lld x %lld]\n",
              square, layer0, static_cast<long long>(b0.num_dst), static_cast<long long>(in_dim),
              static_cast<long long>(in_dim), static_cast<long long>(hidden), layer1,
              static_cast<long long>(batch[1].blocks.size() > 1 ? batch[1].blocks[1].num_dst : 1024),
              static_cast<long long>(hidden), static_cast<long long>(hidden), static_cast<long long>(hidden));

  std::printf("           %.1f at K = %lld (self and neighbour products as one); %.1f into a fresh output each call\n",
              layer0_cat, static_cast<long long>(2 * in_dim), layer0_fresh);
  std::printf("%-6s %-12s %12s %12s %12s\n", "model", "path", "forward ms", "backward ms", "step ms");
  auto options_of = [&](trainer::ModelKind kind) {
    trainer::ModelOptions mo;
    mo.model = kind;
    mo.in_dim = in_dim;
    mo.hidden = hidden;
    mo.heads = heads;
    mo.num_classes = cfg->num_classes;
    mo.num_layers = static_cast<int64_t>(so.fanouts.size());
    return mo;
  };
  std::istringstream model_list(models);
  for (std::string name; std::getline(model_list, name, ',');) {
    auto kind = trainer::ParseModelKind(name);
    if (!kind.ok()) return args.Fail(kind.status());
    trainer::ModelOptions mo = options_of(*kind);
    StepTimes sum[2];
    std::shared_ptr<trainer::GnnModel> model[2];
    for (int fused = composition ? 0 : 1; fused < 2; ++fused) {
      mo.fused = fused == 1;
      auto m = trainer::MakeModel(mo, 1);
      if (!m.ok()) return args.Fail(m.status());
      model[fused] = *m;
      model[fused]->train();
      Step(*model[fused], batch[0]);  // warm-up
    }
    for (int64_t i = 1; i <= batches; ++i) {
      for (int fused = 1; fused >= (composition ? 0 : 1); --fused) {  // alternate: noise hits both alike
        trainer::SeedTorch(static_cast<uint64_t>(i));
        const StepTimes t = Step(*model[fused], batch[i]);
        sum[fused].forward += t.forward;
        sum[fused].backward += t.backward;
      }
    }
    for (int fused = 1; fused >= 0; --fused) {
      const double f = 1e3 * sum[fused].forward / batches, b = 1e3 * sum[fused].backward / batches;
      std::printf("%-6s %-12s %12.1f %12.1f %12.1f\n", name.c_str(), fused ? "fused" : "composition", f, b, f + b);
    }
    const double fused_ms = 1e3 * (sum[1].forward + sum[1].backward) / batches;
    const double comp_ms = 1e3 * (sum[0].forward + sum[0].backward) / batches;
    std::printf("%-6s composition / fused = %.2fx\n", name.c_str(), comp_ms / fused_ms);
    if (*kind == trainer::ModelKind::kSage) {
      double flops = 0;
      for (int64_t i = 1; i <= batches; ++i) flops += SageStepFlops(batch[i].blocks, in_dim, hidden, cfg->num_classes);
      flops /= batches;
      // Nearly all of sage's FLOPs are layer 0's products: its measured rate sets the floor.
      const double floor_ms = 1e3 * flops / (layer0 * 1e9);
      std::printf("sage   GEMM FLOPs per step %.2f G; at %.1f GFLOP/s that is %.1f ms: the fused step runs at %.0f%% of it\n",
                  flops / 1e9, layer0, floor_ms, 100 * floor_ms / fused_ms);
    }
  }
  if (!scripted.empty()) {
    // The scripted model against the built-in one it implements, alternated step by step.
    auto kind = trainer::ParseModelKind(scripted_baseline);
    if (!kind.ok()) return args.Fail(kind.status());
    trainer::ModelOptions mo = options_of(*kind);
    std::shared_ptr<trainer::GnnModel> model[2];
    for (int s = 0; s < 2; ++s) {
      trainer::ModelOptions o = mo;
      if (s == 1) {
        o.model = trainer::ModelKind::kScripted;
        o.script_path = scripted;
      }
      auto m = trainer::MakeModel(o, 1);
      if (!m.ok()) return args.Fail(m.status());
      model[s] = *m;
      model[s]->train();
      Step(*model[s], batch[0]);  // warm-up
    }
    StepTimes sum[2];
    for (int64_t i = 1; i <= batches; ++i) {
      for (int s = 0; s < 2; ++s) {
        trainer::SeedTorch(static_cast<uint64_t>(i));
        const StepTimes t = Step(*model[s], batch[i]);
        sum[s].forward += t.forward;
        sum[s].backward += t.backward;
      }
    }
    for (int s = 0; s < 2; ++s) {
      const double f = 1e3 * sum[s].forward / batches, b = 1e3 * sum[s].backward / batches;
      std::printf("%-6s %-12s %12.1f %12.1f %12.1f\n", scripted_baseline.c_str(), s ? "scripted" : "built-in", f, b, f + b);
    }
    std::printf("%s scripted / built-in = %.2fx (%s)\n", scripted_baseline.c_str(),
                (sum[1].forward + sum[1].backward) / (sum[0].forward + sum[0].backward), scripted.c_str());
  }
  std::printf("sampled edges per batch: %.0f\n", edges / batches);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }

// Model compute per training step on real sampled mini-batches (docs/benchmarks.md), side by side
// in one run:
//   GEMM rate   what this LibTorch + BLAS reaches at the model's own matrix shapes (and a square
//               1024^3 product), on the intra-op threads given;
//   per model   forward + loss + backward of sage / gcn / gat in training mode, with the fused
//               message-passing kernels and with the ATen composition they replaced
//               (ModelOptions::fused), alternating batch by batch;
//   FLOP floor  for sage, the step's matrix-product FLOPs at the measured GEMM rate: what a step
//               would cost if nothing but its GEMMs ran.
//   kernels     the input block's fused mean aggregation, forward and backward, on each
//               instruction set the kernels are built for that this CPU has (kernels/kernels.h),
//               against two memory floors: reading the same bytes in order, and gathering the
//               same source rows into a small buffer (--kernels, on by default).
// Batches come from an in-process MiniBatchSampler over a 1-partition graph's files.
#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

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
#include "kernels/kernels.h"
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

// The benchmark's settings, from its flags.
struct Bench {
  std::string part_config, models = "sage,gcn,gat", scripted, scripted_baseline = "sage";
  sampler::SamplerOptions so;
  int64_t batches = 6, hidden = 256, heads = 4;
  int threads = 1;
  bool composition = true, caching_allocator = true, kernels = true;
};

// Batch 0 (the warm-up) and batches 1..b.batches of one epoch, as tensors.
struct Batches {
  std::vector<trainer::BatchTensors> tensors;
  std::vector<sampler::MiniBatch> keep;  // the tensors borrow the batches' feature memory
  double edges = 0;                      // sampled edges over the measured batches
  int64_t in_dim = 0, num_classes = 0;
};

absl::StatusOr<Batches> SampleBatches(const Bench& b, const core::PartitionConfig& cfg, sampler::DistGraph* g) {
  ASSIGN_OR_RETURN(const std::string mask, g->PullWholeNodeField("train_mask"));
  sampler::MiniBatchSampler sampler(g, b.so, sampler::MaskToIds(mask));
  Batches out;
  out.num_classes = cfg.num_classes;
  for (int64_t i = 0; i <= b.batches; ++i) {
    ASSIGN_OR_RETURN(sampler::MiniBatch mb, sampler.Sample(0, i));
    ASSIGN_OR_RETURN(trainer::BatchTensors bt, trainer::ToTensors(mb, {.num_classes = cfg.num_classes}));
    for (const auto& block : bt.blocks) out.edges += i > 0 ? block.num_edges() : 0;
    out.tensors.push_back(std::move(bt));
    out.keep.push_back(std::move(mb));
  }
  out.in_dim = out.tensors[0].features.size(1);
  return out;
}

// The GEMM rate at sage's shapes: layer 0's two products over its destinations, layer 1's.
// Returns layer 0's rate (GFLOP/s), the floor of sage's step.
double PrintGemmRates(const Batches& bs, int64_t hidden) {
  const auto& blocks = bs.tensors[1].blocks;
  const auto& b0 = blocks[0];
  const int64_t in_dim = bs.in_dim, dst1 = blocks.size() > 1 ? blocks[1].num_dst : 1024;
  const double square = GemmRate(1024, 1024, 1024, 5);
  const double layer0 = GemmRate(b0.num_dst, in_dim, hidden, 5);
  const double layer0_cat = GemmRate(b0.num_dst, 2 * in_dim, hidden, 5);
  const double layer0_fresh = GemmRate(b0.num_dst, in_dim, hidden, 5, /*fresh_output=*/true);
  const double layer1 = GemmRate(dst1, hidden, hidden, 5);
  std::printf("GEMM rate: %.1f GFLOP/s square 1024^3; %.1f at [%lld x %lld] x [%lld x %lld]; %.1f at [%lld x %lld] x [%lld x %lld]\n",
              square, layer0, static_cast<long long>(b0.num_dst), static_cast<long long>(in_dim),
              static_cast<long long>(in_dim), static_cast<long long>(hidden), layer1, static_cast<long long>(dst1),
              static_cast<long long>(hidden), static_cast<long long>(hidden), static_cast<long long>(hidden));
  std::printf("           %.1f at K = %lld (self and neighbour products as one); %.1f into a fresh output each call\n",
              layer0_cat, static_cast<long long>(2 * in_dim), layer0_fresh);
  return layer0;
}

// Two models stepped on the same batches, alternated step by step so that noise hits both alike
// (model[1] first); a null model is skipped. Returns each one's summed times.
std::array<StepTimes, 2> Alternate(const std::array<std::shared_ptr<trainer::GnnModel>, 2>& model, const Batches& bs) {
  for (const auto& m : model) {
    if (m == nullptr) continue;
    m->train();
    Step(*m, bs.tensors[0]);  // warm-up
  }
  std::array<StepTimes, 2> sum;
  for (size_t i = 1; i < bs.tensors.size(); ++i) {
    for (int k = 1; k >= 0; --k) {
      if (model[k] == nullptr) continue;
      trainer::SeedTorch(static_cast<uint64_t>(i));
      const StepTimes t = Step(*model[k], bs.tensors[i]);
      sum[k].forward += t.forward;
      sum[k].backward += t.backward;
    }
  }
  return sum;
}

trainer::ModelOptions OptionsOf(const Bench& b, const Batches& bs, trainer::ModelKind kind) {
  trainer::ModelOptions mo;
  mo.model = kind;
  mo.in_dim = bs.in_dim;
  mo.hidden = b.hidden;
  mo.heads = b.heads;
  mo.num_classes = bs.num_classes;
  mo.num_layers = static_cast<int64_t>(b.so.fanouts.size());
  return mo;
}

// Model `name`'s fused kernels against its ATen composition (with --composition).
absl::Status TimeModel(const Bench& b, const Batches& bs, const std::string& name, double layer0_rate) {
  ASSIGN_OR_RETURN(const trainer::ModelKind kind, trainer::ParseModelKind(name));
  trainer::ModelOptions mo = OptionsOf(b, bs, kind);
  std::array<std::shared_ptr<trainer::GnnModel>, 2> model;
  for (int fused = b.composition ? 0 : 1; fused < 2; ++fused) {
    mo.fused = fused == 1;
    ASSIGN_OR_RETURN(model[fused], trainer::MakeModel(mo, 1));
  }
  const std::array<StepTimes, 2> sum = Alternate(model, bs);
  for (int fused = 1; fused >= (b.composition ? 0 : 1); --fused) {
    const double f = 1e3 * sum[fused].forward / b.batches, bw = 1e3 * sum[fused].backward / b.batches;
    std::printf("%-6s %-12s %12.1f %12.1f %12.1f\n", name.c_str(), fused ? "fused" : "composition", f, bw, f + bw);
  }
  const double fused_ms = 1e3 * (sum[1].forward + sum[1].backward) / b.batches;
  if (b.composition) {
    const double comp_ms = 1e3 * (sum[0].forward + sum[0].backward) / b.batches;
    std::printf("%-6s composition / fused = %.2fx\n", name.c_str(), comp_ms / fused_ms);
  }
  if (kind == trainer::ModelKind::kSage) {
    double flops = 0;
    for (size_t i = 1; i < bs.tensors.size(); ++i) {
      flops += SageStepFlops(bs.tensors[i].blocks, bs.in_dim, b.hidden, bs.num_classes);
    }
    flops /= b.batches;
    // Nearly all of sage's FLOPs are layer 0's products: its measured rate sets the floor.
    const double floor_ms = 1e3 * flops / (layer0_rate * 1e9);
    std::printf("sage   GEMM FLOPs per step %.2f G; at %.1f GFLOP/s that is %.1f ms: the fused step runs at %.0f%% of it\n",
                flops / 1e9, layer0_rate, floor_ms, 100 * floor_ms / fused_ms);
  }
  return absl::OkStatus();
}

// The scripted model against the built-in one it implements.
absl::Status TimeScripted(const Bench& b, const Batches& bs) {
  ASSIGN_OR_RETURN(const trainer::ModelKind kind, trainer::ParseModelKind(b.scripted_baseline));
  std::array<std::shared_ptr<trainer::GnnModel>, 2> model;
  for (int s = 0; s < 2; ++s) {
    trainer::ModelOptions o = OptionsOf(b, bs, kind);
    if (s == 1) {
      o.model = trainer::ModelKind::kScripted;
      o.script_path = b.scripted;
    }
    ASSIGN_OR_RETURN(model[s], trainer::MakeModel(o, 1));
  }
  const std::array<StepTimes, 2> sum = Alternate(model, bs);
  for (int s = 0; s < 2; ++s) {
    const double f = 1e3 * sum[s].forward / b.batches, bw = 1e3 * sum[s].backward / b.batches;
    std::printf("%-6s %-12s %12.1f %12.1f %12.1f\n", b.scripted_baseline.c_str(), s ? "scripted" : "built-in", f, bw,
                f + bw);
  }
  std::printf("%s scripted / built-in = %.2fx (%s)\n", b.scripted_baseline.c_str(),
              (sum[1].forward + sum[1].backward) / (sum[0].forward + sum[0].backward), b.scripted.c_str());
  return absl::OkStatus();
}

// Best-of-`reps` seconds of fn().
template <typename Fn>
double BestOf(int reps, Fn fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, Since(t0));
  }
  return best;
}

// The input block's mean aggregation on every instruction set this CPU has, against the memory
// floors of the bytes it must read: its edges' source rows (edges x width floats).
void TimeKernels(const Batches& bs, int reps) {
  namespace k = kernels;
  const trainer::BlockTensors& b0 = bs.tensors[1].blocks[0];
  const at::Tensor x = bs.tensors[1].features.to(at::kFloat).contiguous();
  k::Spmm op;
  op.graph.indptr = b0.indptr.data_ptr<int64_t>();
  op.graph.indices = b0.src.data_ptr<int64_t>();
  op.graph.num_dst = b0.num_dst;
  op.graph.num_src = b0.num_src;
  op.width = x.size(1);
  op.mean = true;
  const int64_t edges = b0.num_edges(), width = op.width;
  const double bytes = static_cast<double>(edges) * width * sizeof(float);
  std::vector<float> out(static_cast<size_t>(b0.num_dst * width)), grad_x(static_cast<size_t>(b0.num_src * width));
  const float* xp = x.data_ptr<float>();
  // Floors: the same bytes read in order (one pass over an edges x width buffer), and the edges'
  // source rows copied into a 64-row ring, prefetched 8 edges ahead (the gather alone, no sums).
  std::vector<float> seq(static_cast<size_t>(edges * width), 1.0f), ring(static_cast<size_t>(64 * width));
  volatile float sink = 0;
  const double seq_s = BestOf(reps, [&] {
    float acc = 0;
    for (size_t i = 0; i < seq.size(); i += 16) acc += seq[i];  // one load per 64-byte line
    sink = acc;
  });
  const double gather_s = BestOf(reps, [&] {
    for (int64_t e = 0; e < edges; ++e) {
      if (e + 8 < edges) {  // as the kernels do: the rows a few edges ahead, every cache line
        const char* ahead = reinterpret_cast<const char*>(xp + op.graph.indices[e + 8] * width);
        for (int64_t off = 0; off < width * static_cast<int64_t>(sizeof(float)); off += 64) {
          __builtin_prefetch(ahead + off, 0, 1);
        }
      }
      std::memcpy(ring.data() + (e & 63) * width, xp + op.graph.indices[e] * width, width * sizeof(float));
    }
    sink = ring[0];
  });
  std::printf("kernels: block 0's mean aggregation, %lld edges x %lld floats (%.0f MB of source rows); "
              "floors: in-order read %.2f ms (%.1f GB/s), row gather %.2f ms (%.1f GB/s)\n",
              static_cast<long long>(edges), static_cast<long long>(width), bytes / 1e6, 1e3 * seq_s,
              bytes / seq_s / 1e9, 1e3 * gather_s, bytes / gather_s / 1e9);
  const k::Isa active = k::ActiveIsa();
  for (k::Isa isa : k::SupportedIsas()) {
    k::SetIsa(isa);
    const double fwd = BestOf(reps, [&] { k::SpmmForward(op, xp, out.data(), 0, op.graph.num_dst); });
    const double bwd = BestOf(reps, [&] {
      std::fill(grad_x.begin(), grad_x.end(), 0.0f);
      k::SpmmBackwardX(op, out.data(), grad_x.data(), 0, width);
    });
    // Dropout (with ReLU) over the input block's destinations' hidden rows, as the layers run it.
    const k::Dropout drop{12345, 0.5f, true};
    const int64_t n = static_cast<int64_t>(out.size());
    const double dropout = BestOf(reps, [&] { k::DropoutForward(drop, out.data(), out.data(), 0, n); });
    std::printf("  %-8s forward %7.2f ms (%.1f GB/s, %.2fx the gather floor), backward %7.2f ms (%.2fx); "
                "dropout of %lld floats %.2f ms (%.1f GB/s read and written)\n",
                k::IsaName(isa), 1e3 * fwd, bytes / fwd / 1e9, fwd / gather_s, 1e3 * bwd, bwd / gather_s,
                static_cast<long long>(n), 1e3 * dropout, 8.0 * n / dropout / 1e9);
  }
  k::SetIsa(active);
}

absl::Status RunBench(const Bench& b) {
  if (b.caching_allocator) trainer::InstallCachingCpuAllocator();
  RETURN_IF_ERROR(trainer::SetIntraOpThreads(b.threads));
  ASSIGN_OR_RETURN(const core::PartitionConfig cfg, core::LoadPartitionConfig(b.part_config));
  if (cfg.num_parts != 1) return absl::InvalidArgumentError("--part-config must have 1 partition");
  ASSIGN_OR_RETURN(auto g, sampler::DistGraph::Open(cfg, {.machine_id = 0}));
  ASSIGN_OR_RETURN(const Batches bs, SampleBatches(b, cfg, g.get()));
  std::printf("graph %s: %lld nodes; fanouts %s, batch %lld, %lld batches (after 1 warm-up); %d intra-op thread(s)\n",
              cfg.graph_name.c_str(), static_cast<long long>(cfg.num_nodes), base::StrJoin(b.so.fanouts, ",").c_str(),
              static_cast<long long>(b.so.batch_size), static_cast<long long>(b.batches), b.threads);
  for (size_t l = 0; l < bs.tensors[1].blocks.size(); ++l) {
    const auto& block = bs.tensors[1].blocks[l];
    std::printf("  block %zu: %lld src, %lld dst, %lld edges\n", l, static_cast<long long>(block.num_src),
                static_cast<long long>(block.num_dst), static_cast<long long>(block.num_edges()));
  }
  const double layer0_rate = PrintGemmRates(bs, b.hidden);
  std::printf("%-6s %-12s %12s %12s %12s\n", "model", "path", "forward ms", "backward ms", "step ms");
  std::istringstream model_list(b.models);
  for (std::string name; std::getline(model_list, name, ',');) RETURN_IF_ERROR(TimeModel(b, bs, name, layer0_rate));
  if (!b.scripted.empty()) RETURN_IF_ERROR(TimeScripted(b, bs));
  if (b.kernels) TimeKernels(bs, 5);
  std::printf("sampled edges per batch: %.0f\n", bs.edges / b.batches);
  return absl::OkStatus();
}

int Run(int argc, char** argv) {
  base::KeepLargeAllocations();
  Bench b;
  base::ArgParser args("model_bench", "--part-config FILE [flags]");
  args.AddString("part-config", &b.part_config, "partition config of a graph cut into 1 partition");
  args.AddIntList("fanouts", &b.so.fanouts, "per layer, input layer first");
  args.AddInt("batch-size", &b.so.batch_size, "seeds per batch");
  args.AddInt("batches", &b.batches, "batches measured per model and path (after one warm-up)");
  args.AddInt("hidden", &b.hidden, "hidden width");
  args.AddInt("heads", &b.heads, "gat heads");
  args.AddInt("threads", &b.threads, "LibTorch intra-op threads");
  args.AddString("models", &b.models, "comma list of sage,gcn,gat");
  args.AddString("scripted", &b.scripted, "also time this TorchScript model against the built-in --scripted-baseline");
  args.AddString("scripted-baseline", &b.scripted_baseline, "the built-in model the scripted one implements");
  args.AddBool("composition", &b.composition, "also time the ATen composition (--no-composition: fused only, for profiling)");
  args.AddBool("caching-allocator", &b.caching_allocator, "LibTorch tensors from trainer/cpu_allocator.h, as fanout-train");
  args.AddBool("kernels", &b.kernels, "time the input block's aggregation on each instruction set, against memory floors");
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  if (absl::Status s = RunBench(b); !s.ok()) return args.Fail(s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }

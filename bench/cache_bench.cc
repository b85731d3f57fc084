// Hit rates of the device feature cache's two policies (--gpu-cache-policy, docs/benchmarks.md),
// side by side on the same batches, without training: for every trainer of a job on the
// partitioned graph (one per partition, as fanout-launch --num-trainers 1 runs it), the share of
// its input rows that a cache of a given size would hold
//   degree     the nodes with the most in-edges in the whole graph (the same for every trainer);
//   presample  the nodes that trainer's batches of epoch 0 took most (its first
//              --presample-steps steps, 0: the whole epoch), then in-degree;
// counted on the trainer's batches of epoch 1 (reshuffled, so not the batches presampled).
// Partitions other than 0 are served by in-process graph servers on loopback; a batch does not
// depend on where its partitions are read, so the figures are those of the real job.
//   cache_bench --part-config FILE [--budgets 0.05,0.1,0.27] [--presample-steps 0,16]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "base/cli.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "sampler/cache_choice.h"
#include "sampler/dist_graph.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/seed_split.h"
#include "server/graph_server.h"

namespace {

using namespace fanout;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The share of `batches`' input rows held by `chosen`.
double HitRate(const std::vector<int64_t>& chosen, int64_t num_nodes, const std::vector<std::vector<int64_t>>& batches) {
  std::vector<char> held(num_nodes, 0);
  for (int64_t v : chosen) held[v] = 1;
  int64_t hits = 0, inputs = 0;
  for (const auto& b : batches) {
    for (int64_t v : b) hits += held[v];
    inputs += static_cast<int64_t>(b.size());
  }
  return static_cast<double>(hits) / static_cast<double>(std::max<int64_t>(1, inputs));
}

// A budget given as a fraction of the graph's nodes, in rows.
int64_t Rows(float fraction, int64_t num_nodes) {
  return static_cast<int64_t>(static_cast<double>(fraction) * static_cast<double>(num_nodes));
}

int Main(int argc, char** argv) {
  std::string part_config;
  std::vector<int64_t> fanouts = {15, 10, 5}, presample_steps = {0, 16};
  std::vector<float> budgets = {0.05f, 0.10f, 0.27f};
  int64_t batch_size = 1024, eval_steps = 0;
  uint64_t seed = 0;
  base::ArgParser args("cache_bench", "--part-config FILE [flags]");
  args.AddString("part-config", &part_config, "the <name>.json of a partitioned graph");
  args.MarkRequired("part-config");
  args.AddIntList("fanouts", &fanouts, "per layer, input layer first");
  args.AddInt("batch-size", &batch_size, "seeds per batch");
  args.AddFloatList("budgets", &budgets, "cache sizes as fractions of the graph's nodes");
  args.AddIntList("presample-steps", &presample_steps, "steps presampled (0: the whole epoch)");
  args.AddInt("eval-steps", &eval_steps, "epoch-1 steps the hit rates are counted on (0: the whole epoch)");
  args.AddUint("seed", &seed, "the job's seed");
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;

  auto cfg = core::LoadPartitionConfig(part_config);
  if (!cfg.ok()) return args.Fail(cfg.status());
  std::vector<std::unique_ptr<server::GraphServer>> servers;
  sampler::DistGraphOptions go;
  go.machine_id = 0;
  go.servers.addresses.resize(cfg->num_parts);
  for (int p = 1; p < cfg->num_parts; ++p) {
    auto store = core::PartitionStore::Open(*cfg, p);
    if (!store.ok()) return args.Fail(store.status());
    server::ServerOptions so;
    so.host = "127.0.0.1";
    so.num_threads = 2;
    auto srv = server::GraphServer::Start(std::move(*store), so);
    if (!srv.ok()) return args.Fail(srv.status());
    go.servers.addresses[p] = {(*srv)->address()};
    servers.push_back(std::move(*srv));
  }
  auto g = sampler::DistGraph::Open(*cfg, go);
  if (!g.ok()) return args.Fail(g.status());
  const int64_t n = (*g)->num_nodes();
  const int world = cfg->num_parts;

  std::vector<int64_t> all(n), degree(n);
  std::iota(all.begin(), all.end(), 0);
  if (absl::Status s = (*g)->Degrees(all, core::EdgeDir::kIn, degree.data()); !s.ok()) return args.Fail(s);
  auto mask = (*g)->PullWholeNodeField("train_mask");
  if (!mask.ok()) return args.Fail(mask.status());
  const std::vector<int64_t> train = sampler::MaskToIds(*mask);
  auto split = sampler::SplitSeeds(train, (*g)->node_book(), 1);

  std::printf("graph %s: %lld nodes, %d partitions, %lld training nodes; fanouts %s, batch %lld\n",
              cfg->graph_name.c_str(), static_cast<long long>(n), world, static_cast<long long>(train.size()),
              base::StrJoin(fanouts, ",").c_str(), static_cast<long long>(batch_size));
  std::printf("%-6s %-8s %-10s %10s %14s %12s\n", "rank", "budget", "policy", "steps", "hit rate (ep 1)",
              "presample s");
  std::vector<std::vector<double>> rates;  // per rank, one per label
  std::vector<std::string> labels;
  for (int rank = 0; rank < world; ++rank) {
    sampler::SamplerOptions so;
    so.fanouts = fanouts;
    so.batch_size = batch_size;
    so.seed = seed;
    so.rank = rank;
    so.seeds_per_epoch = sampler::SeedsPerEpoch(static_cast<int64_t>(train.size()), world);
    so.feature_field = "";
    so.label_field = "";
    sampler::MiniBatchSampler s(g->get(), so, split[rank]);
    std::vector<std::vector<int64_t>> batches;
    const int64_t eval = eval_steps > 0 ? std::min(eval_steps, s.steps_per_epoch()) : s.steps_per_epoch();
    for (int64_t step = 0; step < eval; ++step) {
      auto mb = s.SampleBlocks(1, step);
      if (!mb.ok()) return args.Fail(mb.status());
      batches.push_back(mb->input_nodes().ToVector());
    }
    std::vector<double> mine;
    auto record = [&](float budget, const std::string& policy, double rate) {
      mine.push_back(rate);
      if (rank == 0) labels.push_back(base::StrCat("budget ", budget, " ", policy));
    };
    for (float b : budgets) {
      const double r = HitRate(sampler::ChooseHottest({}, degree, Rows(b, n)), n, batches);
      std::printf("%-6d %-8.3f %-10s %10s %14.1f%% %12s\n", rank, b, "degree", "-", 100 * r, "-");
      record(b, "degree", r);
    }
    for (int64_t steps : presample_steps) {
      const int64_t taken = steps > 0 ? std::min(steps, s.steps_per_epoch()) : s.steps_per_epoch();
      const auto t0 = Clock::now();
      auto counts = sampler::PresampleInputCounts(&s, taken, n);
      if (!counts.ok()) return args.Fail(counts.status());
      const double took = Since(t0);
      for (float b : budgets) {
        const double r = HitRate(sampler::ChooseHottest(*counts, degree, Rows(b, n)), n, batches);
        std::printf("%-6d %-8.3f %-10s %10lld %14.1f%% %12.2f\n", rank, b, "presample", static_cast<long long>(taken),
                    100 * r, took);
        record(b, steps > 0 ? base::StrCat("presample ", steps, " steps") : "presample an epoch", r);
      }
    }
    rates.push_back(std::move(mine));
    std::fflush(stdout);
  }
  std::printf("mean over the %d ranks:\n", world);
  for (size_t i = 0; i < labels.size(); ++i) {
    double sum = 0;
    for (const auto& r : rates) sum += r[i];
    std::printf("  %-40s %6.1f%%\n", labels[i].c_str(), 100 * sum / world);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }

// Mini-batch sampling throughput (docs/benchmarks.md), side by side in one run:
//   in-process  one thread sampling a single-partition graph straight from its files (blocks,
//               then the input features gathered), timed phase by phase;
//   2 parts     machine 0 of a two-partition graph: partition 0 from files, partition 1 from a
//               graph server on loopback, through the batch loader with N = 0 (one sampling
//               thread in the trainer), 1 and 2 fanout-sampler processes;
//   link        link prediction's edge mini-batches (sampler/link_sampler.h: --batch-size positive
//               edges, --negatives each, seed edges excluded) from the 1-part graph in-process,
//               and ("link2") machine 0 of the 2-part graph, one thread: the same batch sizes as
//               the node modes, side by side; "link2n1" / "link2n2" make them in 1 / 2
//               fanout-sampler processes, as the node modes' N = 1 / 2.
// Prints batches/s, sampled edges/s and input-feature MB/s, total and per sampler.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "base/cli.h"
#include "base/malloc_tuning.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "sampler/dist_graph.h"
#include "sampler/link_sampler.h"
#include "sampler/loader.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/seed_split.h"
#include "server/graph_server.h"

namespace {

using namespace fanout;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Totals {
  int64_t batches = 0, edges = 0, feature_bytes = 0;
  double seconds = 0;
  void Add(const sampler::LinkMiniBatch& lb) { Add(lb.nodes); }
  void Add(const sampler::MiniBatch& mb) {
    ++batches;
    for (const auto& b : mb.blocks) edges += b.num_edges();
    feature_bytes += static_cast<int64_t>(mb.features.bytes());
  }
  void Print(const char* name, int samplers) const {
    const int per = std::max(1, samplers);
    std::printf("%-22s %8.2f %10.2f %12.2f %10.1f %12.1f   (%lld batches, %.1f s)\n", name, batches / seconds,
                batches / seconds / per, edges / seconds / per / 1e6, feature_bytes / seconds / 1e6,
                feature_bytes / seconds / per / 1e6, static_cast<long long>(batches), seconds);
  }
};

absl::StatusOr<std::vector<int64_t>> TrainSeeds(const sampler::DistGraph& g, int rank) {
  ASSIGN_OR_RETURN(std::string mask, g.PullWholeNodeField("train_mask"));
  auto split = sampler::SplitSeeds(sampler::MaskToIds(mask), g.node_book(), 1);
  return split[rank];
}

int Run(int argc, char** argv) {
  fanout::base::KeepLargeAllocations();
  std::string one_part, two_parts, sampler_bin;
  sampler::SamplerOptions so;
  int64_t batches = 40, warmup = 3;
  int server_threads = 2;
  std::string modes = "inproc,n0,n1,n2";
  int64_t negatives = 1;
  int64_t feature_cache_mb = 0;
  base::ArgParser args("sampler_bench", "--one-part FILE --two-parts FILE [flags]");
  args.AddString("one-part", &one_part, "partition config of the graph cut into 1 partition");
  args.AddString("two-parts", &two_parts, "partition config of the same graph cut into 2");
  args.AddIntList("fanouts", &so.fanouts, "per layer, input layer first");
  args.AddInt("batch-size", &so.batch_size, "seeds per batch");
  args.AddInt("batches", &batches, "batches measured per mode");
  args.AddInt("warmup", &warmup, "batches run first, not measured");
  args.AddInt("server-threads", &server_threads, "worker threads of the partition-1 server");
  args.AddString("sampler-bin", &sampler_bin, "fanout-sampler (default: beside this program)");
  args.AddString("modes", &modes, "comma list of inproc,n0,n1,n2,link,link2,link2n1,link2n2");
  args.AddInt("negatives", &negatives, "link modes: negatives per positive edge");
  args.AddInt("feature-cache-mb", &feature_cache_mb, "halo feature cache per process in the 2-part modes (0: off)");
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  if (sampler_bin.empty()) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    std::string dir = n > 0 ? std::string(self, n) : "";
    sampler_bin = dir.substr(0, dir.rfind('/') + 1) + "fanout-sampler";
  }
  auto has = [&](const char* m) { return ("," + modes + ",").find(base::StrCat(",", m, ",")) != std::string::npos; };
  std::printf("fanouts %s, batch %lld, %lld batches per mode (after %lld warm-up)\n",
              base::StrJoin(so.fanouts, ",").c_str(), static_cast<long long>(so.batch_size),
              static_cast<long long>(batches), static_cast<long long>(warmup));
  std::printf("%-22s %8s %10s %12s %10s %12s\n", "mode", "batch/s", "/sampler", "Medges/s/s", "feat MB/s",
              "MB/s/sampler");

  if (has("inproc")) {
    auto cfg = core::LoadPartitionConfig(one_part);
    if (!cfg.ok()) return args.Fail(cfg.status());
    auto g = sampler::DistGraph::Open(*cfg, {.machine_id = 0});
    if (!g.ok()) return args.Fail(g.status());
    auto seeds = TrainSeeds(**g, 0);
    if (!seeds.ok()) return args.Fail(seeds.status());
    sampler::MiniBatchSampler s(g->get(), so, *seeds);
    Totals t;
    sampler::BufferPool pool;  // as the loaders do: buffers reused, not page-faulted in per batch
    double sample_s = 0, feat_s = 0;
    for (int64_t i = 0; i < warmup + batches; ++i) {
      const int64_t step = i % s.steps_per_epoch(), epoch = i / s.steps_per_epoch();
      auto t0 = Clock::now();
      auto mb = s.SampleBlocks(epoch, step);
      if (!mb.ok()) return args.Fail(mb.status());
      auto t1 = Clock::now();
      auto feat = pool.Get(mb->input_nodes().size() * s.feature_row_bytes());
      auto t2 = Clock::now();
      if (absl::Status st = s.FetchFeatures(mb->input_nodes(), feat.get()); !st.ok()) return args.Fail(st);
      if (i < warmup) continue;
      sample_s += std::chrono::duration<double>(t1 - t0).count();
      feat_s += Since(t2);
      mb->features.dtype = s.feature_dtype();
      mb->features.rows = static_cast<int64_t>(mb->input_nodes().size());
      mb->features.cols = s.feature_dim();
      t.Add(*mb);
    }
    t.seconds = sample_s + feat_s;
    t.Print("in-process, 1 part", 1);
    std::printf("  phases: sampling %.1f ms/batch = %.2f M sampled edges/s; feature gather %.1f ms/batch = %.2f GB/s\n",
                1e3 * sample_s / t.batches, t.edges / sample_s / 1e6, 1e3 * feat_s / t.batches,
                t.feature_bytes / feat_s / 1e9);
  }

  // Link prediction's batches: the same loop as a trainer's, features gathered; on the calling
  // thread, or (n > 0) from n sampler processes as fanout-train --task link --num-samplers n.
  auto run_link = [&](const sampler::DistGraph& g, const char* name, int n = 0,
                      const sampler::DistGraphOptions& go = {}, const std::string& config = "") -> absl::Status {
    sampler::LinkSamplerOptions lo;
    lo.sampling.fanouts = so.fanouts;
    lo.sampling.batch_size = so.batch_size;
    lo.negatives = negatives;
    lo.sampling.feature_field = so.feature_field;
    std::unique_ptr<sampler::LinkBatchSource> s;
    if (n == 0) {
      ASSIGN_OR_RETURN(s, sampler::LinkBatchLoader::Create(&g, lo, sampler::RankEdgeSeeds(g.config(), 1, 0),
                                                           /*threads=*/1, /*prefetch=*/1, 0, 1 + (warmup + batches)));
    } else {
      sampler::LoaderOptions po;
      po.num_samplers = n;
      po.prefetch = 2;
      po.num_epochs = 1 + (warmup + batches);
      po.sampler_binary = sampler_bin;
      po.part_config_path = config;
      ASSIGN_OR_RETURN(s, sampler::MakeLinkProcessLoader(&g, go, lo, sampler::RankEdgeSeeds(g.config(), 1, 0), po));
    }
    Totals t;
    Clock::time_point start;
    int64_t positives = 0, nodes = 0;
    for (int64_t i = 0; i < warmup + batches; ++i) {
      if (i == warmup) start = Clock::now();
      ASSIGN_OR_RETURN(sampler::LinkMiniBatch lb, s->Next());
      if (i < warmup) continue;
      t.Add(lb);
      positives += static_cast<int64_t>(lb.pos_src.size());
      nodes += static_cast<int64_t>(lb.nodes.seeds.size());
    }
    t.seconds = Since(start);
    t.Print(name, std::max(1, n));
    std::printf("  %.0f positive edges/s; %.0f distinct endpoints per batch (the node modes: %lld seeds)\n",
                positives / t.seconds, static_cast<double>(nodes) / std::max<int64_t>(1, t.batches),
                static_cast<long long>(so.batch_size));
    return absl::OkStatus();
  };
  if (has("link")) {
    auto cfg = core::LoadPartitionConfig(one_part);
    if (!cfg.ok()) return args.Fail(cfg.status());
    auto g = sampler::DistGraph::Open(*cfg, {.machine_id = 0});
    if (!g.ok()) return args.Fail(g.status());
    if (absl::Status st = run_link(**g, "link, in-process, 1 part"); !st.ok()) return args.Fail(st);
  }

  if (has("n0") || has("n1") || has("n2") || has("link2") || has("link2n1") || has("link2n2")) {
    auto cfg = core::LoadPartitionConfig(two_parts);
    if (!cfg.ok()) return args.Fail(cfg.status());
    if (cfg->num_parts != 2) return args.Fail(absl::InvalidArgumentError("--two-parts must have 2 partitions"));
    auto store = core::PartitionStore::Open(*cfg, 1);
    if (!store.ok()) return args.Fail(store.status());
    server::ServerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.num_threads = server_threads;
    auto srv = server::GraphServer::Start(std::move(*store), o);
    if (!srv.ok()) return args.Fail(srv.status());
    sampler::DistGraphOptions go;
    go.machine_id = 0;
    go.servers.addresses = {{}, {(*srv)->address()}};
    go.cache_field = so.feature_field;
    go.cache_max_bytes = feature_cache_mb << 20;
    auto g = sampler::DistGraph::Open(*cfg, go);
    if (!g.ok()) return args.Fail(g.status());
    auto seeds = TrainSeeds(**g, 0);
    if (!seeds.ok()) return args.Fail(seeds.status());
    for (int n : {0, 1, 2}) {
      if (!has(base::StrCat("n", n).c_str())) continue;
      sampler::LoaderOptions lo;
      lo.num_samplers = n;
      lo.num_threads = 1;
      lo.prefetch = 2;
      lo.num_epochs = 1 + (warmup + batches) / std::max<int64_t>(1, (*seeds).size() / so.batch_size);
      lo.sampler_binary = sampler_bin;
      lo.part_config_path = two_parts;
      auto l = sampler::MakeBatchLoader(g->get(), go, so, *seeds, lo);
      if (!l.ok()) return args.Fail(l.status());
      Totals t;
      Clock::time_point start;
      for (int64_t i = 0; i < warmup + batches; ++i) {
        if (i == warmup) start = Clock::now();
        auto mb = (*l)->Next();
        if (!mb.ok()) return args.Fail(mb.status());
        if (i >= warmup) t.Add(*mb);
      }
      t.seconds = Since(start);
      t.Print(base::StrCat("2 parts, N = ", n).c_str(), n);
      if (n == 0 && (*g)->row_cache() != nullptr) {
        const double hits = (*g)->cache_hits(), misses = (*g)->cache_misses();
        std::printf("  feature cache: %zu halo rows (%zu MiB); %.1f%% of remote rows found in it\n",
                    (*g)->row_cache()->size(), (*g)->row_cache()->bytes() >> 20, 100 * hits / std::max(1.0, hits + misses));
      }
    }
    if (has("link2")) {
      if (absl::Status st = run_link(**g, "link, 2 parts, N = 0"); !st.ok()) return args.Fail(st);
    }
    for (int n : {1, 2}) {
      if (!has(base::StrCat("link2n", n).c_str())) continue;
      if (absl::Status st = run_link(**g, base::StrCat("link, 2 parts, N = ", n).c_str(), n, go, two_parts); !st.ok()) {
        return args.Fail(st);
      }
    }
    (*srv)->Shutdown(std::chrono::milliseconds(0));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }

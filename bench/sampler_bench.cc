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

#include "absl/cleanup/cleanup.h"
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

// The benchmark's settings, from its flags.
struct Bench {
  std::string one_part, two_parts, sampler_bin, modes = "inproc,n0,n1,n2";
  sampler::SamplerOptions so;
  int64_t batches = 40, warmup = 3, negatives = 1, feature_cache_mb = 0;
  int server_threads = 2;
  bool has(const std::string& m) const { return ("," + modes + ",").find(base::StrCat(",", m, ",")) != std::string::npos; }
};

// Sampling and gathering on the calling thread from one partition mapped in this process.
absl::Status RunInProcess(const Bench& b) {
  ASSIGN_OR_RETURN(const core::PartitionConfig cfg, core::LoadPartitionConfig(b.one_part));
  ASSIGN_OR_RETURN(auto g, sampler::DistGraph::Open(cfg, {.machine_id = 0}));
  ASSIGN_OR_RETURN(std::vector<int64_t> seeds, TrainSeeds(*g, 0));
  sampler::MiniBatchSampler s(g.get(), b.so, seeds);
  Totals t;
  sampler::BufferPool pool;  // as the loaders do: buffers reused, not page-faulted in per batch
  double sample_s = 0, feat_s = 0;
  for (int64_t i = 0; i < b.warmup + b.batches; ++i) {
    const int64_t step = i % s.steps_per_epoch(), epoch = i / s.steps_per_epoch();
    auto t0 = Clock::now();
    ASSIGN_OR_RETURN(sampler::MiniBatch mb, s.SampleBlocks(epoch, step));
    auto t1 = Clock::now();
    auto feat = pool.Get(mb.input_nodes().size() * s.feature_row_bytes());
    auto t2 = Clock::now();
    RETURN_IF_ERROR(s.FetchFeatures(mb.input_nodes(), feat.get()));
    if (i < b.warmup) continue;
    sample_s += std::chrono::duration<double>(t1 - t0).count();
    feat_s += Since(t2);
    mb.features.dtype = s.feature_dtype();
    mb.features.rows = static_cast<int64_t>(mb.input_nodes().size());
    mb.features.cols = s.feature_dim();
    t.Add(mb);
  }
  t.seconds = sample_s + feat_s;
  t.Print("in-process, 1 part", 1);
  std::printf("  phases: sampling %.1f ms/batch = %.2f M sampled edges/s; feature gather %.1f ms/batch = %.2f GB/s\n",
              1e3 * sample_s / t.batches, t.edges / sample_s / 1e6, 1e3 * feat_s / t.batches,
              t.feature_bytes / feat_s / 1e9);
  return absl::OkStatus();
}

// Link prediction's batches: the same loop as a trainer's, features gathered; on the calling
// thread, or (n > 0) from n sampler processes as fanout-train --task link --num-samplers n.
absl::Status RunLink(const Bench& b, const sampler::DistGraph& g, const std::string& name, int n = 0,
                     const sampler::DistGraphOptions& go = {}, const std::string& config = "") {
  sampler::LinkSamplerOptions lo;
  lo.sampling.fanouts = b.so.fanouts;
  lo.sampling.batch_size = b.so.batch_size;
  lo.draw.negatives = b.negatives;
  lo.sampling.feature_field = b.so.feature_field;
  std::unique_ptr<sampler::LinkBatchSource> s;
  if (n == 0) {
    ASSIGN_OR_RETURN(s, sampler::LinkBatchLoader::Create(&g, lo, sampler::RankEdgeSeeds(g.config(), 1, 0),
                                                         /*threads=*/1, /*prefetch=*/1, 0, 1 + (b.warmup + b.batches)));
  } else {
    sampler::LoaderOptions po;
    po.num_samplers = n;
    po.prefetch = 2;
    po.num_epochs = 1 + (b.warmup + b.batches);
    po.sampler_binary = b.sampler_bin;
    po.part_config_path = config;
    ASSIGN_OR_RETURN(s, sampler::MakeLinkProcessLoader(&g, go, lo, sampler::RankEdgeSeeds(g.config(), 1, 0), po));
  }
  Totals t;
  Clock::time_point start;
  int64_t positives = 0, nodes = 0;
  for (int64_t i = 0; i < b.warmup + b.batches; ++i) {
    if (i == b.warmup) start = Clock::now();
    ASSIGN_OR_RETURN(sampler::LinkMiniBatch lb, s->Next());
    if (i < b.warmup) continue;
    t.Add(lb);
    positives += static_cast<int64_t>(lb.pos_src.size());
    nodes += static_cast<int64_t>(lb.nodes.seeds.size());
  }
  t.seconds = Since(start);
  t.Print(name.c_str(), std::max(1, n));
  std::printf("  %.0f positive edges/s; %.0f distinct endpoints per batch (the node modes: %lld seeds)\n",
              positives / t.seconds, static_cast<double>(nodes) / std::max<int64_t>(1, t.batches),
              static_cast<long long>(b.so.batch_size));
  return absl::OkStatus();
}

// Node batches of the 2-part graph (partition 1 behind a server) from threads (n = 0) or n
// sampler processes.
absl::Status RunTwoPartNodes(const Bench& b, sampler::DistGraph* g, const sampler::DistGraphOptions& go,
                             const std::vector<int64_t>& seeds, int n) {
  sampler::LoaderOptions lo;
  lo.num_samplers = n;
  lo.num_threads = 1;
  lo.prefetch = 2;
  lo.num_epochs = 1 + (b.warmup + b.batches) / std::max<int64_t>(1, seeds.size() / b.so.batch_size);
  lo.sampler_binary = b.sampler_bin;
  lo.part_config_path = b.two_parts;
  ASSIGN_OR_RETURN(auto l, sampler::MakeBatchLoader(g, go, b.so, seeds, lo));
  Totals t;
  Clock::time_point start;
  for (int64_t i = 0; i < b.warmup + b.batches; ++i) {
    if (i == b.warmup) start = Clock::now();
    ASSIGN_OR_RETURN(sampler::MiniBatch mb, l->Next());
    if (i >= b.warmup) t.Add(mb);
  }
  t.seconds = Since(start);
  t.Print(base::StrCat("2 parts, N = ", n).c_str(), n);
  if (n == 0 && g->row_cache() != nullptr) {
    const double hits = g->cache_hits(), misses = g->cache_misses();
    std::printf("  feature cache: %zu halo rows (%zu MiB); %.1f%% of remote rows found in it\n", g->row_cache()->size(),
                g->row_cache()->bytes() >> 20, 100 * hits / std::max(1.0, hits + misses));
  }
  return absl::OkStatus();
}

// The modes on the 2-part graph: partition 1 behind a server in this process.
absl::Status RunTwoParts(const Bench& b) {
  ASSIGN_OR_RETURN(const core::PartitionConfig cfg, core::LoadPartitionConfig(b.two_parts));
  if (cfg.num_parts != 2) return absl::InvalidArgumentError("--two-parts must have 2 partitions");
  ASSIGN_OR_RETURN(auto store, core::PartitionStore::Open(cfg, 1));
  server::ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.num_threads = b.server_threads;
  ASSIGN_OR_RETURN(auto srv, server::GraphServer::Start(std::move(store), o));
  absl::Cleanup stop = [&] { srv->Shutdown(std::chrono::milliseconds(0)); };
  sampler::DistGraphOptions go;
  go.machine_id = 0;
  go.servers.addresses = {{}, {srv->address()}};
  go.cache_field = b.so.feature_field;
  go.cache_max_bytes = b.feature_cache_mb << 20;
  ASSIGN_OR_RETURN(auto g, sampler::DistGraph::Open(cfg, go));
  ASSIGN_OR_RETURN(std::vector<int64_t> seeds, TrainSeeds(*g, 0));
  for (int n : {0, 1, 2}) {
    if (b.has(base::StrCat("n", n))) RETURN_IF_ERROR(RunTwoPartNodes(b, g.get(), go, seeds, n));
  }
  if (b.has("link2")) RETURN_IF_ERROR(RunLink(b, *g, "link, 2 parts, N = 0"));
  for (int n : {1, 2}) {
    if (b.has(base::StrCat("link2n", n))) RETURN_IF_ERROR(RunLink(b, *g, base::StrCat("link, 2 parts, N = ", n), n, go, b.two_parts));
  }
  return absl::OkStatus();
}

absl::Status RunModes(const Bench& b) {
  if (b.has("inproc")) RETURN_IF_ERROR(RunInProcess(b));
  if (b.has("link")) {
    ASSIGN_OR_RETURN(const core::PartitionConfig cfg, core::LoadPartitionConfig(b.one_part));
    ASSIGN_OR_RETURN(auto g, sampler::DistGraph::Open(cfg, {.machine_id = 0}));
    RETURN_IF_ERROR(RunLink(b, *g, "link, in-process, 1 part"));
  }
  for (const char* m : {"n0", "n1", "n2", "link2", "link2n1", "link2n2"}) {
    if (b.has(m)) return RunTwoParts(b);
  }
  return absl::OkStatus();
}

int Run(int argc, char** argv) {
  fanout::base::KeepLargeAllocations();
  Bench b;
  base::ArgParser args("sampler_bench", "--one-part FILE --two-parts FILE [flags]");
  args.AddString("one-part", &b.one_part, "partition config of the graph cut into 1 partition");
  args.AddString("two-parts", &b.two_parts, "partition config of the same graph cut into 2");
  args.AddIntList("fanouts", &b.so.fanouts, "per layer, input layer first");
  args.AddInt("batch-size", &b.so.batch_size, "seeds per batch");
  args.AddInt("batches", &b.batches, "batches measured per mode");
  args.AddInt("warmup", &b.warmup, "batches run first, not measured");
  args.AddInt("server-threads", &b.server_threads, "worker threads of the partition-1 server");
  args.AddString("sampler-bin", &b.sampler_bin, "fanout-sampler (default: beside this program)");
  args.AddString("modes", &b.modes, "comma list of inproc,n0,n1,n2,link,link2,link2n1,link2n2");
  args.AddInt("negatives", &b.negatives, "link modes: negatives per positive edge");
  args.AddInt("feature-cache-mb", &b.feature_cache_mb, "halo feature cache per process in the 2-part modes (0: off)");
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  if (b.sampler_bin.empty()) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    std::string dir = n > 0 ? std::string(self, n) : "";
    b.sampler_bin = dir.substr(0, dir.rfind('/') + 1) + "fanout-sampler";
  }
  std::printf("fanouts %s, batch %lld, %lld batches per mode (after %lld warm-up)\n",
              base::StrJoin(b.so.fanouts, ",").c_str(), static_cast<long long>(b.so.batch_size),
              static_cast<long long>(b.batches), static_cast<long long>(b.warmup));
  std::printf("%-22s %8s %10s %12s %10s %12s\n", "mode", "batch/s", "/sampler", "Medges/s/s", "feat MB/s",
              "MB/s/sampler");
  if (absl::Status s = RunModes(b); !s.ok()) return args.Fail(s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Run(argc, argv); }

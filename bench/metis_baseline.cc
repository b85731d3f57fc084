// The baseline for bench/partition_bench.sh: a plain METIS_PartGraphKway call on the graph
// fanout-partition would hand METIS, with nothing else around it. Prints the call's wall time
// and this process's peak RSS (its input CSR included), as key=value lines.
#include <chrono>
#include <cstdio>

#include "core/cli.h"
#include "core/process_stats.h"
#include "partition/metis_graph.h"
#include "partition/readers.h"

int main(int argc, char** argv) {
  using namespace fanout;
  partition::ReadOptions read;
  partition::PartitionOptions opt;
  opt.quiet = true;
  core::ArgParser args("metis_baseline", "--input DIR --num-parts K [--no-balance-train]");
  args.AddString("input", &read.input_dir, "dataset folder");
  args.AddInt("num-parts", &opt.num_parts, "partitions");
  args.AddBool("balance-train", &opt.balance_train, "same constraint as fanout-partition's default");
  args.AddBool("balance-edges", &opt.balance_edges, "");
  args.AddUint("seed", &opt.seed, "");
  absl::Status st = args.Parse(argc, argv);
  if (!st.ok() || args.help_requested()) {
    std::fprintf(stderr, "%s\n%s", std::string(st.message()).c_str(), args.Usage().c_str());
    return 2;
  }
  auto data = partition::ReadDataset(read);
  if (!data.ok()) {
    std::fprintf(stderr, "metis_baseline: %s\n", std::string(data.status().message()).c_str());
    return 1;
  }
  auto graph = partition::BuildMetisGraph(*data, opt);
  if (!graph.ok()) {
    std::fprintf(stderr, "metis_baseline: %s\n", std::string(graph.status().message()).c_str());
    return 1;
  }
  // Only the METIS input stays: the dataset's mapped pages are released.
  data->edges.DropPages(0, data->edges.nbytes());
  int64_t rss_before = core::CurrentRssBytes();
  auto t0 = std::chrono::steady_clock::now();
  auto part = partition::RunMetis(*graph, opt);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!part.ok()) {
    std::fprintf(stderr, "metis_baseline: %s\n", std::string(part.status().message()).c_str());
    return 1;
  }
  std::printf("constraints=%d\nadjacency_entries=%zu\nmetis_seconds=%.3f\nrss_before_metis_bytes=%lld\n"
              "peak_rss_bytes=%lld\n",
              graph->ncon, graph->adjncy.size(), secs, static_cast<long long>(rss_before),
              static_cast<long long>(core::PeakRssBytes()));
  return 0;
}

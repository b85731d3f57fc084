// The baseline for bench/partition_bench.sh: a plain METIS_PartGraphKway call on the graph
// fanout-partition would hand METIS, with nothing else around it. Prints the call's wall time
// and this process's peak RSS (its input CSR included), as key=value lines.
#include <chrono>
#include <cstdio>
#include <optional>

#include "base/cli.h"
#include "base/process_stats.h"
#include "partition/metis_graph.h"
#include "partition/readers.h"

int main(int argc, char** argv) {
  using namespace fanout;
  partition::ReadOptions read;
  partition::PartitionOptions opt;
  opt.quiet = true;
  base::ArgParser args("metis_baseline", "--input DIR --num-parts K [--no-balance-train]");
  args.AddString("input", &read.input_dir, "dataset folder");
  args.AddInt("num-parts", &opt.num_parts, "partitions");
  args.AddBool("balance-train", &opt.balance_train, "same constraint as fanout-partition's default");
  args.AddBool("balance-edges", &opt.balance_edges, "");
  args.AddUint("seed", &opt.seed, "");
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  auto data = partition::ReadDataset(read);
  if (!data.ok()) return args.Fail(data.status());
  auto graph = partition::BuildMetisGraph(*data, opt);
  if (!graph.ok()) return args.Fail(graph.status());
  // Only the METIS input stays: the dataset's mapped pages are released.
  data->edges.DropPages(0, data->edges.nbytes());
  int64_t rss_before = base::CurrentRssBytes();
  auto t0 = std::chrono::steady_clock::now();
  auto part = partition::RunMetis(*graph, opt);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!part.ok()) return args.Fail(part.status());
  std::printf("constraints=%d\nadjacency_entries=%zu\nmetis_seconds=%.3f\nrss_before_metis_bytes=%lld\n"
              "peak_rss_bytes=%lld\n",
              graph->ncon, graph->adjncy.size(), secs, static_cast<long long>(rss_before),
              static_cast<long long>(base::PeakRssBytes()));
  return 0;
}

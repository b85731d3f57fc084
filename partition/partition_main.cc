// fanout-partition: cuts a dataset into K partitions. See README.md and docs/architecture.md.
#include <chrono>
#include <cstdio>
#include <optional>

#include "base/cli.h"
#include "base/process_stats.h"
#include "base/progress.h"
#include "base/strings.h"
#include "partition/distributed.h"
#include "partition/partitioner.h"
#include "partition/readers.h"

namespace {

int Main(int argc, char** argv) {
  using namespace fanout;
  partition::ReadOptions read;
  partition::PartitionOptions opt;
  std::string method = "metis", objtype = "cut", self_loops = "keep", duplicates = "keep";
  base::ArgParser args("fanout-partition", "--input DIR --num-parts K --out OUT [flags]");
  args.AddString("input", &read.input_dir,
                 "dataset folder: OGB's raw layout, OGB's heterogeneous layout (typed), the plain layout or the "
                 "typed .npy layout (README 'Dataset layouts')");
  args.AddString("out", &opt.out_dir, "output folder for <name>.json and part<k>/");
  args.MarkRequired("input");
  args.MarkRequired("out");
  args.AddInt("num-parts", &opt.num_parts, "number of partitions K (one per machine)");
  args.MarkRequired("num-parts");
  args.AddString("graph-name", &opt.graph_name, "graph name [default: the input folder's name]");
  args.AddChoice("part-method", &method, {"metis", "random", "file"}, "how nodes are assigned");
  args.AddString("assignment", &opt.assignment_file,
                 "with --part-method file: node->partition IDs, one per line or an integer .npy");
  args.AddString("split", &read.split, "OGB layout: which split/<name>/ folder to read");
  args.AddAlias("split-name", "split");
  args.AddInt("num-nodes", &read.num_nodes, "plain layout: node count (-1 infers it)");
  args.AddChoice("edge-layout", &read.edge_layout, {"auto", "rows", "columns"},
                 "edges.npy: rows = [E, 2] (DGL), columns = [2, E] (PyG edge_index), auto = by shape");
  args.AddBool("add-reverse-edges", &opt.add_reverse_edges,
               "also store (v,u) for every input edge (u,v): an undirected graph (typed graphs: as relation "
               "rev_REL of DST to SRC)");
  args.AddChoice("self-loops", &self_loops, {"keep", "remove"}, "self loops in the input");
  args.AddChoice("duplicate-edges", &duplicates, {"keep", "remove"},
                 "repeated (u,v) pairs (after adding reverse edges)");
  args.AddBool("balance-train", &opt.balance_train, "METIS: balance training nodes per partition");
  args.AddBool("balance-edges", &opt.balance_edges, "METIS: balance in-edges per partition");
  args.AddChoice("objtype", &objtype, {"cut", "vol"}, "METIS objective: edge cut or comm. volume");
  std::string id_width = "auto";
  args.AddChoice("id-width", &id_width, {"auto", "32", "64"},
                 "stored node and edge IDs (the topology's bytes per edge): auto = int32 where the graph's IDs fit, "
                 "else int64; 64 = int64 always");
  args.AddInt("halo-hops", &opt.halo_hops, "hops of remote neighbours recorded (0 or 1)");
  args.AddUint("seed", &opt.seed, "seed for METIS and random partitioning");
  args.AddInt("num-threads", &opt.num_threads, "threads for sorting and writing (0 = all cores); with --distributed, PT-Scotch's threads per rank (0 = the cores divided by the ranks on the machine)");
  args.AddBool("overwrite", &opt.overwrite,
               "replace --out if it is an earlier output of fanout-partition (never the input or "
               "another folder)");
  std::string edge_split;
  args.AddString("edge-split", &edge_split,
                 "link prediction: TRAIN,VALID,TEST fractions of the node pairs (e.g. 0.85,0.05,0.10); valid and "
                 "test pairs are left out of the graph in both directions and written to link/ with negatives",
                 [](const std::string& v) { return partition::ParseEdgeSplit(v).status(); });
  std::string edge_split_files;
  args.AddString("edge-split-files", &edge_split_files,
                 "link prediction with your own split: a folder with valid_pos and test_pos (.npy [n, 2] or "
                 "src,dst text), optionally valid_neg/test_neg (k pairs per positive) or valid_neg_dst/test_neg_dst "
                 "(.npy [n, k]); those pairs are left out of the graph in both directions");
  std::string link_etype;
  args.AddString("link-etype", &link_etype,
                 "typed graphs, with --edge-split: the relation whose node pairs are split (REL or SRC:REL:DST); "
                 "its valid and test pairs are left out of it and of rev_REL, negatives pair a source with a node "
                 "of the relation's destination type, and fanout-train --task link predicts it");
  args.AddInt("eval-negatives", &opt.edge_split.negatives,
              "with --edge-split(-files): negative pairs drawn per valid/test positive (when none are given)");
  bool normalize = false;
  args.AddBool("normalize-features", &normalize,
               "row-normalise node field 'feat' as PyG's NormalizeFeatures: subtract its minimum, divide each "
               "row by its sum (stored as float32)");
  bool distributed = false;
  args.AddBool("distributed", &distributed,
               "run as one rank of an MPI job (mpirun -np P fanout-partition --distributed ...): each rank reads a "
               "slice of the input and writes its partitions, so no machine holds the whole graph; the assignment "
               "comes from PT-Scotch (--part-method metis), a random one or an .npy file (docs/partitioning.md)");
  args.AddInt("scotch-max-edges", &opt.scotch_max_edges,
              "with --distributed and --part-method metis: contract the graph by label propagation until at most "
              "this many edges are left for PT-Scotch, whose memory grows with its input (0: give PT-Scotch the "
              "whole graph)",
              0);
  args.AddBool("quiet", &opt.quiet, "print nothing but errors: no progress on stderr, no summary on stdout");
  std::string progress;
  base::AddProgressFlag(args, &progress);
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  base::ApplyProgressFlag(progress, opt.quiet);
  if (read.input_dir.empty()) return args.Fail(absl::InvalidArgumentError("--input is required"));
  if (opt.out_dir.empty()) return args.Fail(absl::InvalidArgumentError("--out is required"));
  if (!args.WasSet("num-parts")) return args.Fail(absl::InvalidArgumentError("--num-parts is required"));
  opt.method = method == "metis"    ? partition::PartMethod::kMetis
               : method == "random" ? partition::PartMethod::kRandom
                                    : partition::PartMethod::kFile;
  opt.objective_volume = objtype == "vol";
  opt.id_width = id_width == "32" ? partition::IdWidth::k32 : id_width == "64" ? partition::IdWidth::k64 : partition::IdWidth::kAuto;
  opt.remove_self_loops = self_loops == "remove";
  opt.remove_duplicate_edges = duplicates == "remove";
  if (!edge_split.empty()) {
    const int64_t negatives = opt.edge_split.negatives;
    opt.edge_split = *partition::ParseEdgeSplit(edge_split);
    opt.edge_split.negatives = negatives;
  }
  if (!edge_split_files.empty()) {
    if (!edge_split.empty()) {
      return args.Fail(absl::InvalidArgumentError("--edge-split and --edge-split-files: give one of them"));
    }
    opt.edge_split.files_dir = edge_split_files;
  }
  if (!link_etype.empty()) {
    if (edge_split.empty() && edge_split_files.empty()) {
      return args.Fail(absl::InvalidArgumentError("--link-etype goes with --edge-split (the relation to split)"));
    }
    opt.edge_split.relation = link_etype;
  }
  // Options that do not need the data are checked before reading it.
  if (absl::Status v = partition::ValidatePartitionOptions(opt, -1); !v.ok()) return args.Fail(v);
  if (distributed) {
    if (normalize) {
      return args.Fail(absl::InvalidArgumentError("--normalize-features: not available with --distributed yet"));
    }
    return partition::RunDistributedPartition(read, opt, &argc, &argv);
  }

  auto t0 = std::chrono::steady_clock::now();
  if (!opt.quiet) std::fprintf(stderr, "fanout-partition: reading %s\n", read.input_dir.c_str());
  absl::StatusOr<partition::Dataset> data = partition::ReadDataset(read);
  if (!data.ok()) return args.Fail(data.status());
  double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!opt.quiet) {
    std::fprintf(stderr, "fanout-partition: read %s layout: %lld nodes, %lld edges in %.1fs\n",
                 data->layout.c_str(), static_cast<long long>(data->num_nodes),
                 static_cast<long long>(data->num_edges()), read_s);
  }
  if (normalize) {
    if (absl::Status s = partition::NormalizeNodeFeatures(&*data); !s.ok()) return args.Fail(s);
    if (!opt.quiet) std::fprintf(stderr, "fanout-partition: node features row-normalised (--normalize-features)\n");
  }
  absl::StatusOr<partition::PartitionSummary> summary = partition::PartitionDataset(*data, opt);
  if (!summary.ok()) return args.Fail(summary.status());
  summary->phases.insert(summary->phases.begin(), {"read", read_s});
  summary->total_seconds += read_s;
  if (!opt.quiet) std::printf("%s", summary->ToString().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fanout::base::MainUnwindingOutOfMemory("fanout-partition", Main, argc, argv);
}

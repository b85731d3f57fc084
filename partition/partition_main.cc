// fanout-partition: cuts a dataset into K partitions. See README.md and docs/architecture.md.
#include <chrono>
#include <cstdio>
#include <optional>

#include "base/cli.h"
#include "base/process_stats.h"
#include "base/progress.h"
#include "base/status.h"
#include "absl/strings/str_split.h"
#include "base/strings.h"
#include "partition/distributed.h"
#include "partition/id_maps.h"
#include "partition/partitioner.h"
#include "partition/readers.h"

namespace {

using namespace fanout;

// Flags parsed into text, turned into options by ApplyFlags once every flag is read.
struct Flags {
  std::string method = "metis", objtype = "cut", self_loops = "keep", duplicates = "keep", id_width = "auto";
  std::string edge_split, edge_split_files, link_etype, progress, feature_dtype, write_id_maps;
  bool normalize = false, distributed = false;
};

void AddInputFlags(base::ArgParser& args, partition::ReadOptions& read, partition::PartitionOptions& opt, Flags& f) {
  args.AddString("input", &read.input_dir,
                 "dataset folder: OGB's raw layout, OGB's heterogeneous layout (typed), the plain layout, the "
                 "typed .npy layout or DGL's chunked format (README 'Dataset layouts')");
  args.AddString("out", &opt.out_dir, "output folder for <name>.json and part<k>/");
  args.MarkRequired("input");
  args.MarkRequired("out");
  args.AddInt("num-parts", &opt.num_parts, "number of partitions K (one per machine)");
  args.MarkRequired("num-parts");
  args.AddString("graph-name", &opt.graph_name, "graph name [default: the input folder's name]");
  args.AddString("split", &read.split, "OGB layout: which split/<name>/ folder to read");
  args.AddAlias("split-name", "split");
  args.AddInt("num-nodes", &read.num_nodes, "plain layout: node count (-1 infers it)");
  args.AddChoice("edge-layout", &read.edge_layout, {"auto", "rows", "columns"},
                 "edges.npy: rows = [E, 2] (DGL), columns = [2, E] (PyG edge_index), auto = by shape");
  args.AddBool("normalize-features", &f.normalize,
               "row-normalise node field 'feat' as PyG's NormalizeFeatures: subtract its minimum, divide each "
               "row by its sum (stored as float32)");
  args.AddChoice("feature-dtype", &f.feature_dtype, {"float32", "float16", "bfloat16", "int8"},
                 "store node field 'feat' smaller, for the trainer to decode after each fetch: float16 or bfloat16 "
                 "(2 bytes a value), int8 (1 byte a value and 8 a row: per-row scale and offset) [default: as read]");
}

void AddGraphFlags(base::ArgParser& args, partition::PartitionOptions& opt, Flags& f) {
  args.AddBool("add-reverse-edges", &opt.add_reverse_edges,
               "also store (v,u) for every input edge (u,v): an undirected graph (typed graphs: as relation "
               "rev_REL of DST to SRC)");
  args.AddChoice("self-loops", &f.self_loops, {"keep", "remove"}, "self loops in the input");
  args.AddChoice("duplicate-edges", &f.duplicates, {"keep", "remove"},
                 "repeated (u,v) pairs (after adding reverse edges)");
  args.AddChoice("id-width", &f.id_width, {"auto", "32", "64"},
                 "stored node and edge IDs (the topology's bytes per edge): auto = int32 where the graph's IDs fit, "
                 "else int64; 64 = int64 always");
  args.AddInt("halo-hops", &opt.halo_hops, "hops of remote neighbours recorded (0 or 1)");
}

void AddAssignmentFlags(base::ArgParser& args, partition::PartitionOptions& opt, Flags& f) {
  args.AddChoice("part-method", &f.method, {"metis", "random", "file"}, "how nodes are assigned");
  args.AddString("assignment", &opt.assignment_file,
                 "with --part-method file: node->partition IDs, one per line or an integer .npy");
  args.AddBool("balance-train", &opt.balance_train, "METIS: balance training nodes per partition");
  args.AddBool("balance-edges", &opt.balance_edges, "METIS: balance in-edges per partition");
  args.AddChoice("objtype", &f.objtype, {"cut", "vol"}, "METIS objective: edge cut or comm. volume");
  args.AddUint("seed", &opt.seed, "seed for METIS and random partitioning");
}

void AddLinkFlags(base::ArgParser& args, partition::PartitionOptions& opt, Flags& f) {
  args.AddString("edge-split", &f.edge_split,
                 "link prediction: TRAIN,VALID,TEST fractions of the node pairs (e.g. 0.85,0.05,0.10); valid and "
                 "test pairs are left out of the graph in both directions and written to link/ with negatives",
                 [](const std::string& v) { return partition::ParseEdgeSplit(v).status(); });
  args.AddString("edge-split-files", &f.edge_split_files,
                 "link prediction with your own split: a folder with valid_pos and test_pos (.npy [n, 2] or "
                 "src,dst text), optionally valid_neg/test_neg (k pairs per positive) or valid_neg_dst/test_neg_dst "
                 "(.npy [n, k]); those pairs are left out of the graph in both directions");
  args.AddString("link-etype", &f.link_etype,
                 "typed graphs, with --edge-split: the relation(s) whose node pairs are split (REL or SRC:REL:DST, "
                 "several comma-separated, each split on its own); valid and test pairs are left out of their "
                 "relation and of its rev_REL, negatives pair a source with a node of the relation's destination "
                 "type, and fanout-train --task link predicts them (results per relation)");
  args.AddInt("eval-negatives", &opt.edge_split.negatives,
              "with --edge-split(-files): negative pairs drawn per valid/test positive (when none are given)");
  args.AddString("hard-negative-field", &opt.hard_negative_field,
                 "an integer edge field [E, H] of input node IDs (-1: none): each edge's hard negatives for "
                 "fanout-train --hard-negative-field; stored in new node IDs (a reverse edge's row all -1). On a "
                 "typed graph a relation's field (edge_data/SRC___REL___DST/NAME.npy) of type-wise IDs of its "
                 "destination type");
}

void AddSystemFlags(base::ArgParser& args, partition::PartitionOptions& opt, Flags& f) {
  args.AddInt("num-threads", &opt.num_threads, "threads for sorting and writing (0 = all cores); with --distributed, PT-Scotch's threads per rank (0 = the cores divided by the ranks on the machine)");
  args.AddBool("overwrite", &opt.overwrite,
               "replace --out if it is an earlier output of fanout-partition (never the input or "
               "another folder)");
  args.AddBool("distributed", &f.distributed,
               "run as one rank of an MPI job (mpirun -np P fanout-partition --distributed ...): each rank reads a "
               "slice of the input and writes its partitions, so no machine holds the whole graph; the assignment "
               "comes from PT-Scotch (--part-method metis), a random one or an .npy file (docs/partitioning.md)");
  args.AddInt("scotch-max-edges", &opt.scotch_max_edges,
              "with --distributed and --part-method metis: contract the graph by label propagation until at most "
              "this many edges are left for PT-Scotch, whose memory grows with its input (0: give PT-Scotch the "
              "whole graph)",
              0);
  args.AddString("write-id-maps", &f.write_id_maps,
                 "CONFIG: write the whole graph's ID maps (id_maps/ beside CONFIG, which fanout.pyg and "
                 "partition_graph(return_mapping=True) read) for a partition made before fanout wrote them, "
                 "then exit; needs every partition's graph/orig_*.npy on this machine");
  args.AddBool("quiet", &opt.quiet, "print nothing but errors: no progress on stderr, no summary on stdout");
  base::AddProgressFlag(args, &f.progress);
}

// The flags parsed into text, into `opt`; what needs no data is checked here.
absl::Status ApplyFlags(const base::ArgParser& args, const partition::ReadOptions& read, const Flags& f,
                        partition::PartitionOptions& opt) {
  if (read.input_dir.empty()) return absl::InvalidArgumentError("--input is required");
  if (opt.out_dir.empty()) return absl::InvalidArgumentError("--out is required");
  if (!args.WasSet("num-parts")) return absl::InvalidArgumentError("--num-parts is required");
  opt.method = f.method == "metis"    ? partition::PartMethod::kMetis
               : f.method == "random" ? partition::PartMethod::kRandom
                                      : partition::PartMethod::kFile;
  opt.objective_volume = f.objtype == "vol";
  opt.id_width = f.id_width == "32" ? partition::IdWidth::k32 : f.id_width == "64" ? partition::IdWidth::k64 : partition::IdWidth::kAuto;
  opt.remove_self_loops = f.self_loops == "remove";
  opt.remove_duplicate_edges = f.duplicates == "remove";
  if (!f.edge_split.empty()) {
    const int64_t negatives = opt.edge_split.negatives;
    opt.edge_split = *partition::ParseEdgeSplit(f.edge_split);
    opt.edge_split.negatives = negatives;
  }
  if (!f.edge_split_files.empty()) {
    if (!f.edge_split.empty()) return absl::InvalidArgumentError("--edge-split and --edge-split-files: give one of them");
    opt.edge_split.files_dir = f.edge_split_files;
  }
  if (!f.link_etype.empty()) {
    if (f.edge_split.empty() && f.edge_split_files.empty()) {
      return absl::InvalidArgumentError("--link-etype goes with --edge-split (the relation to split)");
    }
    for (absl::string_view rel : absl::StrSplit(f.link_etype, ',')) {
      if (rel.empty()) return absl::InvalidArgumentError(base::StrCat("--link-etype ", f.link_etype, ": an empty relation name"));
      opt.edge_split.relations.emplace_back(rel);
    }
  }
  if (!f.feature_dtype.empty()) opt.feature_storage = *core::FeatureStorageFromName(f.feature_dtype);
  if (f.distributed && !opt.hard_negative_field.empty()) {
    return absl::InvalidArgumentError("--hard-negative-field: not available with --distributed yet");
  }
  if (f.distributed && f.normalize) {
    return absl::InvalidArgumentError("--normalize-features: not available with --distributed yet");
  }
  return partition::ValidatePartitionOptions(opt, -1);
}

// The single-machine tool: reads the whole input, partitions it, prints the summary.
absl::Status RunSerial(const partition::ReadOptions& read, const partition::PartitionOptions& opt, bool normalize) {
  auto t0 = std::chrono::steady_clock::now();
  if (!opt.quiet) std::fprintf(stderr, "fanout-partition: reading %s\n", read.input_dir.c_str());
  ASSIGN_OR_RETURN(partition::Dataset data, partition::ReadDataset(read));
  double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!opt.quiet) {
    std::fprintf(stderr, "fanout-partition: read %s layout: %lld nodes, %lld edges in %.1fs\n", data.layout.c_str(),
                 static_cast<long long>(data.num_nodes), static_cast<long long>(data.num_edges()), read_s);
  }
  if (normalize) {
    RETURN_IF_ERROR(partition::NormalizeNodeFeatures(&data));
    if (!opt.quiet) std::fprintf(stderr, "fanout-partition: node features row-normalised (--normalize-features)\n");
  }
  if (opt.feature_storage.has_value()) RETURN_IF_ERROR(partition::CompressNodeFeatures(&data, *opt.feature_storage));
  ASSIGN_OR_RETURN(partition::PartitionSummary summary, partition::PartitionDataset(data, opt));
  summary.phases.insert(summary.phases.begin(), {"read", read_s});
  summary.total_seconds += read_s;
  if (!opt.quiet) std::printf("%s", summary.ToString().c_str());
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  partition::ReadOptions read;
  partition::PartitionOptions opt;
  Flags flags;
  base::ArgParser args("fanout-partition", "--input DIR --num-parts K --out OUT [flags]");
  AddInputFlags(args, read, opt, flags);
  AddGraphFlags(args, opt, flags);
  AddAssignmentFlags(args, opt, flags);
  AddLinkFlags(args, opt, flags);
  AddSystemFlags(args, opt, flags);
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  base::ApplyProgressFlag(flags.progress, opt.quiet);
  if (!flags.write_id_maps.empty()) {
    if (absl::Status s = partition::WriteIdMapsFor(flags.write_id_maps); !s.ok()) return args.Fail(s);
    if (!opt.quiet) std::printf("wrote the ID maps of %s\n", flags.write_id_maps.c_str());
    return 0;
  }
  if (absl::Status s = ApplyFlags(args, read, flags, opt); !s.ok()) return args.Fail(s);
  if (flags.distributed) return partition::RunDistributedPartition(read, opt, &argc, &argv);
  if (absl::Status s = RunSerial(read, opt, flags.normalize); !s.ok()) return args.Fail(s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fanout::base::MainUnwindingOutOfMemory("fanout-partition", Main, argc, argv);
}

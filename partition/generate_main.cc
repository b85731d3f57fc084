// fanout-generate: writes a synthetic node-classification dataset (see partition/generate.h).
//
//   fanout-generate --out data/synth --preset products [--format ogb] [--seed 7]
//
// A preset sets the sizes; explicit flags override it wherever they appear on the line.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "base/cli.h"
#include "base/process_stats.h"
#include "base/progress.h"
#include "base/strings.h"
#include "partition/generate.h"

namespace {

using fanout::partition::DatasetFormat;
using fanout::partition::GenerateOptions;

constexpr char kAbout[] =
    "Writes a synthetic node-classification dataset: a power-law (Chung-Lu) graph with one\n"
    "planted community per class, class-dependent Gaussian features, noisy labels and a random\n"
    "train/valid/test split. Presets: tiny (1000 nodes, 5000 edges, 16 features, 4 classes),\n"
    "small (100000, 1000000, 100, 47; the default), products (2449029, 61859140, 100, 47:\n"
    "ogbn-products' sizes). Typed presets write a typed graph instead, in OGB's heterogeneous layout\n"
    "(--format ogb) or the typed .npy layout, sized by --scale: mag is shaped like ogbn-mag (authors,\n"
    "fields of study, institutions and papers: 1.9M nodes, 21.1M edges; papers with 128 features,\n"
    "349 classes and a split); igbh-tiny, igbh-small and igbh-medium like IGBH, MLPerf's R-GAT\n"
    "dataset (papers, authors, institutes and fields of study, every type with 1024 features;\n"
    "0.55M nodes and 2.0M edges, 3.1M and 25.5M, 26.0M and 239.5M; papers with 2983 classes, 60 %\n"
    "train, 0.5 % valid). Same flags and seed give byte-identical files.\n\n";

struct Preset {
  const char* name;
  int64_t num_nodes, num_edges, feat_dim, num_classes;
};
constexpr Preset kPresets[] = {
    {"tiny", 1000, 5000, 16, 4},
    {"small", 100000, 1000000, 100, 47},
    {"products", 2449029, 61859140, 100, 47},
};

}  // namespace

namespace {

int Main(int argc, char** argv) {
  using namespace fanout;
  GenerateOptions o;
  std::string format = "npy", preset = "small";
  base::ArgParser args("fanout-generate", "--out DIR [--preset tiny|small|products] [flags]");
  args.SetDescription(kAbout);
  args.AddString("out", &o.out_dir, "output folder (written atomically)");
  args.MarkRequired("out");
  args.AddBool(
      "overwrite", &o.overwrite,
      "replace --out if it is an earlier output of fanout-generate (never another folder)");
  args.AddChoice("format", &format, {"npy", "ogb"},
                 "layout: plain .npy files, or OGB's raw/*.csv.gz + split/<name>/");
  std::vector<std::string> presets = {"tiny", "small", "products"};
  for (const std::string& name : partition::TypedPresetNames()) presets.push_back(name);
  args.AddChoice("preset", &preset, presets,
                 "sizes; the flags below override them (mag, igbh-*: a typed graph, sized by --scale)");
  args.AddDouble("scale", &o.scale,
                 "typed presets: their node and edge counts times this (e.g. 0.01 for a small ogbn-mag)");
  args.AddInt("num-nodes", &o.num_nodes, "nodes");
  args.AddInt("num-edges", &o.num_edges, "directed edges");
  args.AddInt("feat-dim", &o.feat_dim, "features per node");
  std::string feat_dtype = "float32";
  args.AddChoice("feat-dtype", &feat_dtype, {"float32", "float16"},
                 "node_feat.npy's dtype (float16: the float32 values rounded; half the bytes to store and move)");
  args.AddInt("num-classes", &o.num_classes, "classes, one planted community each");
  args.AddDouble("power-law-exponent", &o.power_law_exponent,
                 "degree distribution tail exponent, > 1");
  args.AddDouble("intra-class-prob", &o.intra_class_prob,
                 "chance an edge stays in its source's community");
  args.AddDouble("feature-noise", &o.feature_noise, "noise std-dev around the class centroid");
  args.AddDouble("label-noise", &o.label_noise, "fraction of nodes labelled at random");
  args.AddDouble("train-frac", &o.train_frac, "fraction of nodes in train");
  args.AddDouble("valid-frac", &o.valid_frac, "fraction of nodes in valid; test gets the rest");
  args.AddBool("edge-weights", &o.edge_weights, "also write a float32 edge field \"weight\"");
  args.AddString("split", &o.split_name, "ogb format: the folder split/<name>/");
  args.AddAlias("split-name", "split");
  args.AddUint("seed", &o.seed, "random seed");
  std::string progress;
  base::AddProgressFlag(args, &progress);
  if (std::optional<int> exit = args.ParseForMain(argc, argv)) return *exit;
  base::ApplyProgressFlag(progress);
  for (const Preset& p : kPresets) {
    if (preset != p.name) continue;
    if (!args.WasSet("num-nodes")) o.num_nodes = p.num_nodes;
    if (!args.WasSet("num-edges")) o.num_edges = p.num_edges;
    if (!args.WasSet("feat-dim")) o.feat_dim = p.feat_dim;
    if (!args.WasSet("num-classes")) o.num_classes = p.num_classes;
  }
  if (const std::optional<partition::TypedShape> typed = partition::TypedPreset(preset)) {
    for (const char* flag : {"num-nodes", "num-edges"}) {
      if (args.WasSet(flag)) {
        return args.Fail(absl::InvalidArgumentError(base::StrCat(
            "--", flag, " does not apply to --preset ", preset, " (its sizes are ", typed->shaped_like,
            "'s times --scale)")));
      }
    }
    o.typed_preset = preset;
    if (!args.WasSet("feat-dim")) o.feat_dim = typed->feat_dim;
    if (!args.WasSet("num-classes")) {  // at most one class per labelled node at a small --scale
      const double labelled = static_cast<double>(typed->node_types[typed->labelled].count) * o.scale;
      o.num_classes = labelled > 0 && labelled < static_cast<double>(typed->num_classes)
                          ? std::max<int64_t>(2, std::llround(labelled))
                          : typed->num_classes;
    }
    if (!args.WasSet("train-frac")) o.train_frac = typed->train_frac;
    if (!args.WasSet("valid-frac")) o.valid_frac = typed->valid_frac;
  } else if (args.WasSet("scale")) {
    return args.Fail(absl::InvalidArgumentError("--scale is only used with a typed preset (mag, igbh-*)"));
  }
  o.format = format == "ogb" ? DatasetFormat::kOgb : DatasetFormat::kNpy;
  o.feat_dtype = feat_dtype == "float16" ? core::DType::kFloat16 : core::DType::kFloat32;

  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s = partition::GenerateDataset(o); !s.ok()) return args.Fail(s);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const partition::SplitSizes split = partition::ComputeSplitSizes(o);
  const std::string path = std::filesystem::absolute(o.out_dir).lexically_normal().string();
  if (!o.typed_preset.empty()) {
    const partition::TypedShape z = *partition::TypedPreset(o.typed_preset, o.scale);
    std::string nodes, edges;
    for (const partition::TypedNodeType& t : z.node_types) {
      nodes += base::StrCat(nodes.empty() ? "" : ", ", t.count, " ", t.name, t.features ? " (featured)" : "");
    }
    for (const partition::TypedRelation& r : z.relations) {
      edges += base::StrCat(edges.empty() ? "" : ", ", r.count, " ", r.name);
    }
    std::printf(
        "fanout-generate: wrote %s (typed %s layout, %s x %g): %s nodes; %s edges; %lld features, %s with %lld "
        "classes, split %lld/%lld/%lld; %.1f s\n",
        path.c_str(), format.c_str(), z.shaped_like.c_str(), o.scale, nodes.c_str(), edges.c_str(),
        static_cast<long long>(o.feat_dim), z.node_types[z.labelled].name.c_str(), static_cast<long long>(o.num_classes),
        static_cast<long long>(split.train), static_cast<long long>(split.valid), static_cast<long long>(split.test),
        seconds);
    return 0;
  }
  std::printf(
      "fanout-generate: wrote %s (%s layout): %lld nodes, %lld edges, %lld features, "
      "%lld classes, split %lld/%lld/%lld train/valid/test, %.1f s\n",
      path.c_str(), format.c_str(), static_cast<long long>(o.num_nodes),
      static_cast<long long>(o.num_edges), static_cast<long long>(o.feat_dim),
      static_cast<long long>(o.num_classes), static_cast<long long>(split.train),
      static_cast<long long>(split.valid), static_cast<long long>(split.test), seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return fanout::base::MainUnwindingOutOfMemory("fanout-generate", Main, argc, argv);
}

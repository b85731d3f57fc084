// fanout-generate: synthetic node-classification datasets, written in the layouts
// fanout-partition reads (see README "Dataset layouts").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/dtype.h"

namespace fanout::partition {

enum class DatasetFormat {
  kNpy,  // plain layout: edges.npy, node_feat.npy, node_label.npy, {train,valid,test}_idx.npy
  kOgb,  // OGB raw layout: raw/*.csv.gz, split/<split_name>/{train,valid,test}.csv.gz
};

struct GenerateOptions {
  std::string out_dir;                  // required; must not exist unless overwrite
  bool overwrite = false;               // replace an out_dir this tool wrote (base/staging_dir.h)
  DatasetFormat format = DatasetFormat::kNpy;
  int64_t num_nodes = 100000;           // products scale: 2449029
  int64_t num_edges = 1000000;          // directed edges written (before any reverse edges)
  int64_t feat_dim = 100;
  // node_feat.npy's dtype: float32, or float16 (the float32 values rounded to nearest, as numpy's
  // astype does; papers100M ships its features so). npy layout only.
  core::DType feat_dtype = core::DType::kFloat32;
  int64_t num_classes = 47;
  double power_law_exponent = 2.1;      // degree distribution tail exponent (Chung-Lu weights)
  double intra_class_prob = 0.8;        // chance an edge stays inside its source's community
  double feature_noise = 1.0;           // std-dev of Gaussian noise around the class centroid
  double label_noise = 0.05;            // fraction of nodes whose label is drawn at random
  double train_frac = 0.1;
  double valid_frac = 0.05;             // test gets the rest
  bool edge_weights = false;            // also write a float32 per-edge field "weight"
  std::string split_name = "random";    // OGB layout only: split/<split_name>/
  uint64_t seed = 0;
  // A typed preset (TypedPreset: "mag", "igbh-tiny", ...) instead of the plain graph, sized by
  // `scale` (num_nodes and num_edges are not used), written in the typed layouts: OGB's
  // heterogeneous raw layout (kOgb) or the typed .npy layout (kNpy).
  std::string typed_preset;
  double scale = 1.0;
};

// A typed preset's shape: its node types (which of them have features, which one carries the
// labels and the split) and relations, and the defaults of the flags a user did not set.
struct TypedNodeType {
  std::string name;
  int64_t count = 0;
  bool features = false;  // --feat-dim class-dependent features, as the labelled type's
};
struct TypedRelation {
  int src = 0;
  std::string name;
  int dst = 0;
  int64_t count = 0;
};
struct TypedShape {
  std::string preset;       // "mag"
  std::string shaped_like;  // "ogbn-mag"
  std::vector<TypedNodeType> node_types;  // in the order the layouts list them
  std::vector<TypedRelation> relations;
  int labelled = 0;  // index of the node type with labels and the split
  int64_t feat_dim = 0, num_classes = 0;
  double train_frac = 0, valid_frac = 0;
  int64_t nodes() const;
  int64_t edges() const;
};
// The typed presets by name: mag (ogbn-mag's four types and relations and sizes), igbh-tiny,
// igbh-small, igbh-medium (IGBH's: paper, author, institute, fos, every type with 1024-wide
// features, as MLPerf's R-GAT benchmark reads them). Every count times `scale` (at least 2
// nodes a type, 1 edge a relation); nullopt for a name that is not one.
std::optional<TypedShape> TypedPreset(std::string_view preset, double scale = 1.0);
// Their names, in the order above.
std::vector<std::string> TypedPresetNames();

struct SplitSizes {
  int64_t train = 0, valid = 0, test = 0;
};
// How many nodes each split gets: round(frac * N) for train and valid, the rest test (N: the
// labelled type's nodes with a typed preset).
SplitSizes ComputeSplitSizes(const GenerateOptions& options);

// Validates options; errors name the flag at fault.
absl::Status ValidateGenerateOptions(const GenerateOptions& options);

// Writes the dataset into a temporary sibling of out_dir and renames it into place when
// complete, so a failed or interrupted run never leaves a folder that looks valid.
// Same options (seed included) produce byte-identical files. Progress goes to stderr.
absl::Status GenerateDataset(const GenerateOptions& options);

}  // namespace fanout::partition

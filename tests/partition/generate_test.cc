#include "partition/generate.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/text_reader.h"
#include "core/npy.h"

namespace fanout::partition {
namespace {

namespace fs = std::filesystem;
using core::DType;
using core::NpyArray;

// A fresh folder under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "generate_test.XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

GenerateOptions Tiny(const fs::path& out) {
  GenerateOptions o;
  o.out_dir = out.string();
  o.num_nodes = 1000;
  o.num_edges = 5000;
  o.feat_dim = 16;
  o.num_classes = 4;
  return o;
}

NpyArray MapOrDie(const fs::path& p) {
  absl::StatusOr<NpyArray> a = NpyArray::Map(p.string());
  EXPECT_TRUE(a.ok()) << a.status();
  if (!a.ok()) return NpyArray::Owned(DType::kUInt8, {0});
  return std::move(a).value();
}

std::vector<int64_t> ToVector(const NpyArray& a) {
  const int64_t* p = a.data_as<int64_t>();
  return std::vector<int64_t>(p, p + a.num_elements());
}

std::string ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every line of a (gzipped) text file.
std::vector<std::string> ReadLines(const fs::path& p) {
  std::vector<std::string> lines;
  absl::StatusOr<std::unique_ptr<base::LineReader>> r = base::LineReader::Open(p.string());
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return lines;
  std::string_view line;
  while (true) {
    absl::StatusOr<bool> more = (*r)->Next(&line);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    lines.emplace_back(line);
  }
  return lines;
}

int64_t Round(double x) { return std::llround(x); }

TEST(GenerateTest, NpyLayoutShapesAndRanges) {
  TempDir tmp;
  GenerateOptions o = Tiny(tmp.path() / "data");
  o.edge_weights = true;
  ASSERT_TRUE(GenerateDataset(o).ok());
  const fs::path d = o.out_dir;
  const int64_t n = o.num_nodes, e = o.num_edges;

  NpyArray edges = MapOrDie(d / "edges.npy");
  ASSERT_EQ(edges.dtype(), DType::kInt64);
  ASSERT_EQ(edges.shape(), (std::vector<int64_t>{e, 2}));
  const int64_t* ep = edges.data_as<int64_t>();
  for (int64_t i = 0; i < e; ++i) {
    ASSERT_GE(ep[2 * i], 0);
    ASSERT_LT(ep[2 * i], n);
    ASSERT_GE(ep[2 * i + 1], 0);
    ASSERT_LT(ep[2 * i + 1], n);
    ASSERT_NE(ep[2 * i], ep[2 * i + 1]) << "self loop at row " << i;
  }

  NpyArray feat = MapOrDie(d / "node_feat.npy");
  ASSERT_EQ(feat.dtype(), DType::kFloat32);
  ASSERT_EQ(feat.shape(), (std::vector<int64_t>{n, o.feat_dim}));
  const float* fp = feat.data_as<float>();
  for (int64_t i = 0; i < feat.num_elements(); ++i) ASSERT_TRUE(std::isfinite(fp[i]));

  NpyArray label = MapOrDie(d / "node_label.npy");
  ASSERT_EQ(label.dtype(), DType::kInt64);
  ASSERT_EQ(label.shape(), (std::vector<int64_t>{n}));
  std::set<int64_t> classes;
  for (int64_t y : ToVector(label)) {
    ASSERT_GE(y, 0);
    ASSERT_LT(y, o.num_classes);
    classes.insert(y);
  }
  EXPECT_EQ(static_cast<int64_t>(classes.size()), o.num_classes);

  NpyArray weight = MapOrDie(d / "edge_data" / "weight.npy");
  ASSERT_EQ(weight.dtype(), DType::kFloat32);
  ASSERT_EQ(weight.shape(), (std::vector<int64_t>{e}));
  const float* wp = weight.data_as<float>();
  for (int64_t i = 0; i < e; ++i) {
    ASSERT_GE(wp[i], 0.1f);
    ASSERT_LT(wp[i], 1.0f);
  }

  // The split: sorted, disjoint, covering every node, sized by the fractions.
  std::vector<int64_t> all;
  const std::vector<std::pair<const char*, int64_t>> parts = {
      {"train_idx.npy", Round(o.train_frac * n)},
      {"valid_idx.npy", Round(o.valid_frac * n)},
      {"test_idx.npy", n - Round(o.train_frac * n) - Round(o.valid_frac * n)}};
  for (const auto& [name, size] : parts) {
    NpyArray idx = MapOrDie(d / name);
    ASSERT_EQ(idx.dtype(), DType::kInt64) << name;
    ASSERT_EQ(idx.shape(), (std::vector<int64_t>{size})) << name;
    std::vector<int64_t> v = ToVector(idx);
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end())) << name;
    all.insert(all.end(), v.begin(), v.end());
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(static_cast<int64_t>(all.size()), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(all[i], i) << "split is not a partition of the nodes";

  // Nothing but the dataset in the parent: the staging folder was renamed, not left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(tmp.path())) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(GenerateTest, SameSeedSameBytesOtherSeedOtherData) {
  TempDir tmp;
  GenerateOptions a = Tiny(tmp.path() / "a");
  a.edge_weights = true;
  a.seed = 7;
  GenerateOptions b = a;
  b.out_dir = (tmp.path() / "b").string();
  GenerateOptions c = a;
  c.out_dir = (tmp.path() / "c").string();
  c.seed = 8;
  ASSERT_TRUE(GenerateDataset(a).ok());
  ASSERT_TRUE(GenerateDataset(b).ok());
  ASSERT_TRUE(GenerateDataset(c).ok());
  for (const char* f : {"edges.npy", "node_feat.npy", "node_label.npy", "train_idx.npy",
                        "valid_idx.npy", "test_idx.npy", "edge_data/weight.npy"}) {
    const std::string bytes_a = ReadBytes(fs::path(a.out_dir) / f);
    ASSERT_FALSE(bytes_a.empty()) << f;
    EXPECT_EQ(bytes_a, ReadBytes(fs::path(b.out_dir) / f)) << f;
    EXPECT_NE(bytes_a, ReadBytes(fs::path(c.out_dir) / f)) << f;
  }
}

TEST(GenerateTest, GraphDoesNotDependOnFeatureOptions) {
  TempDir tmp;
  GenerateOptions a = Tiny(tmp.path() / "a");
  GenerateOptions b = a;
  b.out_dir = (tmp.path() / "b").string();
  b.feat_dim = 5;
  b.feature_noise = 3.0;
  b.edge_weights = true;
  ASSERT_TRUE(GenerateDataset(a).ok());
  ASSERT_TRUE(GenerateDataset(b).ok());
  for (const char* f : {"edges.npy", "node_label.npy", "train_idx.npy", "test_idx.npy"}) {
    EXPECT_EQ(ReadBytes(fs::path(a.out_dir) / f), ReadBytes(fs::path(b.out_dir) / f)) << f;
  }
}

// --feat-dtype float16 writes the float32 features rounded to the nearest half, and nothing else
// changes.
TEST(GenerateTest, Float16FeaturesAreTheFloat32OnesRounded) {
  TempDir tmp;
  GenerateOptions a = Tiny(tmp.path() / "a");
  GenerateOptions b = a;
  b.out_dir = (tmp.path() / "b").string();
  b.feat_dtype = DType::kFloat16;
  ASSERT_TRUE(GenerateDataset(a).ok());
  ASSERT_TRUE(GenerateDataset(b).ok());
  NpyArray f32 = MapOrDie(fs::path(a.out_dir) / "node_feat.npy");
  NpyArray f16 = MapOrDie(fs::path(b.out_dir) / "node_feat.npy");
  ASSERT_EQ(f16.dtype(), DType::kFloat16);
  ASSERT_EQ(f16.shape(), f32.shape());
  const auto* halves = static_cast<const uint16_t*>(f16.data());
  for (int64_t i = 0; i < f32.num_elements(); ++i) {
    ASSERT_EQ(halves[i], core::FloatToHalf(f32.data_as<float>()[i])) << "value " << i;
  }
  for (const char* f : {"edges.npy", "node_label.npy", "train_idx.npy", "valid_idx.npy", "test_idx.npy"}) {
    EXPECT_EQ(ReadBytes(fs::path(a.out_dir) / f), ReadBytes(fs::path(b.out_dir) / f)) << f;
  }
}

// The fraction of edges inside a community is p + (1 - p) * P(a weighted random node shares
// the source's community), about p + (1 - p) / C with equal-sized communities.
TEST(GenerateTest, IntraClassEdgeFractionFollowsOption) {
  for (double p : {0.0, 0.5, 0.8, 1.0}) {
    TempDir tmp;
    GenerateOptions o = Tiny(tmp.path() / "data");
    o.num_nodes = 2000;
    o.num_edges = 20000;
    o.label_noise = 0;  // labels are the communities
    o.intra_class_prob = p;
    ASSERT_TRUE(GenerateDataset(o).ok());
    NpyArray edges = MapOrDie(fs::path(o.out_dir) / "edges.npy");
    const std::vector<int64_t> y = ToVector(MapOrDie(fs::path(o.out_dir) / "node_label.npy"));
    const int64_t* ep = edges.data_as<int64_t>();
    int64_t same = 0;
    for (int64_t i = 0; i < o.num_edges; ++i) same += y[ep[2 * i]] == y[ep[2 * i + 1]];
    const double got = static_cast<double>(same) / static_cast<double>(o.num_edges);
    const double want = p + (1 - p) / static_cast<double>(o.num_classes);
    EXPECT_NEAR(got, want, 0.05) << "intra_class_prob " << p;
  }
}

// Nearest-centroid classification (centroids estimated from the data) on the features alone
// must beat chance (1/C) by a wide margin.
TEST(GenerateTest, FeaturesCorrelateWithClass) {
  TempDir tmp;
  GenerateOptions o = Tiny(tmp.path() / "data");
  ASSERT_TRUE(GenerateDataset(o).ok());
  NpyArray feat = MapOrDie(fs::path(o.out_dir) / "node_feat.npy");
  const std::vector<int64_t> y = ToVector(MapOrDie(fs::path(o.out_dir) / "node_label.npy"));
  const int64_t n = o.num_nodes, f = o.feat_dim, c = o.num_classes;
  const float* x = feat.data_as<float>();
  std::vector<double> mean(c * f, 0.0), count(c, 0.0);
  for (int64_t v = 0; v < n; ++v) {
    count[y[v]] += 1;
    for (int64_t j = 0; j < f; ++j) mean[y[v] * f + j] += x[v * f + j];
  }
  for (int64_t k = 0; k < c; ++k) {
    ASSERT_GT(count[k], 0);
    for (int64_t j = 0; j < f; ++j) mean[k * f + j] /= count[k];
  }
  int64_t correct = 0;
  for (int64_t v = 0; v < n; ++v) {
    int64_t best = -1;
    double best_d = 1e300;
    for (int64_t k = 0; k < c; ++k) {
      double d = 0;
      for (int64_t j = 0; j < f; ++j) d += std::pow(x[v * f + j] - mean[k * f + j], 2);
      if (d < best_d) {
        best_d = d;
        best = k;
      }
    }
    correct += best == y[v];
  }
  const double accuracy = static_cast<double>(correct) / static_cast<double>(n);
  EXPECT_GT(accuracy, 3.0 / static_cast<double>(c));
  // ...but the classes are not trivially separable either.
  EXPECT_LT(accuracy, 0.99);
}

TEST(GenerateTest, DegreesAreSkewed) {
  TempDir tmp;
  GenerateOptions o = Tiny(tmp.path() / "data");
  o.num_nodes = 5000;
  o.num_edges = 50000;
  ASSERT_TRUE(GenerateDataset(o).ok());
  NpyArray edges = MapOrDie(fs::path(o.out_dir) / "edges.npy");
  const int64_t* ep = edges.data_as<int64_t>();
  std::vector<int64_t> degree(o.num_nodes, 0);
  for (int64_t i = 0; i < 2 * o.num_edges; ++i) ++degree[ep[i]];
  const double mean = 2.0 * static_cast<double>(o.num_edges) / static_cast<double>(o.num_nodes);
  const int64_t max = *std::max_element(degree.begin(), degree.end());
  EXPECT_GT(static_cast<double>(max), 10 * mean);
  // Capped at about sqrt(2 E) (Chung-Lu's limit), give or take the sampling noise.
  EXPECT_LT(static_cast<double>(max), 2 * std::sqrt(2.0 * static_cast<double>(o.num_edges)));
}

TEST(GenerateTest, EdgeCases) {
  TempDir tmp;
  // No edges.
  GenerateOptions o = Tiny(tmp.path() / "no_edges");
  o.num_edges = 0;
  o.edge_weights = true;
  ASSERT_TRUE(GenerateDataset(o).ok());
  EXPECT_EQ(MapOrDie(fs::path(o.out_dir) / "edges.npy").shape(), (std::vector<int64_t>{0, 2}));
  // One node per community: every intra-community draw is a self loop and must be redirected.
  o = Tiny(tmp.path() / "singletons");
  o.num_nodes = o.num_classes = 50;
  o.intra_class_prob = 1.0;
  o.train_frac = 1.0;
  o.valid_frac = 0.0;
  ASSERT_TRUE(GenerateDataset(o).ok());
  NpyArray edges = MapOrDie(fs::path(o.out_dir) / "edges.npy");
  const int64_t* ep = edges.data_as<int64_t>();
  for (int64_t i = 0; i < o.num_edges; ++i) ASSERT_NE(ep[2 * i], ep[2 * i + 1]);
  EXPECT_EQ(MapOrDie(fs::path(o.out_dir) / "train_idx.npy").rows(), 50);
  EXPECT_EQ(MapOrDie(fs::path(o.out_dir) / "test_idx.npy").rows(), 0);
  // Dense beyond any skew (2E/N > sqrt(2E)): weights become uniform, still valid.
  o = Tiny(tmp.path() / "dense");
  o.num_nodes = 10;
  o.num_classes = 2;
  o.num_edges = 1000;
  ASSERT_TRUE(GenerateDataset(o).ok());
}

TEST(GenerateTest, ExistingOutputNeedsOverwrite) {
  TempDir tmp;
  GenerateOptions o = Tiny(tmp.path() / "data");
  fs::create_directories(o.out_dir);
  std::ofstream(fs::path(o.out_dir) / "keep.txt") << "x";
  absl::Status s = GenerateDataset(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_TRUE(fs::exists(fs::path(o.out_dir) / "keep.txt"));
  // Issue 11: --overwrite replaces only a folder fanout-generate wrote, never a user's folder.
  o.overwrite = true;
  s = GenerateDataset(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(std::string(s.message()).find("was not written by fanout-generate"), std::string::npos)
      << s;
  EXPECT_TRUE(fs::exists(fs::path(o.out_dir) / "keep.txt"));
  fs::remove_all(o.out_dir);
  ASSERT_TRUE(GenerateDataset(o).ok());
  o.seed += 1;
  ASSERT_TRUE(GenerateDataset(o).ok()) << "its own output is replaced";
  EXPECT_TRUE(fs::exists(fs::path(o.out_dir) / "edges.npy"));
}

TEST(GenerateTest, ValidationNamesTheFlag) {
  TempDir tmp;
  struct Case {
    std::function<void(GenerateOptions*)> mutate;
    std::string flag;
  };
  const std::vector<Case> cases = {
      {[](GenerateOptions* o) { o->out_dir.clear(); }, "--out"},
      {[](GenerateOptions* o) { o->num_nodes = 1; }, "--num-nodes"},
      {[](GenerateOptions* o) { o->num_edges = -1; }, "--num-edges"},
      {[](GenerateOptions* o) { o->feat_dim = 0; }, "--feat-dim"},
      {[](GenerateOptions* o) { o->num_classes = 0; }, "--num-classes"},
      {[](GenerateOptions* o) { o->num_classes = 1001; }, "--num-classes"},
      {[](GenerateOptions* o) { o->train_frac = 1.5; }, "--train-frac"},
      {[](GenerateOptions* o) { o->valid_frac = -0.1; }, "--valid-frac"},
      {[](GenerateOptions* o) { o->train_frac = 0.7, o->valid_frac = 0.5; }, "--valid-frac"},
      {[](GenerateOptions* o) { o->intra_class_prob = 1.1; }, "--intra-class-prob"},
      {[](GenerateOptions* o) { o->intra_class_prob = std::nan(""); }, "--intra-class-prob"},
      {[](GenerateOptions* o) { o->label_noise = -1; }, "--label-noise"},
      {[](GenerateOptions* o) { o->feature_noise = -0.5; }, "--feature-noise"},
      {[](GenerateOptions* o) { o->power_law_exponent = 1.0; }, "--power-law-exponent"},
      {[](GenerateOptions* o) {
         o->format = DatasetFormat::kOgb;
         o->split_name = "a/b";
       },
       "--split-name"},
      {[](GenerateOptions* o) { o->feat_dtype = DType::kInt8; }, "--feat-dtype"},
      {[](GenerateOptions* o) {
         o->format = DatasetFormat::kOgb;
         o->feat_dtype = DType::kFloat16;
       },
       "--feat-dtype"},
  };
  for (const Case& c : cases) {
    GenerateOptions o = Tiny(tmp.path() / "data");
    c.mutate(&o);
    absl::Status s = ValidateGenerateOptions(o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.flag;
    EXPECT_NE(std::string(s.message()).find(c.flag), std::string::npos)
        << "message \"" << s.message() << "\" does not name " << c.flag;
    EXPECT_FALSE(GenerateDataset(o).ok()) << c.flag;
    EXPECT_FALSE(fs::exists(tmp.path() / "data")) << c.flag;
  }
  EXPECT_TRUE(fs::is_empty(tmp.path()));
  // The message spells out the allowed range.
  GenerateOptions o = Tiny(tmp.path() / "data");
  o.num_nodes = 10;
  o.num_classes = 0;
  EXPECT_EQ(std::string(ValidateGenerateOptions(o).message()),
            "--num-classes must be in [1, num_nodes=10], got 0");
  EXPECT_TRUE(ValidateGenerateOptions(Tiny(tmp.path() / "data")).ok());
}

// The OGB layout holds the same numbers as the npy layout, as text.
TEST(GenerateTest, OgbLayoutMatchesNpyLayout) {
  TempDir tmp;
  GenerateOptions npy = Tiny(tmp.path() / "npy");
  npy.edge_weights = true;
  GenerateOptions ogb = npy;
  ogb.out_dir = (tmp.path() / "ogb").string();
  ogb.format = DatasetFormat::kOgb;
  ogb.split_name = "synthetic";
  ASSERT_TRUE(GenerateDataset(npy).ok());
  ASSERT_TRUE(GenerateDataset(ogb).ok());
  const fs::path raw = fs::path(ogb.out_dir) / "raw";
  const fs::path split = fs::path(ogb.out_dir) / "split" / "synthetic";
  const int64_t n = npy.num_nodes, e = npy.num_edges, f = npy.feat_dim;
  std::vector<std::string_view> fields;

  EXPECT_EQ(ReadLines(raw / "num-node-list.csv.gz"), std::vector<std::string>{"1000"});
  EXPECT_EQ(ReadLines(raw / "num-edge-list.csv.gz"), std::vector<std::string>{"5000"});

  const std::vector<std::string> edge_lines = ReadLines(raw / "edge.csv.gz");
  ASSERT_EQ(static_cast<int64_t>(edge_lines.size()), e);
  NpyArray edges = MapOrDie(fs::path(npy.out_dir) / "edges.npy");
  for (int64_t i = 0; i < e; ++i) {
    base::SplitFields(edge_lines[i], &fields);
    ASSERT_EQ(fields.size(), 2u) << edge_lines[i];
    int64_t src, dst;
    ASSERT_TRUE(base::ParseInt64(fields[0], &src) && base::ParseInt64(fields[1], &dst));
    ASSERT_EQ(src, edges.data_as<int64_t>()[2 * i]);
    ASSERT_EQ(dst, edges.data_as<int64_t>()[2 * i + 1]);
  }

  const std::vector<std::string> feat_lines = ReadLines(raw / "node-feat.csv.gz");
  ASSERT_EQ(static_cast<int64_t>(feat_lines.size()), n);
  NpyArray feat = MapOrDie(fs::path(npy.out_dir) / "node_feat.npy");
  for (int64_t v = 0; v < n; ++v) {
    base::SplitFields(feat_lines[v], &fields);
    ASSERT_EQ(static_cast<int64_t>(fields.size()), f);
    for (int64_t j = 0; j < f; ++j) {
      float x;
      ASSERT_TRUE(base::ParseFloat(fields[j], &x)) << fields[j];
      ASSERT_EQ(x, feat.data_as<float>()[v * f + j]) << "row " << v << " column " << j;
    }
  }

  const std::vector<std::string> weight_lines = ReadLines(raw / "edge-feat.csv.gz");
  ASSERT_EQ(static_cast<int64_t>(weight_lines.size()), e);
  NpyArray weight = MapOrDie(fs::path(npy.out_dir) / "edge_data" / "weight.npy");
  for (int64_t i = 0; i < e; ++i) {
    float x;
    ASSERT_TRUE(base::ParseFloat(weight_lines[i], &x)) << weight_lines[i];
    ASSERT_EQ(x, weight.data_as<float>()[i]);
  }

  auto as_ints = [](const std::vector<std::string>& lines) {
    std::vector<int64_t> v;
    for (const std::string& s : lines) {
      int64_t x = -1;
      EXPECT_TRUE(base::ParseInt64(s, &x)) << s;
      v.push_back(x);
    }
    return v;
  };
  EXPECT_EQ(as_ints(ReadLines(raw / "node-label.csv.gz")),
            ToVector(MapOrDie(fs::path(npy.out_dir) / "node_label.npy")));
  for (const char* part : {"train", "valid", "test"}) {
    EXPECT_EQ(as_ints(ReadLines(split / (std::string(part) + ".csv.gz"))),
              ToVector(MapOrDie(fs::path(npy.out_dir) / (std::string(part) + "_idx.npy"))))
        << part;
  }
  EXPECT_FALSE(fs::exists(fs::path(ogb.out_dir) / "edges.npy"));
}

}  // namespace
}  // namespace fanout::partition

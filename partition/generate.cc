// The synthetic generator: a planted-partition Chung-Lu graph with class-conditional Gaussian
// features.
//
// Model (everything drawn from `seed`):
//   - Community: a seeded permutation deals the nodes round-robin into num_classes communities,
//     so sizes differ by at most one and node IDs say nothing about the class.
//   - Degrees: each node gets a Chung-Lu weight w_v ~ Pareto(x_min = 1, tail exponent
//     power_law_exponent - 1), capped so that no expected total degree exceeds sqrt(2 E), the
//     largest degree a Chung-Lu graph can have (w_u w_v / W <= 1) and the structural cutoff of
//     scale-free networks. The expected total degree of v is then 2 E w_v / W.
//   - Edges: src ~ w over all nodes; with probability intra_class_prob dst ~ w within src's
//     community, otherwise dst ~ w over all nodes. A self loop redraws dst. Parallel edges are
//     kept, as in real crawls. Sampling uses alias tables, O(1) per draw.
//   - Features: the true class's centroid (entries N(0, kCentroidNorm^2 / F), so the centroid
//     norm, and with it how separable the classes are, does not depend on F) plus
//     N(0, feature_noise^2) per entry.
//   - Labels: the community, except that each node with probability label_noise gets a uniform
//     random class instead.
//   - Split: a seeded permutation; the first round(train_frac N) nodes train, the next
//     round(valid_frac N) valid, the rest test; each written sorted.
//
// A typed preset (GenerateTyped) builds one such model per node type and draws each relation source
// by source, with distinct destinations per source.
//
// Each part draws from its own random stream, and the chunked parts (features, edges, edge
// weights) from one stream per chunk, so the output does not depend on the thread count, the
// edges do not change with feat_dim or --edge-weights, and chunks can be generated in parallel.
// Only libstdc++'s mt19937_64 (fully specified) and our own distributions are used.
#include "partition/generate.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/check.h"
#include "base/progress.h"
#include "base/staging_dir.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/dtype.h"
#include "core/npy.h"
#include "core/random.h"
#include "partition/synth_random.h"

namespace fanout::partition {
namespace {

using base::StrCat;
using core::SplitMix64;
using synth::AliasBucket;
using synth::BuildAlias;
using synth::MakeRng;
using synth::NormalSampler;
using synth::SampleAlias;
using synth::Shuffle;
using synth::Stream;
using synth::Uniform01;
using synth::UniformInt;
namespace fs = std::filesystem;

// Centroid norm in units of the noise's standard deviation. With feature_noise = 1, a
// nearest-true-centroid classifier scores about 59% on 47 classes and about 88% on 4 (close to an
// MLP on ogbn-products), so features help but the graph still matters.
constexpr double kCentroidNorm = 2.5;
// Edges generated per chunk; also the unit of progress and of parallel work.
constexpr int64_t kEdgeChunk = 1 << 20;
// Feature values generated per chunk (rows = this / feat_dim, at least 1).
constexpr int64_t kFeatureChunkValues = 1 << 20;
// Tries to draw a dst other than src before falling back to a uniform other node.
constexpr int kSelfLoopTries = 64;

// ---------------------------------------------------------------------------------------------
// The model shared by every phase.

struct Model {
  int64_t num_nodes = 0;
  int64_t num_classes = 0;
  int64_t feat_dim = 0;
  std::vector<uint32_t> community;        // [N] true class
  std::vector<AliasBucket> global;        // [N] over all nodes, by weight
  std::vector<int64_t> community_offset;  // [C + 1] into community_members / community_alias
  std::vector<uint32_t> community_members;
  std::vector<AliasBucket> community_alias;  // per community, over positions in its members
  std::vector<float> centroids;              // [C, F]
  std::vector<double> weight;                // [N] the Chung-Lu weights
};

// Chung-Lu weights: Pareto(1, gamma - 1) draws, capped at the c where the largest expected total
// degree, avg_degree * c / mean(min(w, c)), reaches sqrt(2 E). That ratio grows with c, so
// bisection finds it.
std::vector<double> DrawWeights(const GenerateOptions& o) {
  const int64_t n = o.num_nodes;
  std::vector<double> w(n);
  std::mt19937_64 rng = MakeRng(o.seed, Stream::kWeights);
  const double inv_alpha = 1.0 / (o.power_law_exponent - 1.0);
  double w_max = 1.0;
  for (int64_t v = 0; v < n; ++v) {
    w[v] = std::pow(1.0 - Uniform01(rng), -inv_alpha);
    if (!std::isfinite(w[v]) || w[v] > 1e290) w[v] = 1e290;  // sums stay finite
    w_max = std::max(w_max, w[v]);
  }
  const double avg_degree = 2.0 * static_cast<double>(o.num_edges) / static_cast<double>(n);
  const double degree_cap = std::sqrt(2.0 * static_cast<double>(o.num_edges));
  auto mean_capped = [&](double c) {
    double s = 0;
    for (double x : w) s += std::min(x, c);
    return s / static_cast<double>(n);
  };
  double cap = w_max;
  if (o.num_edges == 0 || degree_cap <= avg_degree) {
    cap = 1.0;  // denser than any skew allows: uniform
  } else if (avg_degree * w_max / mean_capped(w_max) > degree_cap) {
    double lo = 1.0, hi = w_max;  // ratio(lo) = 1 <= target < ratio(hi)
    for (int it = 0; it < 64 && hi / lo > 1.0 + 1e-9; ++it) {
      const double mid = std::sqrt(lo * hi);
      if (avg_degree * mid / mean_capped(mid) > degree_cap) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    cap = lo;
  }
  for (double& x : w) x = std::min(x, cap);
  return w;
}

Model BuildModel(const GenerateOptions& o) {
  Model m;
  m.num_nodes = o.num_nodes;
  m.num_classes = o.num_classes;
  m.feat_dim = o.feat_dim;
  const int64_t n = o.num_nodes;
  const int64_t c = o.num_classes;

  std::vector<double> w = DrawWeights(o);
  m.global = BuildAlias(w.data(), w.size());

  // Communities: a shuffled deal, so sizes are within one of each other.
  {
    std::vector<uint32_t> order(n);
    for (int64_t v = 0; v < n; ++v) order[v] = static_cast<uint32_t>(v);
    std::mt19937_64 rng = MakeRng(o.seed, Stream::kCommunities);
    Shuffle(order, rng);
    m.community.resize(n);
    for (int64_t i = 0; i < n; ++i) m.community[order[i]] = static_cast<uint32_t>(i % c);
  }
  m.community_offset.assign(c + 1, 0);
  for (int64_t v = 0; v < n; ++v) ++m.community_offset[m.community[v] + 1];
  for (int64_t k = 0; k < c; ++k) m.community_offset[k + 1] += m.community_offset[k];
  m.community_members.resize(n);
  {
    std::vector<int64_t> fill(m.community_offset.begin(), m.community_offset.end() - 1);
    for (int64_t v = 0; v < n; ++v) m.community_members[fill[m.community[v]]++] = v;
  }
  m.community_alias.resize(n);
  {
    std::vector<double> cw;
    for (int64_t k = 0; k < c; ++k) {
      const int64_t b = m.community_offset[k], e = m.community_offset[k + 1];
      cw.resize(e - b);
      for (int64_t i = b; i < e; ++i) cw[i - b] = w[m.community_members[i]];
      std::vector<AliasBucket> t = BuildAlias(cw.data(), cw.size());
      std::copy(t.begin(), t.end(), m.community_alias.begin() + b);
    }
  }

  m.centroids.resize(c * o.feat_dim);
  {
    std::mt19937_64 rng = MakeRng(o.seed, Stream::kCentroids);
    NormalSampler normal;
    const double scale = kCentroidNorm / std::sqrt(static_cast<double>(o.feat_dim));
    for (float& x : m.centroids) x = static_cast<float>(scale * normal(rng));
  }
  m.weight = std::move(w);
  return m;
}

// Edges [begin, begin + count) of chunk `chunk`, as (src, dst) pairs.
void GenerateEdges(const Model& m, const GenerateOptions& o, int64_t chunk, int64_t count,
                   int64_t* out) {
  std::mt19937_64 rng = MakeRng(o.seed, Stream::kEdges, chunk);
  const uint64_t n = m.num_nodes;
  const AliasBucket* global = m.global.data();
  const double intra = o.intra_class_prob;
  for (int64_t k = 0; k < count; ++k) {
    const uint32_t src = SampleAlias(global, n, rng());
    const bool inside = Uniform01(rng) < intra;
    const uint32_t cls = m.community[src];
    const int64_t cb = m.community_offset[cls];
    const uint64_t cn = m.community_offset[cls + 1] - cb;
    uint32_t dst = src;
    for (int t = 0; t < kSelfLoopTries && dst == src; ++t) {
      if (inside) {
        dst = m.community_members[cb + SampleAlias(m.community_alias.data() + cb, cn, rng())];
      } else {
        dst = SampleAlias(global, n, rng());
      }
    }
    if (dst == src) {  // e.g. a community of one: any other node, uniformly
      dst = static_cast<uint32_t>((src + 1 + UniformInt(rng, n - 1)) % n);
    }
    out[2 * k] = src;
    out[2 * k + 1] = dst;
  }
}

void GenerateEdgeWeights(const GenerateOptions& o, int64_t chunk, int64_t count, float* out) {
  std::mt19937_64 rng = MakeRng(o.seed, Stream::kEdgeWeights, chunk);
  constexpr float kBelowOne = 0x1.fffffep-1f;
  for (int64_t k = 0; k < count; ++k) {
    out[k] = std::min(static_cast<float>(0.1 + 0.9 * Uniform01(rng)), kBelowOne);
  }
}

// Feature rows [begin, begin + rows) of chunk `chunk`.
void GenerateFeatures(const Model& m, const GenerateOptions& o, int64_t chunk, int64_t begin,
                      int64_t rows, float* out) {
  std::mt19937_64 rng = MakeRng(o.seed, Stream::kFeatures, chunk);
  NormalSampler normal;
  const int64_t f = m.feat_dim;
  const double sigma = o.feature_noise;
  for (int64_t r = 0; r < rows; ++r) {
    const float* mu = m.centroids.data() + static_cast<int64_t>(m.community[begin + r]) * f;
    float* row = out + r * f;
    for (int64_t j = 0; j < f; ++j) row[j] = static_cast<float>(mu[j] + sigma * normal(rng));
  }
}

std::vector<int64_t> MakeLabels(const Model& m, const GenerateOptions& o) {
  std::vector<int64_t> labels(m.num_nodes);
  std::mt19937_64 rng = MakeRng(o.seed, Stream::kLabels);
  for (int64_t v = 0; v < m.num_nodes; ++v) {
    labels[v] = Uniform01(rng) < o.label_noise
                    ? static_cast<int64_t>(UniformInt(rng, m.num_classes))
                    : static_cast<int64_t>(m.community[v]);
  }
  return labels;
}

struct Split {
  std::vector<int64_t> train, valid, test;
};

Split MakeSplit(const GenerateOptions& o) {
  const int64_t n = o.num_nodes;
  const SplitSizes sizes = ComputeSplitSizes(o);
  const int64_t n_train = sizes.train, n_valid = sizes.valid;
  std::vector<int64_t> order(n);
  for (int64_t v = 0; v < n; ++v) order[v] = v;
  std::mt19937_64 rng = MakeRng(o.seed, Stream::kSplit);
  Shuffle(order, rng);
  Split s;
  s.train.assign(order.begin(), order.begin() + n_train);
  s.valid.assign(order.begin() + n_train, order.begin() + n_train + n_valid);
  s.test.assign(order.begin() + n_train + n_valid, order.end());
  std::sort(s.train.begin(), s.train.end());
  std::sort(s.valid.begin(), s.valid.end());
  std::sort(s.test.begin(), s.test.end());
  return s;
}

// ---------------------------------------------------------------------------------------------
// Chunk pipeline.

int NumWorkers() {
  const unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp<unsigned>(hw, 1, 8));
}

// Produces chunks 0..num_chunks-1 on worker threads, a few ahead, and consumes them in order on
// the calling thread. On a consume error the chunks in flight finish and are dropped.
template <typename Chunk>
absl::Status RunChunks(int64_t num_chunks, const std::function<void(int64_t, Chunk*)>& produce,
                       const std::function<absl::Status(int64_t, Chunk&)>& consume) {
  const size_t ahead = static_cast<size_t>(NumWorkers());
  std::deque<std::future<Chunk>> pending;
  int64_t next = 0;
  auto launch = [&] {
    pending.push_back(std::async(std::launch::async, [&produce, chunk = next] {
      Chunk c;
      produce(chunk, &c);
      return c;
    }));
    ++next;
  };
  while (next < num_chunks && pending.size() < ahead) launch();
  for (int64_t i = 0; i < num_chunks; ++i) {
    Chunk c = pending.front().get();
    pending.pop_front();
    if (next < num_chunks) launch();
    RETURN_IF_ERROR(consume(i, c));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Gzip text output for the OGB layout.

class GzWriter {
 public:
  static absl::StatusOr<std::unique_ptr<GzWriter>> Open(const std::string& path) {
    std::unique_ptr<GzWriter> w(new GzWriter());
    w->path_ = path;
    w->gz_ = gzopen(path.c_str(), "wb1");
    if (w->gz_ == nullptr) {
      return absl::InternalError(StrCat(path, ": cannot create: ", std::strerror(errno)));
    }
    if (gzbuffer(w->gz_, 1 << 20) != 0) {
      return absl::InternalError(StrCat(path, ": gzbuffer failed"));
    }
    return w;
  }
  ~GzWriter() {
    if (gz_ != nullptr) gzclose(gz_);
  }
  absl::Status Write(std::string_view s) {
    while (!s.empty()) {
      const unsigned piece = static_cast<unsigned>(std::min<size_t>(s.size(), 1u << 30));
      if (gzwrite(gz_, s.data(), piece) != static_cast<int>(piece)) return Error("write failed");
      s.remove_prefix(piece);
    }
    return absl::OkStatus();
  }
  absl::Status Close() {
    const int rc = gzclose(gz_);
    gz_ = nullptr;
    if (rc != Z_OK) {
      return absl::InternalError(
          StrCat(path_, ": close failed (zlib error ", rc, ", ", std::strerror(errno), ")"));
    }
    return absl::OkStatus();
  }

 private:
  GzWriter() = default;
  absl::Status Error(const char* what) {
    int err = Z_OK;
    const char* msg = gzerror(gz_, &err);
    return absl::InternalError(
        StrCat(path_, ": ", what, ": ", err == Z_ERRNO ? std::strerror(errno) : msg));
  }
  std::string path_;
  gzFile gz_ = nullptr;
};

template <typename T>
void AppendNumber(std::string* s, T v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round-trip for floats
  s->append(buf, r.ptr);
}

absl::Status WriteGzLines(const std::string& path, const std::vector<int64_t>& values) {
  ASSIGN_OR_RETURN(auto w, GzWriter::Open(path));
  std::string text;
  text.reserve(values.size() * 8 + 1);
  for (int64_t v : values) {
    AppendNumber(&text, v);
    text.push_back('\n');
  }
  RETURN_IF_ERROR(w->Write(text));
  return w->Close();
}

// ---------------------------------------------------------------------------------------------
// Writers for the two layouts. Each chunk carries the binary values and, for the OGB layout,
// their text.

struct EdgeChunk {
  std::vector<int64_t> pairs;
  std::vector<float> weights;
  std::string text, weight_text;
};

struct FeatureChunk {
  std::vector<float> values;
  std::vector<uint16_t> halves;  // --feat-dtype float16
  std::string text;
};

// Where one node type's and one relation's files go. The plain graph fills them per layout
// (PlainLayout); a typed preset per type and relation.
struct Layout {
  fs::path feat, label, train, valid, test;
  fs::path edges, edge_weight;
  fs::path num_edges;      // OGB: the edge count file ("" = none)
  fs::path edge_reltype;   // OGB heterogeneous: the relation index per edge ("" = none)
  int reltype = 0;
};

Layout PlainLayout(const GenerateOptions& o, const fs::path& dir) {
  if (o.format == DatasetFormat::kOgb) {
    const fs::path raw = dir / "raw", split = dir / "split" / o.split_name;
    return {.feat = raw / "node-feat.csv.gz", .label = raw / "node-label.csv.gz", .train = split / "train.csv.gz",
            .valid = split / "valid.csv.gz", .test = split / "test.csv.gz", .edges = raw / "edge.csv.gz",
            .edge_weight = raw / "edge-feat.csv.gz", .num_edges = raw / "num-edge-list.csv.gz"};
  }
  return {.feat = dir / "node_feat.npy", .label = dir / "node_label.npy", .train = dir / "train_idx.npy",
          .valid = dir / "valid_idx.npy", .test = dir / "test_idx.npy", .edges = dir / "edges.npy",
          .edge_weight = dir / "edge_data" / "weight.npy"};
}

absl::Status MkDir(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p, ec);
  if (ec) return absl::InternalError(StrCat("cannot create ", p.string(), ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status WriteFeatures(const Model& m, const GenerateOptions& o, const fs::path& path) {
  const bool ogb = o.format == DatasetFormat::kOgb;
  const int64_t n = m.num_nodes, f = m.feat_dim;
  const int64_t rows_per_chunk = std::max<int64_t>(1, kFeatureChunkValues / f);
  const int64_t num_chunks = (n + rows_per_chunk - 1) / rows_per_chunk;
  std::unique_ptr<core::NpyWriter> npy;
  std::unique_ptr<GzWriter> gz;
  if (ogb) {
    ASSIGN_OR_RETURN(gz, GzWriter::Open(path.string()));
  } else {
    ASSIGN_OR_RETURN(npy, core::NpyWriter::Open(path.string(), o.feat_dtype, {n, f}));
  }
  base::Progress progress("generate", "feature rows", n);
  std::function<void(int64_t, FeatureChunk*)> produce = [&](int64_t chunk, FeatureChunk* c) {
    const int64_t begin = chunk * rows_per_chunk;
    const int64_t rows = std::min(rows_per_chunk, n - begin);
    c->values.resize(rows * f);
    GenerateFeatures(m, o, chunk, begin, rows, c->values.data());
    if (o.feat_dtype == core::DType::kFloat16) {
      c->halves.resize(c->values.size());
      for (size_t i = 0; i < c->values.size(); ++i) c->halves[i] = core::FloatToHalf(c->values[i]);
    }
    if (ogb) {
      c->text.reserve(rows * f * 12);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < f; ++j) {
          if (j > 0) c->text.push_back(',');
          AppendNumber(&c->text, c->values[r * f + j]);
        }
        c->text.push_back('\n');
      }
    }
  };
  std::function<absl::Status(int64_t, FeatureChunk&)> consume = [&](int64_t chunk,
                                                                    FeatureChunk& c) {
    if (ogb) {
      RETURN_IF_ERROR(gz->Write(c.text));
    } else if (o.feat_dtype == core::DType::kFloat16) {
      RETURN_IF_ERROR(npy->Append(c.halves.data(), c.halves.size() * sizeof(uint16_t)));
    } else {
      RETURN_IF_ERROR(npy->Append(c.values.data(), c.values.size() * sizeof(float)));
    }
    progress.Report(std::min(n, (chunk + 1) * rows_per_chunk));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(RunChunks(num_chunks, produce, consume));
  return ogb ? gz->Close() : npy->Close();
}

// Draws `count` edges of chunk `chunk` into out (src, dst pairs).
using EdgeGenerator = std::function<void(int64_t chunk, int64_t count, int64_t* out)>;

// Writes `e` edges drawn by `generate` (with weights on request) to the files `l` names.
absl::Status WriteEdges(const EdgeGenerator& generate, int64_t e, const GenerateOptions& o, const Layout& l) {
  const bool ogb = o.format == DatasetFormat::kOgb;
  const int64_t num_chunks = (e + kEdgeChunk - 1) / kEdgeChunk;
  std::unique_ptr<core::NpyWriter> npy, npy_weight;
  std::unique_ptr<GzWriter> gz, gz_weight, gz_type;
  const std::string type_line = StrCat(l.reltype, "\n");
  if (ogb) {
    ASSIGN_OR_RETURN(gz, GzWriter::Open(l.edges.string()));
    if (o.edge_weights) {
      ASSIGN_OR_RETURN(gz_weight, GzWriter::Open(l.edge_weight.string()));
    }
    if (!l.edge_reltype.empty()) {
      ASSIGN_OR_RETURN(gz_type, GzWriter::Open(l.edge_reltype.string()));
    }
  } else {
    ASSIGN_OR_RETURN(npy, core::NpyWriter::Open(l.edges.string(), core::DType::kInt64, {e, 2}));
    if (o.edge_weights) {
      RETURN_IF_ERROR(MkDir(l.edge_weight.parent_path()));
      ASSIGN_OR_RETURN(npy_weight, core::NpyWriter::Open(l.edge_weight.string(), core::DType::kFloat32, {e}));
    }
  }
  base::Progress progress("generate", "edges", e);
  std::function<void(int64_t, EdgeChunk*)> produce = [&](int64_t chunk, EdgeChunk* c) {
    const int64_t count = std::min(kEdgeChunk, e - chunk * kEdgeChunk);
    c->pairs.resize(2 * count);
    generate(chunk, count, c->pairs.data());
    if (o.edge_weights) {
      c->weights.resize(count);
      GenerateEdgeWeights(o, chunk, count, c->weights.data());
    }
    if (ogb) {
      c->text.reserve(count * 16);
      for (int64_t k = 0; k < count; ++k) {
        AppendNumber(&c->text, c->pairs[2 * k]);
        c->text.push_back(',');
        AppendNumber(&c->text, c->pairs[2 * k + 1]);
        c->text.push_back('\n');
      }
      if (o.edge_weights) {
        c->weight_text.reserve(count * 12);
        for (float x : c->weights) {
          AppendNumber(&c->weight_text, x);
          c->weight_text.push_back('\n');
        }
      }
    }
  };
  std::function<absl::Status(int64_t, EdgeChunk&)> consume = [&](int64_t chunk, EdgeChunk& c) {
    if (ogb) {
      RETURN_IF_ERROR(gz->Write(c.text));
      if (gz_weight != nullptr) RETURN_IF_ERROR(gz_weight->Write(c.weight_text));
      if (gz_type != nullptr) {
        std::string types;
        types.reserve(type_line.size() * c.pairs.size() / 2);
        for (size_t k = 0; k < c.pairs.size() / 2; ++k) types += type_line;
        RETURN_IF_ERROR(gz_type->Write(types));
      }
    } else {
      RETURN_IF_ERROR(npy->Append(c.pairs.data(), c.pairs.size() * sizeof(int64_t)));
      if (npy_weight != nullptr) {
        RETURN_IF_ERROR(npy_weight->Append(c.weights.data(), c.weights.size() * sizeof(float)));
      }
    }
    progress.Report(std::min(e, (chunk + 1) * kEdgeChunk));
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(RunChunks(num_chunks, produce, consume));
  if (ogb) {
    RETURN_IF_ERROR(gz->Close());
    if (gz_weight != nullptr) RETURN_IF_ERROR(gz_weight->Close());
    if (gz_type != nullptr) RETURN_IF_ERROR(gz_type->Close());
    if (!l.num_edges.empty()) RETURN_IF_ERROR(WriteGzLines(l.num_edges.string(), {e}));
  } else {
    RETURN_IF_ERROR(npy->Close());
    if (npy_weight != nullptr) RETURN_IF_ERROR(npy_weight->Close());
  }
  return absl::OkStatus();
}

// Labels and the split of the nodes `m` models, to the files `l` names.
absl::Status WriteNodeData(const Model& m, const GenerateOptions& o, const Layout& l) {
  const std::vector<int64_t> labels = MakeLabels(m, o);
  GenerateOptions sized = o;
  sized.num_nodes = m.num_nodes;
  const Split split = MakeSplit(sized);
  RETURN_IF_ERROR(MkDir(l.train.parent_path()));
  RETURN_IF_ERROR(MkDir(l.label.parent_path()));
  if (o.format == DatasetFormat::kOgb) {
    RETURN_IF_ERROR(WriteGzLines(l.label.string(), labels));
    RETURN_IF_ERROR(WriteGzLines(l.train.string(), split.train));
    RETURN_IF_ERROR(WriteGzLines(l.valid.string(), split.valid));
    RETURN_IF_ERROR(WriteGzLines(l.test.string(), split.test));
  } else {
    RETURN_IF_ERROR(core::WriteNpy(l.label.string(), labels));
    RETURN_IF_ERROR(core::WriteNpy(l.train.string(), split.train));
    RETURN_IF_ERROR(core::WriteNpy(l.valid.string(), split.valid));
    RETURN_IF_ERROR(core::WriteNpy(l.test.string(), split.test));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Typed presets (TypedPreset): each node type with its own Chung-Lu weights and communities
// (BuildModel), the communities standing for research areas: an author writes mostly in its
// area, a paper's topics and an author's institution mostly share its area, and papers cite as
// the plain graph's nodes link. One type (papers) has labels and a split; the preset says which
// types have features (ogbn-mag: papers only; IGBH: every type).

// Relations are drawn source by source, so that a source's edges can be distinct, as a real
// relation's are (an author writes a paper once): each source s gets d_s edges, its share of the
// relation's count by Chung-Lu weight (rounded so that the shares add up exactly), and draws d_s
// distinct destinations. Edge i of the relation belongs to the source whose range of
// `offset` (S + 1 running counts) holds i, so any chunk of edges can be made on its own.
std::vector<int64_t> SourceOffsets(const Model& src, int64_t count) {
  double total = 0;
  for (double w : src.weight) total += w;
  std::vector<int64_t> offset(src.num_nodes + 1, 0);
  double running = 0;
  for (int64_t s = 0; s < src.num_nodes; ++s) {
    running += src.weight[s];
    offset[s + 1] = std::min<int64_t>(count, std::llround(static_cast<double>(count) * running / total));
  }
  offset[src.num_nodes] = count;
  return offset;
}

// Edges [begin, begin + count) of relation `rel` from `src`'s nodes to `dst`'s (the two may be
// the same type: then no self loops). A source's destinations: with probability intra_class_prob
// by weight within its community (modulo dst's community count), otherwise by weight over all of
// dst's nodes; a destination already drawn for that source is drawn again (up to 64 times each,
// so a source with more edges than possible destinations still gets its count).
void GenerateRelationEdges(const Model& src, const Model& dst, const std::vector<int64_t>& offset,
                           const GenerateOptions& o, int rel, int64_t begin, int64_t count, int64_t* out) {
  const bool same = &src == &dst;
  int64_t s = std::upper_bound(offset.begin(), offset.end(), begin) - offset.begin() - 1;
  std::vector<int64_t> drawn;
  std::unordered_set<int64_t> seen;  // drawn, for the distinctness check
  for (int64_t i = begin; i < begin + count; ++s) {
    const int64_t d = offset[s + 1] - offset[s];
    if (d == 0) continue;
    std::mt19937_64 rng = MakeRng(o.seed, Stream::kRelationEdges, (static_cast<uint64_t>(rel) << 40) + s);
    const int64_t cls = src.community[s] % dst.num_classes;
    const int64_t cb = dst.community_offset[cls];
    const uint64_t cn = dst.community_offset[cls + 1] - cb;
    drawn.clear();
    seen.clear();
    for (int64_t k = 0; k < d; ++k) {
      int64_t t = -1;
      for (int attempt = 0; attempt < 64; ++attempt) {
        const bool inside = Uniform01(rng) < o.intra_class_prob && cn > 0;
        t = inside ? dst.community_members[cb + SampleAlias(dst.community_alias.data() + cb, cn, rng())]
                   : SampleAlias(dst.global.data(), dst.num_nodes, rng());
        if ((same && t == s) || seen.count(t) > 0) continue;
        break;
      }
      if (same && t == s) t = (s + 1 + static_cast<int64_t>(UniformInt(rng, dst.num_nodes - 1))) % dst.num_nodes;
      drawn.push_back(t);
      seen.insert(t);
    }
    // This chunk's part of the source's edges.
    for (int64_t k = std::max<int64_t>(0, i - offset[s]); k < d && i < begin + count; ++k, ++i) {
      out[2 * (i - begin)] = s;
      out[2 * (i - begin) + 1] = drawn[k];
    }
  }
}

absl::Status GenerateTyped(const GenerateOptions& o, const TypedShape& shape, const fs::path& dir) {
  const bool ogb = o.format == DatasetFormat::kOgb;
  const int num_types = static_cast<int>(shape.node_types.size());
  // One model per type; its weights are capped by the edges that touch it. The labelled type
  // keeps the seed itself.
  std::vector<GenerateOptions> type_options(num_types, o);
  std::vector<Model> models;
  for (int t = 0; t < num_types; ++t) {
    GenerateOptions& to = type_options[t];
    to.num_nodes = shape.node_types[t].count;
    to.num_edges = 0;
    for (const TypedRelation& r : shape.relations) to.num_edges += (r.src == t || r.dst == t) ? r.count : 0;
    to.num_classes = std::min(o.num_classes, to.num_nodes);
    if (t != shape.labelled) to.seed = SplitMix64(o.seed ^ (0x6d6167ull + t));
    models.push_back(BuildModel(to));
  }
  auto name = [&](int t) { return shape.node_types[t].name; };

  // Schema files.
  if (ogb) {
    const fs::path raw = dir / "raw";
    RETURN_IF_ERROR(MkDir(raw));
    std::string header, sizes, triplets;
    for (int t = 0; t < num_types; ++t) {
      header += StrCat(t ? "," : "", name(t));
      sizes += StrCat(t ? "," : "", shape.node_types[t].count);
    }
    for (const TypedRelation& r : shape.relations) triplets += StrCat(name(r.src), ",", r.name, ",", name(r.dst), "\n");
    ASSIGN_OR_RETURN(auto w, GzWriter::Open((raw / "num-node-dict.csv.gz").string()));
    RETURN_IF_ERROR(w->Write(header + "\n" + sizes + "\n"));
    RETURN_IF_ERROR(w->Close());
    ASSIGN_OR_RETURN(w, GzWriter::Open((raw / "triplet-type-list.csv.gz").string()));
    RETURN_IF_ERROR(w->Write(triplets));
    RETURN_IF_ERROR(w->Close());
  } else {
    std::string json = "{";
    for (int t = 0; t < num_types; ++t) json += StrCat(t ? ", " : "", "\"", name(t), "\": ", shape.node_types[t].count);
    std::FILE* f = std::fopen((dir / "num_nodes.json").c_str(), "w");
    if (f == nullptr || std::fputs((json + "}\n").c_str(), f) < 0 || std::fclose(f) != 0) {
      return absl::InternalError(StrCat("cannot write ", (dir / "num_nodes.json").string()));
    }
  }

  // The labelled type's labels and split, and every featured type's features.
  const GenerateOptions& labelled = type_options[shape.labelled];
  {
    const std::string t = name(shape.labelled);
    Layout l;
    if (ogb) {
      const fs::path split = dir / "split" / o.split_name / t;
      l = {.label = dir / "raw" / "node-label" / t / "node-label.csv.gz", .train = split / "train.csv.gz",
           .valid = split / "valid.csv.gz", .test = split / "test.csv.gz"};
    } else {
      l = {.label = dir / "node_data" / t / "label.npy", .train = dir / "split" / t / "train_idx.npy",
           .valid = dir / "split" / t / "valid_idx.npy", .test = dir / "split" / t / "test_idx.npy"};
    }
    RETURN_IF_ERROR(WriteNodeData(models[shape.labelled], labelled, l));
  }
  for (int t = 0; t < num_types; ++t) {
    if (!shape.node_types[t].features) continue;
    const fs::path feat = ogb ? dir / "raw" / "node-feat" / name(t) / "node-feat.csv.gz"
                              : dir / "node_data" / name(t) / "feat.npy";
    RETURN_IF_ERROR(MkDir(feat.parent_path()));
    RETURN_IF_ERROR(WriteFeatures(models[t], type_options[t], feat));
  }

  // Relations.
  for (int r = 0; r < static_cast<int>(shape.relations.size()); ++r) {
    const TypedRelation& rel = shape.relations[r];
    const std::string folder = StrCat(name(rel.src), "___", rel.name, "___", name(rel.dst));
    Layout l;
    if (ogb) {
      const fs::path d = dir / "raw" / "relations" / folder;
      RETURN_IF_ERROR(MkDir(d));
      l = {.edges = d / "edge.csv.gz", .num_edges = d / "num-edge-list.csv.gz", .edge_reltype = d / "edge_reltype.csv.gz",
           .reltype = r};
    } else {
      RETURN_IF_ERROR(MkDir(dir / "edges"));
      l = {.edges = dir / "edges" / (folder + ".npy")};
    }
    const std::vector<int64_t> offset = SourceOffsets(models[rel.src], rel.count);
    const EdgeGenerator generate = [&, r](int64_t chunk, int64_t count, int64_t* out) {
      GenerateRelationEdges(models[rel.src], models[rel.dst], offset, o, r, chunk * kEdgeChunk, count, out);
    };
    RETURN_IF_ERROR(WriteEdges(generate, rel.count, o, l));
  }
  return absl::OkStatus();
}

absl::Status InUnitInterval(const char* flag, double x) {
  if (x >= 0.0 && x <= 1.0) return absl::OkStatus();
  return absl::InvalidArgumentError(StrCat(flag, " must be in [0, 1], got ", x));
}

}  // namespace

SplitSizes ComputeSplitSizes(const GenerateOptions& o) {
  const std::optional<TypedShape> shape =
      o.typed_preset.empty() ? std::nullopt : TypedPreset(o.typed_preset, o.scale);
  const int64_t n = shape ? shape->node_types[shape->labelled].count : o.num_nodes;
  SplitSizes s;
  s.train = std::clamp<int64_t>(std::llround(o.train_frac * n), 0, n);
  s.valid = std::clamp<int64_t>(std::llround(o.valid_frac * n), 0, n - s.train);
  s.test = n - s.train - s.valid;
  return s;
}

absl::Status ValidateGenerateOptions(const GenerateOptions& o) {
  constexpr int64_t kMaxNodes = std::numeric_limits<int32_t>::max();
  if (o.out_dir.empty()) return absl::InvalidArgumentError("--out is required");
  if (!o.typed_preset.empty()) {
    const std::optional<TypedShape> base = TypedPreset(o.typed_preset, 1.0);
    if (!base) {
      std::string names;
      for (const std::string& n : TypedPresetNames()) names += StrCat(names.empty() ? "" : ", ", n);
      return absl::InvalidArgumentError(StrCat("'", o.typed_preset, "' is not a typed preset (", names, ")"));
    }
    // Every type's count must be a valid --num-nodes of its own (the alias tables are 32-bit).
    int64_t largest = 0;
    for (const TypedNodeType& t : base->node_types) largest = std::max(largest, t.count);
    const double limit = static_cast<double>(kMaxNodes) / static_cast<double>(largest);
    if (!(o.scale > 0) || !std::isfinite(o.scale) || o.scale > limit) {
      return absl::InvalidArgumentError(StrCat("--scale must be > 0 and keep every node type of --preset ", o.typed_preset,
                                               " under ", kMaxNodes, " nodes (at most about ",
                                               static_cast<int64_t>(limit), "), got ", o.scale));
    }
    if (o.edge_weights) {
      return absl::InvalidArgumentError(StrCat("--edge-weights is not available with --preset ", o.typed_preset));
    }
    const TypedShape shape = *TypedPreset(o.typed_preset, o.scale);
    GenerateOptions labelled = o;
    labelled.typed_preset.clear();
    labelled.num_nodes = shape.node_types[shape.labelled].count;
    labelled.num_edges = shape.edges();
    return ValidateGenerateOptions(labelled);
  }
  if (o.num_nodes < 2 || o.num_nodes > kMaxNodes) {
    return absl::InvalidArgumentError(
        StrCat("--num-nodes must be in [2, ", kMaxNodes, "], got ", o.num_nodes));
  }
  if (o.num_edges < 0) {
    return absl::InvalidArgumentError(StrCat("--num-edges must be >= 0, got ", o.num_edges));
  }
  if (o.feat_dim < 1) {
    return absl::InvalidArgumentError(StrCat("--feat-dim must be >= 1, got ", o.feat_dim));
  }
  if (o.feat_dtype != core::DType::kFloat32 && o.feat_dtype != core::DType::kFloat16) {
    return absl::InvalidArgumentError(StrCat("--feat-dtype must be float32 or float16, got ",
                                             core::DTypeName(o.feat_dtype)));
  }
  if (o.feat_dtype != core::DType::kFloat32 && o.format == DatasetFormat::kOgb) {
    return absl::InvalidArgumentError(
        "--feat-dtype float16 needs --format npy: OGB's raw layout stores features as text");
  }
  if (o.num_classes < 1 || o.num_classes > o.num_nodes) {
    return absl::InvalidArgumentError(
        StrCat("--num-classes must be in [1, num_nodes=", o.num_nodes, "], got ", o.num_classes));
  }
  if (o.num_classes > (int64_t{1} << 31) / o.feat_dim) {
    return absl::InvalidArgumentError(
        StrCat("--num-classes times --feat-dim must be at most 2^31 (the class centroids), got ",
               o.num_classes, " x ", o.feat_dim));
  }
  if (!(o.power_law_exponent > 1.0) || !std::isfinite(o.power_law_exponent)) {
    return absl::InvalidArgumentError(
        StrCat("--power-law-exponent must be > 1, got ", o.power_law_exponent));
  }
  RETURN_IF_ERROR(InUnitInterval("--intra-class-prob", o.intra_class_prob));
  if (!(o.feature_noise >= 0.0) || !std::isfinite(o.feature_noise)) {
    return absl::InvalidArgumentError(
        StrCat("--feature-noise must be >= 0, got ", o.feature_noise));
  }
  RETURN_IF_ERROR(InUnitInterval("--label-noise", o.label_noise));
  RETURN_IF_ERROR(InUnitInterval("--train-frac", o.train_frac));
  RETURN_IF_ERROR(InUnitInterval("--valid-frac", o.valid_frac));
  if (o.train_frac + o.valid_frac > 1.0 + 1e-12) {
    return absl::InvalidArgumentError(StrCat("--train-frac + --valid-frac must be <= 1, got ",
                                             o.train_frac, " + ", o.valid_frac));
  }
  if (o.format == DatasetFormat::kOgb &&
      (o.split_name.empty() || o.split_name == "." || o.split_name == ".." ||
       o.split_name.find('/') != std::string::npos)) {
    return absl::InvalidArgumentError(
        StrCat("--split-name must be a plain folder name, got \"", o.split_name, "\""));
  }
  return absl::OkStatus();
}

absl::Status GenerateDataset(const GenerateOptions& options) {
  RETURN_IF_ERROR(ValidateGenerateOptions(options));
  const base::StagingOptions so{.tool = "fanout-generate", .overwrite = options.overwrite};
  ASSIGN_OR_RETURN(base::StagingDir staging, base::StagingDir::Create(options.out_dir, so));
  const fs::path dir(staging.path());
  if (options.format == DatasetFormat::kOgb) RETURN_IF_ERROR(MkDir(dir / "raw"));

  if (!options.typed_preset.empty()) {
    RETURN_IF_ERROR(GenerateTyped(options, *TypedPreset(options.typed_preset, options.scale), dir));
    return staging.Commit();
  }
  const Model model = BuildModel(options);
  const Layout layout = PlainLayout(options, dir);
  RETURN_IF_ERROR(WriteNodeData(model, options, layout));
  if (options.format == DatasetFormat::kOgb) {
    RETURN_IF_ERROR(WriteGzLines((dir / "raw" / "num-node-list.csv.gz").string(), {options.num_nodes}));
  }
  RETURN_IF_ERROR(WriteFeatures(model, options, layout.feat));
  RETURN_IF_ERROR(WriteEdges([&](int64_t chunk, int64_t count, int64_t* out) { GenerateEdges(model, options, chunk, count, out); },
                             options.num_edges, options, layout));
  return staging.Commit();
}

}  // namespace fanout::partition

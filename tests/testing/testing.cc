#include "tests/testing/testing.h"

#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <tuple>

#include "base/process_stats.h"
#include "base/spawn.h"
#include "base/strings.h"
#include "core/npy.h"
#include "core/partition_config.h"
#include <nlohmann/json.hpp>

extern char** environ;

namespace fanout::testing {

namespace fs = std::filesystem;
using core::NpyArray;
using partition::Dataset;

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "fanout-test-XXXXXX").string();
  char* p = ::mkdtemp(tmpl.data());
  if (p == nullptr) std::abort();
  path_ = p;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string SharedDataDir() {
  if (const char* env = std::getenv("FANOUT_SHARED_DATA")) {
    return fs::is_directory(env) ? env : "";
  }
  fs::path p = fs::path(FANOUT_SOURCE_DIR) / ".." / "shared" / "data";
  std::error_code ec;
  return fs::is_directory(p, ec) ? fs::canonical(p).string() : "";
}

Dataset MakeRandomDataset(const RandomGraphSpec& s) {
  std::mt19937_64 rng(s.seed);
  Dataset d;
  d.name = "random";
  d.layout = "memory";
  d.num_nodes = s.num_nodes;
  auto node = [&](int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng); };
  std::vector<int64_t> e;
  for (int64_t i = 0; i < s.num_edges; ++i) {
    int64_t u = node(s.num_nodes), v;
    // 80% of edges inside the community (u mod C), so a good partitioner has structure to find.
    do {
      if (std::uniform_real_distribution<>(0, 1)(rng) < 0.8) {
        v = (node(s.num_nodes / s.num_classes) * s.num_classes + u % s.num_classes) % s.num_nodes;
      } else {
        v = node(s.num_nodes);
      }
    } while (v == u);
    e.push_back(u);
    e.push_back(v);
  }
  for (int64_t i = 0; i < s.self_loops; ++i) {
    int64_t v = node(s.num_nodes);
    e.push_back(v);
    e.push_back(v);
  }
  for (int64_t i = 0; i < s.duplicates && s.num_edges > 0; ++i) {
    int64_t j = node(s.num_edges);
    e.push_back(e[2 * j]);
    e.push_back(e[2 * j + 1]);
  }
  int64_t m = static_cast<int64_t>(e.size() / 2);
  d.edges = NpyArray::Adopt(std::move(e), {m, 2});
  d.edges_source = "memory";
  d.num_nodes_source = "memory";
  std::vector<float> feat(s.num_nodes * s.feat_dim);
  for (int64_t v = 0; v < s.num_nodes; ++v) {
    for (int64_t j = 0; j < s.feat_dim; ++j) feat[v * s.feat_dim + j] = static_cast<float>(v * 100 + j);
  }
  d.node_fields.push_back({"feat", NpyArray::Adopt(std::move(feat), {s.num_nodes, s.feat_dim})});
  std::vector<int64_t> label(s.num_nodes);
  for (int64_t v = 0; v < s.num_nodes; ++v) label[v] = v % s.num_classes;
  d.node_fields.push_back({"label", NpyArray::Adopt(std::move(label), {s.num_nodes})});
  d.num_classes = s.num_classes;
  std::vector<int64_t> perm(s.num_nodes);
  for (int64_t v = 0; v < s.num_nodes; ++v) perm[v] = v;
  std::shuffle(perm.begin(), perm.end(), rng);
  int64_t tr = s.num_nodes / 5, va = s.num_nodes / 5;
  d.train_idx.assign(perm.begin(), perm.begin() + tr);
  d.valid_idx.assign(perm.begin() + tr, perm.begin() + tr + va);
  d.test_idx.assign(perm.begin() + tr + va, perm.end());
  for (auto* v : {&d.train_idx, &d.valid_idx, &d.test_idx}) std::sort(v->begin(), v->end());
  d.has_split = true;
  if (s.edge_field) {
    std::vector<int64_t> w(m);
    for (int64_t i = 0; i < m; ++i) w[i] = i;
    d.edge_fields.push_back({"weight", NpyArray::Adopt(std::move(w), {m})});
  }
  return d;
}

void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

void WriteGz(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  if (!text.empty()) gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
}

namespace {
void WriteArray(const NpyArray& a, const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  ASSERT_TRUE(core::WriteNpy(path, a.dtype(), a.shape(), a.data()).ok()) << path;
}

std::string Lines(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += std::to_string(x) + "\n";
  return s;
}
}  // namespace

void WritePlainLayout(const Dataset& d, const std::string& dir) {
  WriteArray(d.edges, dir + "/edges.npy");
  for (const auto& f : d.node_fields) {
    std::string name = f.name == "feat" ? "node_feat.npy" : f.name == "label" ? "node_label.npy"
                                                                              : "node_data/" + f.name + ".npy";
    WriteArray(f.data, dir + "/" + name);
  }
  for (const auto& f : d.edge_fields) WriteArray(f.data, dir + "/edge_data/" + f.name + ".npy");
  if (d.has_split) {
    ASSERT_TRUE(core::WriteNpy(dir + "/train_idx.npy", d.train_idx).ok());
    ASSERT_TRUE(core::WriteNpy(dir + "/valid_idx.npy", d.valid_idx).ok());
    ASSERT_TRUE(core::WriteNpy(dir + "/test_idx.npy", d.test_idx).ok());
  }
}

void WriteDglChunkedLayout(const Dataset& d, const std::string& dir, const std::string& format,
                           const std::vector<int64_t>& edge_cuts, const std::vector<int64_t>& node_cuts) {
  std::filesystem::create_directories(dir + "/edges");
  std::filesystem::create_directories(dir + "/node_data");
  nlohmann::json m;
  m["graph_name"] = "plain";
  m["node_type"] = {"_N"};
  m["edge_type"] = {"_N:_E:_N"};
  auto sizes = [](const std::vector<int64_t>& cuts) {
    std::vector<int64_t> out;
    for (size_t c = 0; c + 1 < cuts.size(); ++c) out.push_back(cuts[c + 1] - cuts[c]);
    return out;
  };
  m["num_nodes_per_chunk"] = {sizes(node_cuts)};
  m["num_edges_per_chunk"] = {sizes(edge_cuts)};
  const int64_t* ed = d.edges.data_as<int64_t>();
  m["edges"]["_N:_E:_N"]["format"]["name"] = format;
  for (size_t c = 0; c + 1 < edge_cuts.size(); ++c) {
    const std::string rel = base::StrCat("edges/chunk", c, format == "csv" ? ".txt" : ".npy");
    m["edges"]["_N:_E:_N"]["data"].push_back(rel);
    if (format == "csv") {
      std::string text;
      for (int64_t i = edge_cuts[c]; i < edge_cuts[c + 1]; ++i) text += base::StrCat(ed[2 * i], " ", ed[2 * i + 1], "\n");
      WriteText(dir + "/" + rel, text);
    } else {
      ASSERT_TRUE(core::WriteNpy(dir + "/" + rel, core::DType::kInt64, {edge_cuts[c + 1] - edge_cuts[c], 2},
                                 ed + 2 * edge_cuts[c])
                      .ok());
    }
  }
  auto chunks = [&](const core::NpyArray& a, const std::vector<int64_t>& cuts, const std::string& stem) {
    nlohmann::json spec{{"format", {{"name", "numpy"}}}, {"data", nlohmann::json::array()}};
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      std::vector<int64_t> shape = a.shape();
      shape[0] = cuts[c + 1] - cuts[c];
      const std::string rel = base::StrCat(stem, c, ".npy");
      EXPECT_TRUE(core::WriteNpy(dir + "/" + rel, a.dtype(), shape, a.row(cuts[c])).ok());
      spec["data"].push_back(rel);
    }
    return spec;
  };
  for (const auto& f : d.node_fields) m["node_data"]["_N"][f.name] = chunks(f.data, node_cuts, "node_data/" + f.name);
  for (const auto& f : d.edge_fields) m["edge_data"]["_N:_E:_N"][f.name] = chunks(f.data, edge_cuts, "edges/" + f.name);
  WriteText(dir + "/metadata.json", m.dump(2));
}

void WriteOgbLayout(const Dataset& d, const std::string& dir, const std::string& split) {
  const int64_t* e = d.edges.data_as<int64_t>();
  std::string edges;
  for (int64_t i = 0; i < d.num_edges(); ++i) edges += base::StrCat(e[2 * i], ",", e[2 * i + 1], "\n");
  WriteGz(dir + "/raw/edge.csv.gz", edges);
  WriteGz(dir + "/raw/num-node-list.csv.gz", base::StrCat(d.num_nodes, "\n"));
  WriteGz(dir + "/raw/num-edge-list.csv.gz", base::StrCat(d.num_edges(), "\n"));
  for (const auto& f : d.node_fields) {
    if (f.name == "feat") {
      std::string s;
      const float* x = f.data.data_as<float>();
      for (int64_t r = 0; r < f.data.rows(); ++r) {
        for (int64_t c = 0; c < f.data.row_elems(); ++c) {
          s += base::StrCat(c ? "," : "", x[r * f.data.row_elems() + c]);
        }
        s += "\n";
      }
      WriteGz(dir + "/raw/node-feat.csv.gz", s);
    } else if (f.name == "label") {
      const int64_t* y = f.data.data_as<int64_t>();
      WriteGz(dir + "/raw/node-label.csv.gz", Lines(std::vector<int64_t>(y, y + f.data.rows())));
    }
  }
  if (d.has_split) {
    WriteGz(dir + "/split/" + split + "/train.csv.gz", Lines(d.train_idx));
    WriteGz(dir + "/split/" + split + "/valid.csv.gz", Lines(d.valid_idx));
    WriteGz(dir + "/split/" + split + "/test.csv.gz", Lines(d.test_idx));
  }
}

namespace {

struct LoadedPart {
  NpyArray indptr, indices, orig_nids, orig_eids, halo, out_indptr, out_indices, out_eids;
};

NpyArray MustMap(const std::string& path) {
  auto a = NpyArray::Map(path);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? std::move(*a) : NpyArray::Owned(core::DType::kInt64, {0});
}

}  // namespace

NpyArray MapIdsAsInt64(const std::string& path, core::DType expected) {
  NpyArray a = MustMap(path);
  EXPECT_EQ(a.dtype(), expected) << path << ": the config's ID width";
  if (a.dtype() == core::DType::kInt64) return a;
  std::vector<int64_t> wide(a.num_elements());
  core::ConvertElements(a.dtype(), a.data(), wide.size(), wide.data());
  return NpyArray::Adopt(std::move(wide), a.shape());
}

void ExpectValidPartition(const Dataset& d, const partition::PartitionOptions& o,
                          const std::string& config_path) {
  using core::PartFiles;
  auto cfg_or = core::LoadPartitionConfig(config_path);
  ASSERT_TRUE(cfg_or.ok()) << cfg_or.status();
  const core::PartitionConfig& cfg = *cfg_or;
  const int K = o.num_parts;
  const int64_t n = d.num_nodes, E = d.num_edges();
  ASSERT_EQ(cfg.num_parts, K);
  ASSERT_EQ(cfg.num_nodes, n);
  auto book = cfg.NodeBook();
  ASSERT_TRUE(book.ok());
  auto ebook = cfg.EdgeBook();
  ASSERT_TRUE(ebook.ok());

  std::vector<LoadedPart> parts(K);
  for (int k = 0; k < K; ++k) {
    auto P = [&](const char* f) { return MustMap(cfg.PartPath(k, f)); };
    auto Nodes = [&](const char* f) { return MapIdsAsInt64(cfg.PartPath(k, f), cfg.node_id_dtype); };
    auto Edges = [&](const char* f) { return MapIdsAsInt64(cfg.PartPath(k, f), cfg.edge_id_dtype); };
    parts[k] = {Edges(PartFiles::kIndptr),    Nodes(PartFiles::kIndices), P(PartFiles::kOrigNids),
                P(PartFiles::kOrigEids),      P(PartFiles::kHaloNids),    Edges(PartFiles::kOutIndptr),
                Nodes(PartFiles::kOutIndices), Edges(PartFiles::kOutEids)};
  }

  // Every node owned exactly once; new IDs of a partition are its contiguous range.
  std::vector<int64_t> orig_of(n, -1), new_of(n, -1);
  for (int k = 0; k < K; ++k) {
    const auto& on = parts[k].orig_nids;
    ASSERT_EQ(on.rows(), book->size(k)) << "part " << k;
    for (int64_t i = 0; i < on.rows(); ++i) {
      int64_t v = on.data_as<int64_t>()[i];
      ASSERT_TRUE(v >= 0 && v < n);
      ASSERT_EQ(new_of[v], -1) << "input node " << v << " owned twice";
      int64_t gid = book->start(k) + i;
      new_of[v] = gid;
      orig_of[gid] = v;
      // Partition book round trip.
      ASSERT_EQ(book->PartOf(gid), k);
      ASSERT_EQ(book->ToGlobal(k, book->ToLocal(gid)), gid);
    }
  }
  for (int64_t v = 0; v < n; ++v) ASSERT_NE(new_of[v], -1) << "input node " << v << " not owned";

  // Expected stored edges, keyed by original edge ID (see EdgeView in partitioner.cc).
  const int64_t* e = d.edges.data_as<int64_t>();
  std::map<std::pair<int64_t, int64_t>, int64_t> expected_pairs;  // pair -> multiplicity
  std::set<int64_t> expected_oeids;
  int64_t virtual_edges = o.add_reverse_edges ? 2 * E : E;
  for (int64_t vv = 0; vv < virtual_edges; ++vv) {
    int64_t row = vv < E ? vv : vv - E;
    int64_t u = vv < E ? e[2 * row] : e[2 * row + 1], w = vv < E ? e[2 * row + 1] : e[2 * row];
    if (u == w && (o.remove_self_loops || vv >= E)) continue;
    if (o.remove_duplicate_edges && expected_pairs.count({u, w})) continue;
    ++expected_pairs[{u, w}];
    expected_oeids.insert(vv);
  }
  ASSERT_EQ(cfg.num_edges, static_cast<int64_t>(expected_oeids.size()));

  std::set<int64_t> seen_oeids;
  std::map<std::pair<int64_t, int64_t>, int64_t> seen_pairs;
  // src (new ID) -> list of (eid, dst), to check the out-edge index.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> out_of(n);
  for (int k = 0; k < K; ++k) {
    const LoadedPart& p = parts[k];
    const int64_t nb = book->start(k), nk = book->size(k), eb = ebook->start(k);
    ASSERT_EQ(p.indptr.rows(), nk + 1);
    const int64_t* ip = p.indptr.data_as<int64_t>();
    ASSERT_EQ(ip[0], 0);
    ASSERT_EQ(ip[nk], ebook->size(k)) << "part " << k;
    std::set<int64_t> halo;
    for (int64_t i = 0; i < nk; ++i) {
      for (int64_t q = ip[i]; q < ip[i + 1]; ++q) {
        int64_t src = p.indices.data_as<int64_t>()[q], dst = nb + i;
        int64_t oe = p.orig_eids.data_as<int64_t>()[q];
        ASSERT_TRUE(src >= 0 && src < n);
        // The stored edge maps back to exactly the input edge it claims.
        int64_t row = oe < E ? oe : oe - E;
        ASSERT_TRUE(oe >= 0 && oe < virtual_edges);
        int64_t u = oe < E ? e[2 * row] : e[2 * row + 1], w = oe < E ? e[2 * row + 1] : e[2 * row];
        ASSERT_EQ(orig_of[src], u) << "edge " << eb + q;
        ASSERT_EQ(orig_of[dst], w) << "edge " << eb + q;
        ASSERT_TRUE(seen_oeids.insert(oe).second) << "input edge " << oe << " stored twice";
        ++seen_pairs[{u, w}];
        if (!book->Contains(src) || book->PartOf(src) != k) halo.insert(src);
        out_of[src].push_back({eb + q, dst});
      }
    }
    std::vector<int64_t> h(p.halo.data_as<int64_t>(), p.halo.data_as<int64_t>() + p.halo.rows());
    if (o.halo_hops == 1) {
      EXPECT_EQ(h, std::vector<int64_t>(halo.begin(), halo.end())) << "halo of part " << k;
    }
  }
  EXPECT_EQ(seen_pairs, expected_pairs);
  EXPECT_EQ(seen_oeids, expected_oeids);  // with dedup, the first copy of each edge survives

  // Out-edge index: exactly the stored edges whose source is an inner node, by edge ID.
  for (int k = 0; k < K; ++k) {
    const LoadedPart& p = parts[k];
    const int64_t nb = book->start(k), nk = book->size(k);
    const int64_t* op = p.out_indptr.data_as<int64_t>();
    ASSERT_EQ(p.out_indptr.rows(), nk + 1);
    for (int64_t i = 0; i < nk; ++i) {
      std::vector<std::pair<int64_t, int64_t>> got;
      for (int64_t q = op[i]; q < op[i + 1]; ++q) {
        got.push_back({p.out_eids.data_as<int64_t>()[q], p.out_indices.data_as<int64_t>()[q]});
      }
      auto want = out_of[nb + i];
      std::sort(want.begin(), want.end());
      ASSERT_EQ(got, want) << "out-edges of node " << nb + i;
    }
  }

  // Node data on the right rows after relabelling; masks equal the split.
  std::vector<uint8_t> train(n, 0);
  for (int64_t v : d.train_idx) train[v] = 1;
  for (const auto& f : d.node_fields) {
    for (int k = 0; k < K; ++k) {
      NpyArray got = MustMap(cfg.PartPath(k, PartFiles::NodeData(f.name)));
      ASSERT_EQ(got.dtype(), f.data.dtype());
      ASSERT_EQ(got.rows(), book->size(k));
      for (int64_t i = 0; i < got.rows(); ++i) {
        ASSERT_EQ(0, std::memcmp(got.row(i), f.data.row(orig_of[book->start(k) + i]), f.data.row_bytes()))
            << f.name << " row " << i << " of part " << k;
      }
    }
  }
  if (d.has_split) {
    for (int k = 0; k < K; ++k) {
      NpyArray got = MustMap(cfg.PartPath(k, PartFiles::NodeData("train_mask")));
      for (int64_t i = 0; i < got.rows(); ++i) {
        ASSERT_EQ(got.data_as<uint8_t>()[i], train[orig_of[book->start(k) + i]]);
      }
    }
  }
  // Edge data: a stored edge carries its input row's value.
  for (const auto& f : d.edge_fields) {
    for (int k = 0; k < K; ++k) {
      NpyArray got = MustMap(cfg.PartPath(k, PartFiles::EdgeData(f.name)));
      const LoadedPart& p = parts[k];
      ASSERT_EQ(got.rows(), p.orig_eids.rows());
      for (int64_t q = 0; q < got.rows(); ++q) {
        int64_t oe = p.orig_eids.data_as<int64_t>()[q];
        ASSERT_EQ(0, std::memcmp(got.row(q), f.data.row(oe < E ? oe : oe - E), f.data.row_bytes()));
      }
    }
  }
  ExpectIdMapsMatchPartitions(config_path);
}

namespace {
// `d` cut into `parts` with METIS under dir/parts (with reverse edges when asked); the config's
// path, "" after failing the test.
std::string PartitionInto(const TempDir& dir, const Dataset& d, int parts, bool reverse) {
  partition::PartitionOptions o;
  o.out_dir = dir.Sub("parts");
  o.num_parts = parts;
  o.add_reverse_edges = reverse;
  o.quiet = true;
  auto s = partition::PartitionDataset(d, o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? s->config_path : "";
}
}  // namespace

std::string PartitionRandom(const TempDir& dir, const RandomGraphSpec& spec, int parts, Dataset* d) {
  Dataset local;
  if (d == nullptr) d = &local;
  if (d->num_nodes == 0) *d = MakeRandomDataset(spec);
  return PartitionInto(dir, *d, parts, /*reverse=*/false);
}

std::string PartitionTyped(const TempDir& dir, const Dataset& d, int parts) {
  return PartitionInto(dir, d, parts, /*reverse=*/true);
}

namespace {
std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
}  // namespace

void MakeTestPki(const TempDir& dir, TestPki* pki) {
  auto sh = [&](const std::string& cmd) {
    std::string out, err;
    int rc = RunProcess({"/bin/sh", "-c", "cd '" + dir.path() + "' && " + cmd}, &out, &err);
    ASSERT_EQ(rc, 0) << cmd << "\n" << err << "(openssl comes with scripts/setup.sh)";
  };
  const std::string req = "openssl req -new -newkey rsa:2048 -nodes -subj";
  ASSERT_NO_FATAL_FAILURE(sh(req + " /CN=fanout-test-ca -x509 -days 2 -keyout ca.key -out ca.pem 2>&1"));
  ASSERT_NO_FATAL_FAILURE(sh(req + " /CN=other-ca -x509 -days 2 -keyout other.key -out other.pem 2>&1"));
  ASSERT_NO_FATAL_FAILURE(sh("printf 'subjectAltName=IP:127.0.0.1,IP:127.0.0.2,DNS:localhost\\n' > san.ext"));
  ASSERT_NO_FATAL_FAILURE(sh(req + " /CN=fanout-test -keyout node.key -out node.csr 2>&1"));
  ASSERT_NO_FATAL_FAILURE(sh("openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
                             "-extfile san.ext -out node.pem 2>&1"));
  chmod(dir.Sub("node.key").c_str(), 0600);
  *pki = {dir.Sub("ca.pem"), dir.Sub("node.pem"), dir.Sub("node.key"), dir.Sub("other.pem")};
}

std::string WriteTokenFile(const TempDir& dir, const std::string& name, const std::string& token) {
  const std::string path = dir.Sub(name);
  std::ofstream(path) << token << "\n";
  chmod(path.c_str(), 0600);
  return path;
}

int RunProcess(const std::vector<std::string>& args, std::string* out, std::string* err) {
  TempDir io;
  const std::string out_path = io.Sub("stdout"), err_path = io.Sub("stderr");
  absl::StatusOr<pid_t> pid = base::SpawnChild(
      {.argv = args,
       .fds = {base::ChildFd::Open(0, "/dev/null", O_RDONLY),
               base::ChildFd::Open(1, out_path, O_WRONLY | O_CREAT | O_TRUNC),
               base::ChildFd::Open(2, err_path, O_WRONLY | O_CREAT | O_TRUNC)}});
  if (!pid.ok()) {
    ADD_FAILURE() << pid.status();
    return -1;
  }
  int status = 0;
  waitpid(*pid, &status, 0);
  if (out != nullptr) *out = ReadAll(out_path);
  if (err != nullptr) *err = ReadAll(err_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string MpirunPath() {
  for (const char* p : {"/usr/bin/mpirun", "/usr/local/bin/mpirun"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

int RunMpi(int ranks, const std::vector<std::string>& args, std::string* out, std::string* err,
           const std::vector<std::string>& mpi_flags) {
  // odls_base_sigkill_timeout 0: once a rank fails, mpirun kills the others without its 1 s grace
  // (2 s of every failing run; the suite's time).
  std::vector<std::string> cmd = {"/usr/bin/timeout", "-k", "10", "300", MpirunPath(), "--allow-run-as-root",
                                  "--oversubscribe", "--mca", "odls_base_sigkill_timeout", "0", "-np", std::to_string(ranks)};
  cmd.insert(cmd.end(), mpi_flags.begin(), mpi_flags.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  return RunProcess(cmd, out, err);
}

int64_t EdgeCut(const std::string& config_path) {
  auto cfg = core::LoadPartitionConfig(config_path);
  if (!cfg.ok()) return -1;
  auto book = cfg->NodeBook();
  int64_t cut = 0;
  for (int k = 0; k < cfg->num_parts; ++k) {
    NpyArray idx = MapIdsAsInt64(cfg->PartPath(k, core::PartFiles::kIndices), cfg->node_id_dtype);
    for (int64_t q = 0; q < idx.rows(); ++q) cut += book->PartOf(idx.data_as<int64_t>()[q]) != k;
  }
  return cut;
}

bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

partition::Dataset MakeTypedDataset(uint64_t seed, int64_t papers, int64_t authors, int64_t venues) {
  using partition::Dataset;
  using partition::ValidateDataset;
  std::mt19937_64 rng(seed);
  Dataset d;
  d.name = "typed";
  d.layout = "memory";
  d.node_types = {"paper", "author", "venue"};
  d.node_type_offsets = {0, papers, papers + authors, papers + authors + venues};
  d.num_nodes = d.node_type_offsets.back();
  d.num_nodes_source = "memory";
  d.edges_source = "memory";
  d.edge_types = {{"author", "writes", "paper"}, {"paper", "cites", "paper"}, {"paper", "in", "venue"}};
  std::vector<int64_t> e;
  auto pick = [&](int t) {
    return d.node_type_offsets[t] +
           std::uniform_int_distribution<int64_t>(0, d.node_type_offsets[t + 1] - d.node_type_offsets[t] - 1)(rng);
  };
  d.edge_type_offsets = {0};
  for (int64_t i = 0; i < 3 * authors; ++i) e.insert(e.end(), {pick(1), pick(0)});
  d.edge_type_offsets.push_back(static_cast<int64_t>(e.size() / 2));
  for (int64_t i = 0; i < 4 * papers; ++i) {
    // Communities by ID, so that METIS has structure; every 30th repeats the one before, every
    // 25th is a self loop.
    const int64_t u = pick(0);
    if (i % 30 == 29) {
      const int64_t pu = e[e.size() - 2], pw = e[e.size() - 1];
      e.insert(e.end(), {pu, pw});
    } else {
      e.insert(e.end(), {u, i % 25 == 0 ? u : std::min(papers - 1, u + static_cast<int64_t>(rng() % 7))});
    }
  }
  d.edge_type_offsets.push_back(static_cast<int64_t>(e.size() / 2));
  for (int64_t p = 0; p < papers; ++p) e.insert(e.end(), {p, pick(2)});
  d.edge_type_offsets.push_back(static_cast<int64_t>(e.size() / 2));
  const int64_t m = static_cast<int64_t>(e.size() / 2);
  d.edges = NpyArray::Adopt(std::move(e), {m, 2});
  std::vector<float> feat(papers * 3);
  std::vector<int64_t> label(papers);
  for (int64_t p = 0; p < papers; ++p) {
    feat[3 * p] = static_cast<float>(p);
    feat[3 * p + 1] = static_cast<float>(seed);
    feat[3 * p + 2] = 0.5f;
    label[p] = p % 7 == 0 ? -1 : p % 3;
  }
  d.node_fields.push_back({"feat", NpyArray::Adopt(std::move(feat), {papers, 3}), "paper"});
  d.node_fields.push_back({"label", NpyArray::Adopt(std::move(label), {papers}), "paper"});
  d.num_classes = 3;
  for (int64_t p = 0; p < papers; ++p) {
    if (p % 7 == 0) continue;
    (p % 5 < 3 ? d.train_idx : p % 5 == 3 ? d.valid_idx : d.test_idx).push_back(p);
  }
  d.has_split = true;
  EXPECT_TRUE(ValidateDataset(d).ok()) << ValidateDataset(d);
  return d;
}

void ExpectIdMapsMatchPartitions(const std::string& config_path) {
  auto cfg = core::LoadPartitionConfig(config_path);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  const std::string dir = cfg->base_dir + "/id_maps/";
  std::ifstream in(dir + "id_maps.json");
  ASSERT_TRUE(in.good()) << dir << "id_maps.json: the partition has no ID maps";
  const nlohmann::json meta = nlohmann::json::parse(in);
  ASSERT_EQ(meta["num_nodes"].get<int64_t>(), cfg->num_nodes);
  auto node_types = cfg->NodeTypes();
  auto edge_types = cfg->EdgeTypes();
  ASSERT_TRUE(node_types.ok() && edge_types.ok());
  // Per kind: the forward map is the partitions' orig arrays one after another, and the inverse
  // (by type offset + input ID) names each stored ID once and nothing else.
  for (const auto& [kind, part_file, bounds, types] :
       {std::tuple{"nids", core::PartFiles::kOrigNids, &cfg->node_bounds, &*node_types},
        std::tuple{"eids", core::PartFiles::kOrigEids, &cfg->edge_bounds, &*edge_types}}) {
    const NpyArray fwd = MustMap(dir + "orig_" + kind + ".npy");
    const NpyArray inv = MustMap(dir + "new_" + kind + ".npy");
    const auto offsets = meta[kind == std::string("nids") ? "node_type_offsets" : "edge_type_offsets"]
                             .get<std::vector<int64_t>>();
    ASSERT_EQ(fwd.rows(), bounds->back()) << kind;
    ASSERT_EQ(static_cast<int>(offsets.size()), types->num_types()) << kind;
    int64_t named = 0;
    for (int64_t i = 0; i < inv.rows(); ++i) named += inv.data_as<int64_t>()[i] >= 0;
    EXPECT_EQ(named, bounds->back()) << kind << ": the inverse names every stored ID once";
    for (int k = 0; k < cfg->num_parts; ++k) {
      const NpyArray orig = MustMap(cfg->PartPath(k, part_file));
      for (int t = 0; t < types->num_types(); ++t) {
        const auto [b, e] = types->Range(t, k);
        for (int64_t v = b; v < e; ++v) {
          const int64_t o = orig.data_as<int64_t>()[v - (*bounds)[k]];
          ASSERT_EQ(fwd.data_as<int64_t>()[v], o) << kind << " " << v;
          ASSERT_EQ(inv.data_as<int64_t>()[offsets[t] + o], v) << kind << " " << v << " (input " << o << ")";
        }
      }
    }
  }
}

namespace {
std::string ReadWhole(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
}  // namespace

bool MemoryCgroup::Create(int64_t limit_bytes, std::string* why) {
  namespace fs = std::filesystem;
  const std::string name = "fanout-test-" + std::to_string(getpid());
  for (const auto& [root, limit_file, v2] : {std::tuple{"/sys/fs/cgroup/memory", "memory.limit_in_bytes", false},
                                             std::tuple{"/sys/fs/cgroup", "memory.max", true}}) {
    std::error_code ec;
    if (!fs::exists(std::string(root) + "/" + limit_file, ec) && !v2) continue;
    if (v2 && !fs::exists(std::string(root) + "/cgroup.controllers", ec)) continue;
    path_ = std::string(root) + "/" + name;
    if (!fs::create_directory(path_, ec)) continue;
    std::ofstream(path_ + "/" + limit_file) << limit_bytes;
    const std::string set = ReadWhole(path_ + "/" + limit_file);
    if (!set.empty() && std::isdigit(static_cast<unsigned char>(set[0])) && std::stoll(set) == limit_bytes) {
      v2_ = v2;
      return true;
    }
    fs::remove(path_, ec);
  }
  path_.clear();
  *why = "no writable memory cgroup (/sys/fs/cgroup/memory or a v2 memory.max)";
  return false;
}

bool MemoryCgroup::Enter() {
  const base::MemoryCgroupDirs home = base::OwnMemoryCgroup();
  const std::string& dir = v2_ ? home.v2 : home.v1;
  if (dir.empty()) return false;
  home_procs_ = dir + "/cgroup.procs";
  std::ofstream(path_ + "/cgroup.procs") << getpid();
  return ReadWhole(path_ + "/cgroup.procs").find(std::to_string(getpid())) != std::string::npos;
}

MemoryCgroup::~MemoryCgroup() {
  if (!home_procs_.empty()) std::ofstream(home_procs_) << getpid();
  if (path_.empty()) return;
  for (int i = 0; i < 100; ++i) {  // empty once its processes are reaped
    std::error_code ec;
    if (std::filesystem::remove(path_, ec)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int64_t MemoryCgroup::OomKills() const {
  return base::OomKillCountIn(path_ + (v2_ ? "/memory.events" : "/memory.oom_control")).value_or(0);
}

int64_t MemoryCgroup::PeakBytes() const {
  const std::string text = ReadWhole(path_ + (v2_ ? "/memory.peak" : "/memory.max_usage_in_bytes"));
  return text.empty() ? -1 : std::stoll(text);
}

}  // namespace fanout::testing


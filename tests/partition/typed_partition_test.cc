// Typed graphs (issue 29): OGB's heterogeneous raw layout read as it ships, and partitioned with
// every node's and edge's type, type-wise original IDs and typed fields surviving.
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "base/strings.h"
#include "core/npy.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "core/sampling.h"
#include "gtest/gtest.h"
#include "partition/generate.h"
#include "partition/partitioner.h"
#include "partition/readers.h"
#include "tests/testing/testing.h"

namespace fanout::partition {
namespace {

namespace fs = std::filesystem;
using core::NpyArray;
using testing::TempDir;

NpyArray Map(const std::string& path) {
  auto a = NpyArray::Map(path);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? std::move(*a) : NpyArray::Owned(core::DType::kInt64, {0});
}

// Every invariant of a typed partition against its dataset: each node once, of its type, in its
// type's range of its partition, with its type-wise original ID; each stored edge once, in its
// relation's range, joining the nodes its relation's input row joins (reversed for rev_REL);
// typed fields and masks on the right rows; the out-edge index exact.
void ExpectValidTypedPartition(const Dataset& d, const PartitionOptions& o, const std::string& config_path) {
  auto cfg = core::LoadPartitionConfig(config_path);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  const int K = o.num_parts;
  const int T = static_cast<int>(d.node_types.size()), R_in = static_cast<int>(d.edge_types.size());
  const int R = o.add_reverse_edges ? 2 * R_in : R_in;
  ASSERT_EQ(cfg->node_types, d.node_types);
  ASSERT_EQ(static_cast<int>(cfg->edge_types.size()), R);
  for (int r = 0; r < R; ++r) {
    const core::CanonicalEdgeType& in = d.edge_types[r % R_in];
    const core::CanonicalEdgeType want =
        r < R_in ? in : core::CanonicalEdgeType{in.dst, "rev_" + in.rel, in.src};
    EXPECT_EQ(cfg->edge_types[r], want) << r;
  }
  auto book = cfg->NodeBook();
  auto ebook = cfg->EdgeBook();
  auto ntypes = cfg->NodeTypes();
  auto etypes = cfg->EdgeTypes();
  ASSERT_TRUE(book.ok() && ebook.ok() && ntypes.ok() && etypes.ok());

  // Nodes.
  std::vector<int64_t> orig_of(d.num_nodes, -1), new_of(d.num_nodes, -1);
  for (int k = 0; k < K; ++k) {
    NpyArray on = Map(cfg->PartPath(k, core::PartFiles::kOrigNids));
    ASSERT_EQ(on.rows(), book->size(k));
    for (int64_t i = 0; i < on.rows(); ++i) {
      const int64_t gid = book->start(k) + i;
      const auto [t, typewise] = ntypes->ToTypeWise(gid);
      const int64_t v = d.node_type_offsets[t] + on.data_as<int64_t>()[i];
      ASSERT_LT(v, d.node_type_offsets[t + 1]) << "node " << gid << " of type " << d.node_types[t];
      ASSERT_EQ(new_of[v], -1) << "input node " << v << " owned twice";
      new_of[v] = gid;
      orig_of[gid] = v;
      const auto [b, e] = ntypes->Range(t, k);
      ASSERT_TRUE(gid >= b && gid < e);
      ASSERT_EQ(ntypes->ToHomogeneous(t, typewise), gid);
    }
  }
  for (int64_t v = 0; v < d.num_nodes; ++v) ASSERT_NE(new_of[v], -1) << "input node " << v << " not owned";
  // Type-wise IDs count a type's nodes partition by partition.
  for (int t = 0; t < T; ++t) EXPECT_EQ(ntypes->count(t), d.node_type_offsets[t + 1] - d.node_type_offsets[t]);

  // Expected stored edges: (stored type, row among its relation's input edges).
  const int64_t* e = d.edges.data_as<int64_t>();
  std::set<std::pair<int, int64_t>> expected, seen;
  std::set<std::tuple<int, int64_t, int64_t>> pairs;
  for (int r = 0; r < R; ++r) {
    const int rel = r % R_in;
    for (int64_t row = d.edge_type_offsets[rel]; row < d.edge_type_offsets[rel + 1]; ++row) {
      int64_t u = e[2 * row], w = e[2 * row + 1];
      if (r >= R_in) std::swap(u, w);
      if (u == w && o.remove_self_loops) continue;
      if (o.remove_duplicate_edges && !pairs.insert({r, u, w}).second) continue;
      expected.insert({r, row - d.edge_type_offsets[rel]});
    }
  }
  ASSERT_EQ(cfg->num_edges, static_cast<int64_t>(expected.size()));
  std::vector<std::vector<std::pair<int64_t, int64_t>>> out_of(d.num_nodes);
  for (int k = 0; k < K; ++k) {
    NpyArray indptr = testing::MapIdsAsInt64(cfg->PartPath(k, core::PartFiles::kIndptr), cfg->edge_id_dtype);
    NpyArray indices = testing::MapIdsAsInt64(cfg->PartPath(k, core::PartFiles::kIndices), cfg->node_id_dtype);
    NpyArray oeids = Map(cfg->PartPath(k, core::PartFiles::kOrigEids));
    const int64_t nk = book->size(k), eb = ebook->start(k);
    ASSERT_EQ(indptr.rows(), R * nk + 1);
    const int64_t* ip = indptr.data_as<int64_t>();
    ASSERT_EQ(ip[R * nk], ebook->size(k));
    for (int r = 0; r < R; ++r) {
      const auto [rb, re] = etypes->Range(r, k);
      ASSERT_EQ(rb, eb + ip[r * nk]) << "edge type " << r << " of part " << k;
      ASSERT_EQ(re, eb + ip[(r + 1) * nk]) << "edge type " << r << " of part " << k;
      const int rel = r % R_in;
      for (int64_t i = 0; i < nk; ++i) {
        const int64_t dst = book->start(k) + i;
        for (int64_t q = ip[r * nk + i]; q < ip[r * nk + i + 1]; ++q) {
          const int64_t src = indices.data_as<int64_t>()[q], oe = oeids.data_as<int64_t>()[q];
          ASSERT_EQ(etypes->ToTypeWise(eb + q).first, r);
          ASSERT_TRUE(oe >= 0 && oe < d.edge_type_offsets[rel + 1] - d.edge_type_offsets[rel]);
          const int64_t row = d.edge_type_offsets[rel] + oe;
          int64_t u = e[2 * row], w = e[2 * row + 1];
          if (r >= R_in) std::swap(u, w);
          ASSERT_EQ(orig_of[src], u) << "edge " << eb + q;
          ASSERT_EQ(orig_of[dst], w) << "edge " << eb + q;
          ASSERT_TRUE(seen.insert({r, oe}).second) << "edge " << oe << " of type " << r << " stored twice";
          out_of[src].push_back({eb + q, dst});
        }
      }
    }
  }
  EXPECT_EQ(seen, expected);

  // Out-edge index: the stored edges whose source is an inner node, by edge ID.
  for (int k = 0; k < K; ++k) {
    NpyArray op = testing::MapIdsAsInt64(cfg->PartPath(k, core::PartFiles::kOutIndptr), cfg->edge_id_dtype);
    NpyArray od = testing::MapIdsAsInt64(cfg->PartPath(k, core::PartFiles::kOutIndices), cfg->node_id_dtype);
    NpyArray oe = testing::MapIdsAsInt64(cfg->PartPath(k, core::PartFiles::kOutEids), cfg->edge_id_dtype);
    for (int64_t i = 0; i < book->size(k); ++i) {
      std::vector<std::pair<int64_t, int64_t>> got;
      for (int64_t q = op.data_as<int64_t>()[i]; q < op.data_as<int64_t>()[i + 1]; ++q) {
        got.push_back({oe.data_as<int64_t>()[q], od.data_as<int64_t>()[q]});
      }
      auto want = out_of[book->start(k) + i];
      std::sort(want.begin(), want.end());
      ASSERT_EQ(got, want) << "out-edges of node " << book->start(k) + i;
    }
  }

  // Typed fields: partition k's file has a row per node of the type, in ID order.
  for (const Field& f : d.node_fields) {
    const int t = d.NodeTypeIndex(f.node_type);
    ASSERT_GE(t, 0);
    for (int k = 0; k < K; ++k) {
      NpyArray got = Map(cfg->PartPath(k, core::PartFiles::NodeData(f.node_type + "/" + f.name)));
      const auto [b, end] = ntypes->Range(t, k);
      ASSERT_EQ(got.rows(), end - b) << f.name << " of part " << k;
      for (int64_t i = 0; i < got.rows(); ++i) {
        const int64_t v = orig_of[b + i] - d.node_type_offsets[t];
        ASSERT_EQ(0, std::memcmp(got.row(i), f.data.row(v), f.data.row_bytes())) << f.name << " row " << i;
      }
    }
  }
  // Masks: for each type with split nodes, a row per node of the type.
  std::set<int64_t> train(d.train_idx.begin(), d.train_idx.end());
  std::set<int> split_types;
  for (const auto* idx : {&d.train_idx, &d.valid_idx, &d.test_idx}) {
    for (int64_t v : *idx) split_types.insert(d.NodeTypeOf(v));
  }
  ASSERT_FALSE(split_types.empty());
  for (int t : split_types) {
    for (int k = 0; k < K; ++k) {
      NpyArray mask = Map(cfg->PartPath(k, core::PartFiles::NodeData(d.node_types[t] + "/train_mask")));
      const auto [b, end] = ntypes->Range(t, k);
      ASSERT_EQ(mask.rows(), end - b);
      for (int64_t i = 0; i < mask.rows(); ++i) {
        ASSERT_EQ(mask.data_as<uint8_t>()[i], train.count(orig_of[b + i]) ? 1 : 0);
      }
    }
  }
  testing::ExpectIdMapsMatchPartitions(config_path);
}

struct TypedCase {
  PartMethod method;
  int parts;
  bool reverse;
  bool dedup;
};

class TypedPartitionTest : public ::testing::TestWithParam<TypedCase> {};

TEST_P(TypedPartitionTest, EveryTypeAndOriginalIdSurvives) {
  const TypedCase& c = GetParam();
  TempDir dir;
  Dataset d = testing::MakeTypedDataset(3);
  PartitionOptions o;
  o.out_dir = dir.Sub("out");
  o.num_parts = c.parts;
  o.method = c.method;
  o.add_reverse_edges = c.reverse;
  o.remove_duplicate_edges = c.dedup;
  o.quiet = true;
  if (c.method == PartMethod::kFile) {
    // Partition 0 gets no venue, partition 2 nothing but papers.
    std::string text;
    for (int64_t v = 0; v < d.num_nodes; ++v) text += v >= 200 ? "1\n" : v < 120 ? std::to_string(v % 3) + "\n" : "1\n";
    testing::WriteText(dir.Sub("assign.txt"), text);
    o.assignment_file = dir.Sub("assign.txt");
  }
  auto s = PartitionDataset(d, o);
  ASSERT_TRUE(s.ok()) << s.status();
  ExpectValidTypedPartition(d, o, s->config_path);
}

INSTANTIATE_TEST_SUITE_P(Methods, TypedPartitionTest,
                         ::testing::Values(TypedCase{PartMethod::kMetis, 1, false, false},
                                           TypedCase{PartMethod::kMetis, 2, true, false},
                                           TypedCase{PartMethod::kMetis, 3, true, true},
                                           TypedCase{PartMethod::kRandom, 4, false, true},
                                           TypedCase{PartMethod::kFile, 3, true, false}),
                         [](const auto& info) {
                           const TypedCase& c = info.param;
                           return std::string(c.method == PartMethod::kMetis    ? "metis"
                                              : c.method == PartMethod::kRandom ? "random"
                                                                                : "file") +
                                  "_k" + std::to_string(c.parts) + (c.reverse ? "_rev" : "") + (c.dedup ? "_dedup" : "");
                         });

TEST(TypedPartitionTest, MetisBalancesEveryNodeType) {
  TempDir dir;
  Dataset d = testing::MakeTypedDataset(5, 600, 400, 40);
  PartitionOptions o{.out_dir = dir.Sub("out"), .num_parts = 4, .add_reverse_edges = true, .quiet = true};
  auto s = PartitionDataset(d, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE(s->metis_note.find("paper nodes + author nodes + venue nodes + train nodes"), std::string::npos)
      << s->metis_note;
  auto cfg = core::LoadPartitionConfig(s->config_path);
  ASSERT_TRUE(cfg.ok());
  auto types = cfg->NodeTypes();
  for (int t = 0; t < 3; ++t) {
    for (int k = 0; k < 4; ++k) {
      const auto [b, e] = types->Range(t, k);
      // METIS's default tolerance on each constraint is a few per cent; allow for rounding on 40 venues.
      EXPECT_LE(e - b, types->count(t) / 4 * 1.15 + 2) << d.node_types[t] << " in part " << k;
    }
  }
}

// Writes `d` in OGB's heterogeneous raw layout (as ogbn-mag ships it) under `dir`.
void WriteOgbHetero(const Dataset& d, const std::string& dir) {
  const fs::path raw = fs::path(dir) / "raw";
  fs::create_directories(raw);
  std::string names, counts;
  for (size_t t = 0; t < d.node_types.size(); ++t) {
    names += (t ? "," : "") + d.node_types[t];
    counts += (t ? "," : "") + std::to_string(d.node_type_offsets[t + 1] - d.node_type_offsets[t]);
  }
  testing::WriteGz((raw / "num-node-dict.csv.gz").string(), names + "\n" + counts + "\n");
  std::string triplets;
  const int64_t* e = d.edges.data_as<int64_t>();
  for (size_t r = 0; r < d.edge_types.size(); ++r) {
    const core::CanonicalEdgeType& et = d.edge_types[r];
    triplets += et.src + "," + et.rel + "," + et.dst + "\n";
    const fs::path rel = raw / "relations" / (et.src + "___" + et.rel + "___" + et.dst);
    fs::create_directories(rel);
    std::string edges, types;
    const int64_t so = d.node_type_offsets[d.NodeTypeIndex(et.src)], dof = d.node_type_offsets[d.NodeTypeIndex(et.dst)];
    for (int64_t i = d.edge_type_offsets[r]; i < d.edge_type_offsets[r + 1]; ++i) {
      edges += std::to_string(e[2 * i] - so) + "," + std::to_string(e[2 * i + 1] - dof) + "\n";
      types += std::to_string(r) + "\n";
    }
    testing::WriteGz((rel / "edge.csv.gz").string(), edges);
    testing::WriteGz((rel / "edge_reltype.csv.gz").string(), types);
    testing::WriteGz((rel / "num-edge-list.csv.gz").string(),
                     std::to_string(d.edge_type_offsets[r + 1] - d.edge_type_offsets[r]) + "\n");
  }
  testing::WriteGz((raw / "triplet-type-list.csv.gz").string(), triplets);
  for (const Field& f : d.node_fields) {
    const std::string kind = f.name == "feat" ? "node-feat" : "node-label";
    fs::create_directories(raw / kind / f.node_type);
    std::string text;
    for (int64_t i = 0; i < f.data.rows(); ++i) {
      if (f.name == "feat") {
        const float* x = reinterpret_cast<const float*>(f.data.row(i));
        for (int64_t c = 0; c < f.data.row_elems(); ++c) text += (c ? "," : "") + base::StrCat(x[c]);
      } else {
        text += std::to_string(f.data.data_as<int64_t>()[i]);
      }
      text += "\n";
    }
    testing::WriteGz((raw / kind / f.node_type / (kind + ".csv.gz")).string(), text);
  }
  const fs::path split = fs::path(dir) / "split" / "random" / "paper";
  fs::create_directories(split);
  for (auto [name, idx] : {std::pair{"train", &d.train_idx}, {"valid", &d.valid_idx}, {"test", &d.test_idx}}) {
    std::string text;
    for (int64_t v : *idx) text += std::to_string(v) + "\n";  // papers are type 0: type-wise = input ID
    testing::WriteGz((split / (std::string(name) + ".csv.gz")).string(), text);
  }
}

TEST(OgbHeteroReaderTest, ReadsTheLayoutBackExactly) {
  TempDir dir;
  Dataset d = testing::MakeTypedDataset(7);
  WriteOgbHetero(d, dir.Sub("mag"));
  auto back = ReadDataset({.input_dir = dir.Sub("mag")});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->layout, "ogb-hetero");
  EXPECT_EQ(back->node_types, d.node_types);
  EXPECT_EQ(back->node_type_offsets, d.node_type_offsets);
  EXPECT_EQ(back->edge_types, d.edge_types);
  EXPECT_EQ(back->edge_type_offsets, d.edge_type_offsets);
  ASSERT_EQ(back->num_edges(), d.num_edges());
  EXPECT_EQ(0, std::memcmp(back->edges.data(), d.edges.data(), d.edges.nbytes()));
  ASSERT_EQ(back->node_fields.size(), 2u);
  EXPECT_EQ(back->node_fields[0].node_type, "paper");
  EXPECT_EQ(0, std::memcmp(back->node_fields[0].data.data(), d.node_fields[0].data.data(), d.node_fields[0].data.nbytes()));
  EXPECT_EQ(back->num_classes, 3);
  EXPECT_EQ(back->train_idx, d.train_idx);
  EXPECT_EQ(back->test_idx, d.test_idx);
}

TEST(OgbHeteroReaderTest, ErrorsNameTheFileLineAndType) {
  auto read_error = [](const std::function<void(const std::string&)>& spoil) {
    TempDir dir;
    Dataset d = testing::MakeTypedDataset(7);
    WriteOgbHetero(d, dir.Sub("mag"));
    spoil(dir.Sub("mag/raw"));
    auto r = ReadDataset({.input_dir = dir.Sub("mag")});
    EXPECT_FALSE(r.ok());
    return std::string(r.status().message());
  };
  // An author ID past the 80 authors, on line 2 of its relation's edge file.
  std::string m = read_error([](const std::string& raw) {
    testing::WriteGz(raw + "/relations/author___writes___paper/edge.csv.gz", "0,1\n80,2\n");
    testing::WriteGz(raw + "/relations/author___writes___paper/num-edge-list.csv.gz", "2\n");
    testing::WriteGz(raw + "/relations/author___writes___paper/edge_reltype.csv.gz", "0\n0\n");
  });
  EXPECT_NE(m.find("author___writes___paper/edge.csv.gz:2: node ID 80 is outside [0, 80) (the author nodes)"),
            std::string::npos)
      << m;
  m = read_error([](const std::string& raw) {
    testing::WriteGz(raw + "/relations/paper___in___venue/edge_reltype.csv.gz", std::string(119 * 2, '\n') + "2\n");
  });
  EXPECT_NE(m.find("edge_reltype.csv.gz: has 1 lines for 120 edges"), std::string::npos) << m;
  m = read_error([](const std::string& raw) {
    std::string t;
    for (int i = 0; i < 120; ++i) t += i == 5 ? "0\n" : "2\n";
    testing::WriteGz(raw + "/relations/paper___in___venue/edge_reltype.csv.gz", t);
  });
  EXPECT_NE(m.find("edge_reltype.csv.gz edge 5: relation 0, but this folder is relation 2"), std::string::npos) << m;
  m = read_error([](const std::string& raw) {
    testing::WriteGz(raw + "/triplet-type-list.csv.gz", "author,writes,paper\npaper,cites,paper\npaper,in,journal\n");
  });
  EXPECT_NE(m.find("relation 2 (paper,in,journal): node type 'journal' is not one of the graph's (paper, author, venue)"),
            std::string::npos)
      << m;
  m = read_error([](const std::string& raw) {
    fs::create_directories(raw + "/node-feat/journal");
    testing::WriteGz(raw + "/node-feat/journal/node-feat.csv.gz", "1\n");
  });
  EXPECT_NE(m.find("node-feat/journal: 'journal' is not a node type of "), std::string::npos) << m;
  m = read_error([](const std::string& raw) { testing::WriteGz(raw + "/node-label/paper/node-label.csv.gz", "1\n2\n"); });
  EXPECT_NE(m.find("has 2 labels but the graph has 120 nodes"), std::string::npos) << m;
}

// Writes `d` in the typed .npy layout under `dir`.
void WriteTypedNpy(const Dataset& d, const std::string& dir) {
  fs::create_directories(fs::path(dir) / "edges");
  std::string counts = "{";
  for (size_t t = 0; t < d.node_types.size(); ++t) {
    counts += (t ? ", \"" : "\"") + d.node_types[t] + "\": " +
              std::to_string(d.node_type_offsets[t + 1] - d.node_type_offsets[t]);
  }
  testing::WriteText(dir + "/num_nodes.json", counts + "}\n");
  const int64_t* e = d.edges.data_as<int64_t>();
  for (size_t r = 0; r < d.edge_types.size(); ++r) {
    const core::CanonicalEdgeType& et = d.edge_types[r];
    const int64_t so = d.node_type_offsets[d.NodeTypeIndex(et.src)], dof = d.node_type_offsets[d.NodeTypeIndex(et.dst)];
    std::vector<int32_t> local;  // int32, as many exporters write
    for (int64_t i = d.edge_type_offsets[r]; i < d.edge_type_offsets[r + 1]; ++i) {
      local.push_back(static_cast<int32_t>(e[2 * i] - so));
      local.push_back(static_cast<int32_t>(e[2 * i + 1] - dof));
    }
    // The file name order must give the dataset's relation order: prefix-free names sort as listed here.
    ASSERT_TRUE(core::WriteNpy(dir + "/edges/" + et.src + "___" + et.rel + "___" + et.dst + ".npy", core::DType::kInt32,
                               {static_cast<int64_t>(local.size() / 2), 2}, local.data())
                    .ok());
  }
  for (const Field& f : d.node_fields) {
    fs::create_directories(fs::path(dir) / "node_data" / f.node_type);
    ASSERT_TRUE(core::WriteNpy(dir + "/node_data/" + f.node_type + "/" + f.name + ".npy", f.data.dtype(), f.data.shape(),
                               f.data.data())
                    .ok());
  }
  for (const Field& f : d.edge_fields) {  // edge_data/SRC___REL___DST/NAME.npy
    const std::string folder = dir + "/edge_data/" + base::StrJoin(base::StrSplit(f.edge_type, ":"), "___");
    fs::create_directories(folder);
    ASSERT_TRUE(core::WriteNpy(folder + "/" + f.name + ".npy", f.data.dtype(), f.data.shape(), f.data.data()).ok());
  }
  fs::create_directories(fs::path(dir) / "split" / "paper");
  for (auto [name, idx] : {std::pair{"train", &d.train_idx}, {"valid", &d.valid_idx}, {"test", &d.test_idx}}) {
    ASSERT_TRUE(core::WriteNpy(dir + "/split/paper/" + name + "_idx.npy", *idx).ok());
  }
}

TEST(TypedNpyReaderTest, ReadsWhatTheOgbLayoutHoldsAndPartitionsTheSame) {
  TempDir dir;
  Dataset d = testing::MakeTypedDataset(7);
  WriteOgbHetero(d, dir.Sub("ogb"));
  WriteTypedNpy(d, dir.Sub("npy"));
  auto from_ogb = ReadDataset({.input_dir = dir.Sub("ogb")});
  auto from_npy = ReadDataset({.input_dir = dir.Sub("npy")});
  ASSERT_TRUE(from_ogb.ok()) << from_ogb.status();
  ASSERT_TRUE(from_npy.ok()) << from_npy.status();
  EXPECT_EQ(from_npy->layout, "npy-hetero");
  EXPECT_EQ(from_npy->node_types, from_ogb->node_types);
  EXPECT_EQ(from_npy->node_type_offsets, from_ogb->node_type_offsets);
  EXPECT_EQ(from_npy->edge_types, from_ogb->edge_types);
  EXPECT_EQ(from_npy->edge_type_offsets, from_ogb->edge_type_offsets);
  EXPECT_EQ(0, std::memcmp(from_npy->edges.data(), from_ogb->edges.data(), from_ogb->edges.nbytes()));
  EXPECT_EQ(from_npy->train_idx, from_ogb->train_idx);
  EXPECT_EQ(from_npy->num_classes, 3);
  PartitionOptions o{.out_dir = dir.Sub("out"), .num_parts = 2, .add_reverse_edges = true, .quiet = true};
  auto s = PartitionDataset(*from_npy, o);
  ASSERT_TRUE(s.ok()) << s.status();
  ExpectValidTypedPartition(d, o, s->config_path);
}

// A relation may be written as PyG's [2, e] edge_index (HeteroData's edge_index per relation):
// read as the [e, 2] rows are.
TEST(TypedNpyReaderTest, RelationsAsPygEdgeIndexColumnsReadAsRows) {
  TempDir dir;
  Dataset d = testing::MakeTypedDataset(5);
  WriteTypedNpy(d, dir.Sub("rows"));
  WriteTypedNpy(d, dir.Sub("columns"));
  const std::string rel = dir.Sub("columns/edges/author___writes___paper.npy");
  auto rows = core::NpyArray::Map(rel);
  ASSERT_TRUE(rows.ok()) << rows.status();
  const int64_t e = rows->rows();
  std::vector<int32_t> cols(2 * e);
  for (int64_t i = 0; i < e; ++i) {
    cols[i] = rows->data_as<int32_t>()[2 * i];
    cols[e + i] = rows->data_as<int32_t>()[2 * i + 1];
  }
  *rows = core::NpyArray();
  ASSERT_TRUE(core::WriteNpy(rel, core::DType::kInt32, {2, e}, cols.data()).ok());
  auto a = ReadDataset({.input_dir = dir.Sub("rows")});
  auto b = ReadDataset({.input_dir = dir.Sub("columns")});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->edge_type_offsets, b->edge_type_offsets);
  ASSERT_EQ(a->edges.nbytes(), b->edges.nbytes());
  EXPECT_EQ(0, std::memcmp(a->edges.data(), b->edges.data(), a->edges.nbytes()));
}

// Edge fields of a typed graph: edge_data/SRC___REL___DST/NAME.npy, one row per edge of that
// relation's file, read as that relation's field; a folder that is no relation, or a field with
// the wrong number of rows, is refused naming it.
TEST(TypedNpyReaderTest, ReadsEdgeFieldsPerRelation) {
  TempDir dir;
  Dataset d = testing::MakeTypedDataset(7);
  const int64_t nc = d.edge_type_offsets[2] - d.edge_type_offsets[1];
  std::vector<float> w(nc);
  for (int64_t i = 0; i < nc; ++i) w[i] = static_cast<float>(i) * 0.25f;
  d.edge_fields.push_back({.name = "w", .data = NpyArray::Adopt(std::vector<float>(w), {nc}), .edge_type = "paper:cites:paper"});
  WriteTypedNpy(d, dir.Sub("npy"));
  auto got = ReadDataset({.input_dir = dir.Sub("npy")});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->edge_fields.size(), 1u);
  EXPECT_EQ(got->edge_fields[0].name, "w");
  EXPECT_EQ(got->edge_fields[0].edge_type, "paper:cites:paper");
  ASSERT_EQ(got->edge_fields[0].data.rows(), nc);
  EXPECT_EQ(0, std::memcmp(got->edge_fields[0].data.data(), w.data(), nc * sizeof(float)));
  fs::create_directories(dir.Sub("npy") + "/edge_data/paper___likes___paper");
  auto bad = ReadDataset({.input_dir = dir.Sub("npy")});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("edge_data/paper___likes___paper: not a relation of edges/"), std::string::npos)
      << bad.status();
  fs::remove_all(dir.Sub("npy") + "/edge_data/paper___likes___paper");
  ASSERT_TRUE(core::WriteNpy(dir.Sub("npy") + "/edge_data/paper___cites___paper/w.npy", std::vector<float>(3, 1.0f)).ok());
  bad = ReadDataset({.input_dir = dir.Sub("npy")});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(base::StrCat("edge field 'w' has 3 rows but ", dir.Sub("npy"), "/edges/paper___cites___paper.npy has ", nc, " edges")),
            std::string::npos)
      << bad.status();
}

TEST(TypedNpyReaderTest, ErrorsNameTheFileRowAndType) {
  auto read_error = [](const std::function<void(const std::string&)>& spoil) {
    TempDir dir;
    WriteTypedNpy(testing::MakeTypedDataset(7), dir.Sub("npy"));
    spoil(dir.Sub("npy"));
    auto r = ReadDataset({.input_dir = dir.Sub("npy")});
    EXPECT_FALSE(r.ok());
    return std::string(r.status().message());
  };
  std::string m = read_error([](const std::string& npy) {
    std::vector<int64_t> e = {0, 1, 3, 4};
    ASSERT_TRUE(core::WriteNpy(npy + "/edges/paper___in___venue.npy", core::DType::kInt64, {2, 2}, e.data()).ok());
  });
  EXPECT_NE(m.find("paper___in___venue.npy row 1: dst 4 is outside [0, 4) (the venue nodes)"), std::string::npos) << m;
  m = read_error([](const std::string& npy) {
    std::vector<int64_t> e = {0, 1};
    ASSERT_TRUE(core::WriteNpy(npy + "/edges/paper___in___journal.npy", core::DType::kInt64, {1, 2}, e.data()).ok());
  });
  EXPECT_NE(m.find("paper___in___journal.npy: name (paper,in,journal): node type 'journal' is not one of the graph's"),
            std::string::npos)
      << m;
  m = read_error([](const std::string& npy) { fs::create_directories(npy + "/node_data/journal"); });
  EXPECT_NE(m.find("node_data/journal: 'journal' is not a node type of"), std::string::npos) << m;
  m = read_error([](const std::string& npy) { testing::WriteText(npy + "/num_nodes.json", "{\"paper\": \"many\"}"); });
  EXPECT_NE(m.find("num_nodes.json: the count of 'paper' is not an integer"), std::string::npos) << m;
}

// A typed partition as servers and samplers read it: typed fields by "TYPE/NAME" holding their
// type only, in-edges per relation, samples relation by relation with an edge-type column.
TEST(TypedStoreTest, FieldsNeighboursAndSamplesFollowTheTypes) {
  TempDir dir;
  Dataset d = testing::MakeTypedDataset(2);
  auto s = PartitionDataset(d, {.out_dir = dir.Sub("out"), .num_parts = 2, .add_reverse_edges = true, .quiet = true});
  ASSERT_TRUE(s.ok()) << s.status();
  auto cfg = core::LoadPartitionConfig(s->config_path);
  ASSERT_TRUE(cfg.ok());
  for (int k = 0; k < 2; ++k) {
    auto store = core::PartitionStore::Open(*cfg, k);
    ASSERT_TRUE(store.ok()) << store.status();
    const core::PartitionStore& st = **store;
    ASSERT_EQ(st.num_edge_types(), 6);
    const int paper = *st.node_types().TypeId("paper"), author = *st.node_types().TypeId("author");
    const auto [pb, pe] = st.node_types().Range(paper, k);
    const auto [ab, ae] = st.node_types().Range(author, k);
    ASSERT_LT(pb, pe);
    ASSERT_LT(ab, ae);
    // A paper's features: row (type-wise ID, seed, 0.5); an author has none.
    NpyArray orig = Map(cfg->PartPath(k, core::PartFiles::kOrigNids));
    std::string rows;
    ASSERT_TRUE(st.GatherNodeRows("paper/feat", std::vector<int64_t>{pb, pe - 1}, &rows).ok());
    const float* f = reinterpret_cast<const float*>(rows.data());
    EXPECT_EQ(f[0], static_cast<float>(orig.data_as<int64_t>()[pb - st.node_start()]));
    EXPECT_EQ(f[3], static_cast<float>(orig.data_as<int64_t>()[pe - 1 - st.node_start()]));
    EXPECT_EQ(f[1], 2.0f);
    absl::Status wrong = st.GatherNodeRows("paper/feat", std::vector<int64_t>{ab}, &rows);
    EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(wrong.message().find(base::StrCat("node ", ab, " is of type author; field 'paper/feat' holds paper nodes only")),
              std::string::npos)
        << wrong;
    EXPECT_EQ(st.GatherNodeRows("feat", std::vector<int64_t>{pb}, &rows).code(), absl::StatusCode::kNotFound);

    // Every paper's in-edges, relation by relation: sources of the relation's type, edge IDs in
    // its range; the degree sums them.
    std::vector<int64_t> seeds;
    for (int64_t v = pb; v < pe; ++v) seeds.push_back(v);
    std::vector<int64_t> degree(seeds.size());
    ASSERT_TRUE(st.Degrees(seeds, core::EdgeDir::kIn, degree.data()).ok());
    std::vector<int64_t> per_relation(seeds.size(), 0);
    for (int r = 0; r < st.num_edge_types(); ++r) {
      const int src_type = *st.node_types().TypeId(cfg->edge_types[r].src);
      const bool into_papers = cfg->edge_types[r].dst == "paper";
      for (size_t i = 0; i < seeds.size(); ++i) {
        const core::PartitionStore::Adjacency a = st.Neighbors(seeds[i], core::EdgeDir::kIn, r);
        if (!into_papers) {
          EXPECT_EQ(a.degree, 0);
        }
        per_relation[i] += a.degree;
        for (int64_t j = 0; j < a.degree; ++j) {
          EXPECT_EQ(st.node_types().ToTypeWise(a.nbr(j)).first, src_type);
          EXPECT_EQ(st.edge_types().ToTypeWise(a.eid(j)).first, r);
        }
      }
    }
    EXPECT_EQ(per_relation, degree);

    // Sampling: every relation with one fanout, one relation, per-relation fanouts.
    core::SampledEdges e;
    ASSERT_TRUE(core::SampleNeighbors(st, seeds, {.fanout = 2, .seed = 5}, &e).ok());
    ASSERT_EQ(e.etype.size(), e.size());
    std::map<std::pair<int, int64_t>, int> per_seed;
    for (size_t i = 0; i < e.size(); ++i) {
      EXPECT_EQ(st.edge_types().ToTypeWise(e.eid[i]).first, e.etype[i]);
      EXPECT_TRUE(i == 0 || e.etype[i] >= e.etype[i - 1]) << "relation by relation";
      ++per_seed[{e.etype[i], e.dst[i]}];
    }
    for (const auto& [key, count] : per_seed) EXPECT_LE(count, 2);
    core::SampledEdges cites;
    const int cites_type = 1;  // author:writes:paper, paper:cites:paper, paper:in:venue, then reverses
    ASSERT_EQ(cfg->edge_types[cites_type].rel, "cites");
    ASSERT_TRUE(core::SampleNeighbors(st, seeds, {.fanout = -1, .etype = cites_type}, &cites).ok());
    for (int32_t r : cites.etype) EXPECT_EQ(r, cites_type);
    int64_t all_cites = 0;
    for (int64_t v : seeds) all_cites += st.Neighbors(v, core::EdgeDir::kIn, cites_type).degree;
    EXPECT_EQ(static_cast<int64_t>(cites.size()), all_cites);
    core::SampledEdges mixed;
    ASSERT_TRUE(core::SampleNeighbors(st, seeds, {.etype_fanouts = {1, 0, 0, 0, 0, 0}}, &mixed).ok());
    for (int32_t r : mixed.etype) EXPECT_EQ(r, 0);
    EXPECT_EQ(core::SampleNeighbors(st, seeds, {.etype = 6}, &mixed).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(core::SampleNeighbors(st, seeds, {.etype_fanouts = {1, 2}}, &mixed).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(core::SampleNeighbors(st, seeds, {.dir = core::EdgeDir::kOut}, &mixed).code(),
              absl::StatusCode::kUnimplemented);
    // FindEdges maps an edge of any relation back to its endpoints.
    std::vector<int64_t> src(e.size()), dst(e.size());
    ASSERT_TRUE(st.FindEdges(e.eid, src.data(), dst.data()).ok());
    EXPECT_EQ(src, e.src);
    EXPECT_EQ(dst, e.dst);
  }
}

TEST(TypedPartitionTest, LinkSplitsOfTypedGraphsNeedTheRelationAndLeaveNothingWithoutIt) {
  TempDir dir;
  Dataset d = testing::MakeTypedDataset(2);
  PartitionOptions link{.out_dir = dir.Sub("link"), .num_parts = 2, .quiet = true};
  link.edge_split.valid = link.edge_split.test = 0.1;
  const absl::Status s = PartitionDataset(d, link).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("needs --link-etype"), std::string::npos) << s;
  EXPECT_FALSE(fs::exists(dir.Sub("link")));
  // (A split of one relation: edge_split_test.cc.)
  link.edge_split.relations = {"writes"};
  EXPECT_TRUE(PartitionDataset(d, link).ok());
  EXPECT_TRUE(fs::exists(dir.Sub("link/link/valid_pos.npy")));
}

// fanout-generate --preset mag: the same typed graph in both layouts, sized as asked, with the
// class structure the model promises.
TEST(MagGeneratorTest, BothLayoutsHoldTheSameTypedGraph) {
  TempDir dir;
  Dataset read[2];
  for (int i = 0; i < 2; ++i) {
    GenerateOptions g{.out_dir = dir.Sub(i == 0 ? "ogb" : "npy"), .format = i == 0 ? DatasetFormat::kOgb : DatasetFormat::kNpy,
                      .feat_dim = 8, .num_classes = 10, .seed = 3, .typed_preset = "mag", .scale = 0.003};
    ASSERT_TRUE(GenerateDataset(g).ok());
    auto d = ReadDataset({.input_dir = g.out_dir});
    ASSERT_TRUE(d.ok()) << d.status();
    read[i] = *std::move(d);
  }
  const TypedShape z = *TypedPreset("mag", 0.003);
  const int64_t author = z.node_types[0].count, fos = z.node_types[1].count, inst = z.node_types[2].count,
                paper = z.node_types[3].count;
  EXPECT_EQ(author, std::llround(1134649 * 0.003));  // ogbn-mag's counts
  for (const Dataset& d : read) {
    EXPECT_EQ(d.node_types, (std::vector<std::string>{"author", "field_of_study", "institution", "paper"}));
    EXPECT_EQ(d.node_type_offsets, (std::vector<int64_t>{0, author, author + fos, author + fos + inst, z.nodes()}));
    ASSERT_EQ(d.edge_types.size(), 4u);
    EXPECT_EQ(d.edge_types[1].ToString(), "author:writes:paper");
    EXPECT_EQ(d.edge_type_offsets.back(), z.edges());
    EXPECT_EQ(d.edge_type_offsets[3] - d.edge_type_offsets[2], z.relations[2].count);  // cites
    ASSERT_EQ(d.node_fields.size(), 2u);
    EXPECT_EQ(d.node_fields[0].node_type, "paper");
    EXPECT_EQ(d.node_fields[0].data.rows(), paper);
    EXPECT_EQ(d.train_idx.size() + d.valid_idx.size() + d.test_idx.size(), static_cast<size_t>(paper));
  }
  EXPECT_EQ(0, std::memcmp(read[0].edges.data(), read[1].edges.data(), read[0].edges.nbytes()));
  EXPECT_EQ(read[0].train_idx, read[1].train_idx);
  const Field& labels = read[1].node_fields[1];
  ASSERT_EQ(labels.name, "label");
  // Authors write mostly in one area: most of an author's papers share the author's most common
  // label (well above the 1/10 of random writing).
  const int64_t paper0 = read[1].node_type_offsets[3];
  std::map<int64_t, std::map<int64_t, int>> by_author;
  const int64_t* e = read[1].edges.data_as<int64_t>();
  for (int64_t i = read[1].edge_type_offsets[1]; i < read[1].edge_type_offsets[2]; ++i) {
    ++by_author[e[2 * i]][labels.data.data_as<int64_t>()[e[2 * i + 1] - paper0]];
  }
  int64_t top = 0, all = 0;
  for (const auto& [author, counts] : by_author) {
    int best = 0, sum = 0;
    for (const auto& [label, c] : counts) best = std::max(best, c), sum += c;
    top += best;
    all += sum;
  }
  EXPECT_GT(static_cast<double>(top) / all, 0.6);
}

TEST(MagGeneratorTest, RefusesWhatDoesNotApply) {
  TempDir dir;
  GenerateOptions g{.out_dir = dir.Sub("x"), .typed_preset = "mag", .scale = 0};
  EXPECT_NE(GenerateDataset(g).message().find("--scale must be > 0"), std::string::npos);
  g.scale = 5000;
  EXPECT_NE(GenerateDataset(g).message().find("--scale must be > 0 and keep every node type of --preset mag under"),
            std::string::npos);
  g.scale = 0.001;
  g.edge_weights = true;
  EXPECT_NE(GenerateDataset(g).message().find("--edge-weights is not available with --preset mag"), std::string::npos);
  g.edge_weights = false;
  g.typed_preset = "igbh-huge";
  EXPECT_EQ(GenerateDataset(g).message(), "'igbh-huge' is not a typed preset (mag, igbh-tiny, igbh-small, igbh-medium)");
  EXPECT_FALSE(fs::exists(dir.Sub("x")));
}

// fanout-generate --preset igbh-*: IGBH's four types and relations at its published sizes, every
// type with features, papers with labels and MLPerf's split; partitioned with reverse relations,
// each type's features land in the partitions.
TEST(IgbhGeneratorTest, EveryTypeHasFeaturesAndPapersTheLabels) {
  const TypedShape tiny = *TypedPreset("igbh-tiny");
  EXPECT_EQ(tiny.nodes(), 549999);
  EXPECT_EQ(tiny.edges(), 1962714);
  EXPECT_EQ(TypedPreset("igbh-medium")->node_types[0].count, 15544654);  // authors
  TempDir dir;
  GenerateOptions g{.out_dir = dir.Sub("igbh"), .feat_dim = 8, .num_classes = 10, .train_frac = 0.6,
                    .valid_frac = 0.005, .seed = 5, .typed_preset = "igbh-tiny", .scale = 0.004};
  ASSERT_TRUE(GenerateDataset(g).ok());
  auto d = ReadDataset({.input_dir = g.out_dir});
  ASSERT_TRUE(d.ok()) << d.status();
  const TypedShape z = *TypedPreset("igbh-tiny", 0.004);
  EXPECT_EQ(d->node_types, (std::vector<std::string>{"author", "fos", "institute", "paper"}));
  EXPECT_EQ(d->node_type_offsets.back(), z.nodes());
  std::vector<std::string> relations;
  for (const auto& t : d->edge_types) relations.push_back(t.ToString());
  EXPECT_EQ(relations, (std::vector<std::string>{"author:affiliated_to:institute", "paper:cites:paper",
                                                 "paper:topic:fos", "paper:written_by:author"}));
  EXPECT_EQ(d->edge_type_offsets.back(), z.edges());
  std::map<std::string, int64_t> feature_rows;
  for (const Field& f : d->node_fields) {
    if (f.name == "feat") feature_rows[f.node_type] = f.data.rows();
    if (f.name == "label") EXPECT_EQ(f.node_type, "paper");
  }
  for (size_t t = 0; t < 4; ++t) {
    EXPECT_EQ(feature_rows[z.node_types[t].name], z.node_types[t].count) << z.node_types[t].name;
  }
  const int64_t papers = z.node_types[3].count;
  EXPECT_EQ(static_cast<int64_t>(d->train_idx.size()), std::llround(0.6 * papers));
  EXPECT_EQ(static_cast<int64_t>(d->valid_idx.size()), std::llround(0.005 * papers));

  // Partitioned with reverse relations (MLPerf's rev_*): a valid typed partition.
  PartitionOptions o{.out_dir = dir.Sub("parts"), .num_parts = 2, .add_reverse_edges = true, .quiet = true};
  auto s = PartitionDataset(*d, o);
  ASSERT_TRUE(s.ok()) << s.status();
  ExpectValidTypedPartition(*d, o, s->config_path);
  auto config = core::LoadPartitionConfig(s->config_path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->edge_types.size(), 8u);
}

// The real heterogeneous graph in ../shared/data/imdb (skipped when absent).
TEST(ImdbTest, ReadsAndPartitionsWithEveryTypeIntact) {
  const std::string shared = testing::SharedDataDir();
  if (shared.empty() || !fs::exists(shared + "/imdb/raw/num-node-dict.csv.gz")) {
    GTEST_SKIP() << "../shared/data/imdb not present";
  }
  auto d = ReadDataset({.input_dir = shared + "/imdb"});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->node_types, (std::vector<std::string>{"movie", "director", "actor"}));
  EXPECT_EQ(d->node_type_offsets, (std::vector<int64_t>{0, 4919, 4919 + 2398, 4919 + 2398 + 6255}));
  EXPECT_EQ(d->edge_type_offsets, (std::vector<int64_t>{0, 4817, 4817 + 14714}));
  EXPECT_EQ(d->num_classes, 3);
  EXPECT_EQ(d->train_idx.size() + d->valid_idx.size() + d->test_idx.size(), 4280u);
  TempDir dir;
  PartitionOptions o{.out_dir = dir.Sub("out"), .num_parts = 2, .add_reverse_edges = true, .quiet = true};
  auto s = PartitionDataset(*d, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_edges, 2 * (4817 + 14714));
  ExpectValidTypedPartition(*d, o, s->config_path);
  auto cfg = core::LoadPartitionConfig(s->config_path);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->edge_types[3].ToString(), "actor:rev_stars:movie");
}

}  // namespace
}  // namespace fanout::partition

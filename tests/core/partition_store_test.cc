#include "core/partition_store.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "core/sampling.h"
#include "gtest/gtest.h"
#include "partition/partitioner.h"
#include "tests/testing/testing.h"

namespace fanout::core {
namespace {

using testing::TempDir;

// A partitioned random graph (3 parts, reverse edges, duplicates removed) with an edge-weight
// field, and a map of every stored edge by edge ID, for checking answers against.
class PartitionStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = testing::MakeRandomDataset({.num_nodes = 600, .num_edges = 6000, .edge_field = false});
    // Edge weights: 0 for every third input row, else 1 + row % 4 (known, skewed).
    std::vector<float> w(data_.num_edges());
    for (int64_t i = 0; i < data_.num_edges(); ++i) w[i] = i % 3 == 0 ? 0.0f : 1.0f + i % 4;
    data_.edge_fields.push_back({"w", NpyArray::Adopt(std::move(w), {data_.num_edges()})});
    partition::PartitionOptions o;
    o.out_dir = dir_.Sub("parts");
    o.num_parts = 3;
    o.add_reverse_edges = true;
    o.remove_duplicate_edges = true;
    o.quiet = true;
    auto s = partition::PartitionDataset(data_, o);
    ASSERT_TRUE(s.ok()) << s.status();
    auto cfg = LoadPartitionConfig(s->config_path);
    ASSERT_TRUE(cfg.ok());
    config_ = *cfg;
    for (int k = 0; k < 3; ++k) {
      auto st = PartitionStore::Open(config_, k);
      ASSERT_TRUE(st.ok()) << st.status();
      stores_.push_back(std::move(*st));
    }
    for (auto& st : stores_) {
      for (int64_t v = st->node_start(); v < st->node_end(); ++v) {
        auto a = st->Neighbors(v, EdgeDir::kIn);
        for (int64_t i = 0; i < a.degree; ++i) edges_[a.eid(i)] = {a.nbr(i), v};
      }
    }
  }

  TempDir dir_;
  partition::Dataset data_;
  PartitionConfig config_;
  std::vector<std::unique_ptr<PartitionStore>> stores_;
  std::map<int64_t, std::pair<int64_t, int64_t>> edges_;  // eid -> (src, dst)
};

// Issue 11: a field's row shape in <name>.json is as untrusted as a .npy header; a shape whose
// row size overflows int64 is refused when the config is read, naming the file and the field.
TEST_F(PartitionStoreTest, ConfigWithOverflowingFieldShapeIsRefused) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{int64_t{1} << 62, 4}, std::vector<int64_t>{-3}}) {
    PartitionConfig bad = config_;
    ASSERT_FALSE(bad.node_fields.empty());
    bad.node_fields[0].row_shape = shape;
    auto json = PartitionConfigToJson(bad, "");
    ASSERT_TRUE(json.ok()) << json.status();
    const std::string path = dir_.Sub("bad.json");
    testing::WriteText(path, *json);
    auto loaded = LoadPartitionConfig(path);
    ASSERT_FALSE(loaded.ok());
    EXPECT_NE(std::string(loaded.status().message()).find("bad.json"), std::string::npos)
        << loaded.status();
    EXPECT_NE(std::string(loaded.status().message())
                  .find("node_fields '" + bad.node_fields[0].name + "'"),
              std::string::npos)
        << loaded.status();
  }
}

TEST_F(PartitionStoreTest, GathersTheSourceRows) {
  const PartitionStore& s = *stores_[1];
  std::vector<int64_t> ids = {s.node_end() - 1, s.node_start(), s.node_start() + 3, s.node_start()};
  std::string rows;
  ASSERT_TRUE(s.GatherNodeRows("feat", ids, &rows).ok());
  auto orig = NpyArray::Map(config_.PartPath(1, PartFiles::kOrigNids));
  ASSERT_TRUE(orig.ok());
  const auto& feat = data_.FindNodeField("feat")->data;
  ASSERT_EQ(rows.size(), ids.size() * feat.row_bytes());
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t input = orig->data_as<int64_t>()[ids[i] - s.node_start()];
    EXPECT_EQ(0, std::memcmp(rows.data() + i * feat.row_bytes(), feat.row(input), feat.row_bytes()));
  }
}

TEST_F(PartitionStoreTest, DegreesAndFindEdgesAreExact) {
  std::map<int64_t, int64_t> in, out;
  for (const auto& [e, sd] : edges_) {
    ++out[sd.first];
    ++in[sd.second];
  }
  for (const auto& st : stores_) {
    std::vector<int64_t> ids;
    for (int64_t v = st->node_start(); v < st->node_end(); ++v) ids.push_back(v);
    std::vector<int64_t> din(ids.size()), dout(ids.size());
    ASSERT_TRUE(st->Degrees(ids, EdgeDir::kIn, din.data()).ok());
    ASSERT_TRUE(st->Degrees(ids, EdgeDir::kOut, dout.data()).ok());
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(din[i], in[ids[i]]) << ids[i];
      EXPECT_EQ(dout[i], out[ids[i]]) << ids[i];
    }
    std::vector<int64_t> eids;
    for (int64_t e = st->edge_start(); e < st->edge_end(); e += 7) eids.push_back(e);
    std::vector<int64_t> src(eids.size()), dst(eids.size());
    ASSERT_TRUE(st->FindEdges(eids, src.data(), dst.data()).ok());
    for (size_t i = 0; i < eids.size(); ++i) {
      EXPECT_EQ(std::make_pair(src[i], dst[i]), edges_[eids[i]]) << "edge " << eids[i];
    }
  }
}

TEST_F(PartitionStoreTest, ForeignAndInvalidIdsAreRefusedByName) {
  const PartitionStore& s = *stores_[0];
  std::string rows;
  std::vector<int64_t> foreign = {s.node_start(), stores_[2]->node_start()};
  auto e1 = s.GatherNodeRows("feat", foreign, &rows);
  EXPECT_EQ(e1.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(e1.message()).find("belongs to partition 2"), std::string::npos) << e1;
  std::vector<int64_t> outside = {600};
  auto e2 = s.GatherNodeRows("feat", outside, &rows);
  EXPECT_EQ(e2.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(e2.message()).find("node ID 600 (index 0) is outside the graph [0, 600)"), std::string::npos) << e2;
  std::vector<int64_t> ok = {s.node_start()};
  auto e3 = s.GatherNodeRows("nope", ok, &rows);
  EXPECT_EQ(e3.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(e3.message()).find("feat, label"), std::string::npos) << e3;
  std::vector<int64_t> bad_edge = {-1};
  std::vector<int64_t> a(1), b(1);
  EXPECT_EQ(s.FindEdges(bad_edge, a.data(), b.data()).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(PartitionStore::Open(config_, 3).ok());
}

TEST_F(PartitionStoreTest, PushAssignsAndAddsWithoutTouchingTheFiles) {
  PartitionStore& s = *stores_[2];
  const int64_t v = s.node_start() + 1;
  std::vector<int64_t> ids = {v};
  std::string before;
  ASSERT_TRUE(s.GatherNodeRows("feat", ids, &before).ok());
  const int64_t dim = data_.FindNodeField("feat")->data.row_elems();
  std::vector<float> ones(dim, 1.0f), twos(dim, 2.0f);
  ASSERT_TRUE(s.PushNodeRows("feat", ids, ones.data(), dim * 4, PushOp::kAssign).ok());
  ASSERT_TRUE(s.PushNodeRows("feat", ids, twos.data(), dim * 4, PushOp::kAdd).ok());
  std::string after;
  ASSERT_TRUE(s.GatherNodeRows("feat", ids, &after).ok());
  const float* x = reinterpret_cast<const float*>(after.data());
  for (int64_t j = 0; j < dim; ++j) EXPECT_EQ(x[j], 3.0f);
  // A fresh store maps the unchanged file.
  auto fresh = PartitionStore::Open(config_, 2);
  ASSERT_TRUE(fresh.ok());
  std::string on_disk;
  ASSERT_TRUE((*fresh)->GatherNodeRows("feat", ids, &on_disk).ok());
  EXPECT_EQ(on_disk, before);
  auto wrong = s.PushNodeRows("feat", ids, ones.data(), 3, PushOp::kAssign);
  EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(wrong.message()).find("got 3"), std::string::npos) << wrong;
}

// Fields created at run time (a Python script's DistTensor, through CreateNodeField): zero rows
// for the partition's nodes, gathered and pushed like a file's field, bounded in total bytes.
TEST_F(PartitionStoreTest, CreatedFieldsAreZeroRowsThatPushesAndGathersReach) {
  PartitionStore& s = *stores_[1];
  bool created = false;
  const FieldSchema h{.name = "h", .dtype = DType::kFloat32, .row_shape = {3}};
  ASSERT_TRUE(s.CreateNodeField(h, 1 << 20, &created).ok());
  EXPECT_TRUE(created);
  ASSERT_TRUE(s.CreateNodeField(h, 1 << 20, &created).ok());  // again: attaches
  EXPECT_FALSE(created);
  std::vector<int64_t> ids = {s.node_start(), s.node_end() - 1};
  std::string rows;
  ASSERT_TRUE(s.GatherNodeRows("h", ids, &rows).ok());
  EXPECT_EQ(rows, std::string(24, '\0'));
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  ASSERT_TRUE(s.PushNodeRows("h", ids, v.data(), 24, PushOp::kAssign).ok());
  ASSERT_TRUE(s.GatherNodeRows("h", ids, &rows).ok());
  EXPECT_EQ(std::memcmp(rows.data(), v.data(), 24), 0);
  EXPECT_EQ(s.NodeFieldSchema("h")->row_shape, (std::vector<int64_t>{3}));
  // Refused: another schema, a field of the files, past the byte budget.
  EXPECT_EQ(s.CreateNodeField({.name = "h", .dtype = DType::kInt64, .row_shape = {3}}, 1 << 20, &created).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(s.CreateNodeField({.name = "feat", .dtype = DType::kFloat32, .row_shape = {}}, 1 << 20, &created).code(),
            absl::StatusCode::kAlreadyExists);
  auto big = s.CreateNodeField({.name = "big", .dtype = DType::kFloat64, .row_shape = {1000}}, 1 << 20, &created);
  EXPECT_EQ(big.code(), absl::StatusCode::kResourceExhausted) << big;
  EXPECT_FALSE(s.NodeFieldSchema("big").ok());
  // Unknown names list the created fields too.
  EXPECT_NE(std::string(s.NodeFieldSchema("nope").status().message()).find("h"), std::string::npos);
}

// Created fields live in shared memory that a client may map (CreatedFieldShare: the rows' pid,
// descriptor, token, size and nodes), and a mapping sees the pushes; past 256 of them they are
// kept in the heap, so that no number of fields runs the server out of descriptors.
TEST_F(PartitionStoreTest, CreatedFieldsAreSharedUpToABoundedNumber) {
  PartitionStore& s = *stores_[1];
  bool created = false;
  ASSERT_TRUE(s.CreateNodeField({.name = "w", .dtype = DType::kFloat32, .row_shape = {2}}, 1 << 24, &created).ok());
  auto share = s.CreatedFieldShare("w");
  ASSERT_TRUE(share.ok()) << share.status();
  EXPECT_EQ(share->base, s.node_start());
  EXPECT_EQ(share->end, s.node_end());
  EXPECT_EQ(share->rows.bytes, (s.node_end() - s.node_start()) * 8);
  auto mapped = SharedRows::Map(share->rows);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  const std::vector<float> v = {7, 8};
  const std::vector<int64_t> second = {s.node_start() + 1}, first = {s.node_start()};
  ASSERT_TRUE(s.PushNodeRows("w", second, v.data(), 8, PushOp::kAssign).ok());
  EXPECT_EQ(std::memcmp((*mapped)->data() + 8, v.data(), 8), 0);
  EXPECT_EQ(s.CreatedFieldShare("feat").status().code(), absl::StatusCode::kNotFound);  // the files'
  for (int i = 1; i < 300; ++i) {
    ASSERT_TRUE(s.CreateNodeField({.name = "f" + std::to_string(i), .dtype = DType::kInt8}, 1 << 24, &created).ok());
  }
  EXPECT_TRUE(s.CreatedFieldShare("f255").ok());
  EXPECT_EQ(s.CreatedFieldShare("f256").status().code(), absl::StatusCode::kNotFound);
  std::string rows;
  ASSERT_TRUE(s.GatherNodeRows("f299", first, &rows).ok());  // in the heap, as usable
  EXPECT_EQ(rows, std::string(1, '\0'));
  // Fields of no bytes count too: the number of created fields is bounded on its own.
  int made = 300;
  absl::Status st;
  for (; made <= 5000 && (st = s.CreateNodeField({.name = "e" + std::to_string(made), .dtype = DType::kInt8,
                                                  .row_shape = {0}}, 1 << 24, &created)).ok(); ++made) {
  }
  EXPECT_EQ(made, 4096);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(st.message(), "node field 'e4096': this server holds 4096 created fields, the most it keeps");
  EXPECT_TRUE(s.CreateNodeField({.name = "w", .dtype = DType::kFloat32, .row_shape = {2}}, 1 << 24, &created).ok())
      << "an existing field is still found";
}

// ---- sampling ----

std::vector<int64_t> AllNodes(const PartitionStore& s) {
  std::vector<int64_t> v;
  for (int64_t i = s.node_start(); i < s.node_end(); ++i) v.push_back(i);
  return v;
}

TEST_F(PartitionStoreTest, UniformSamplingFollowsDglSemantics) {
  for (EdgeDir dir : {EdgeDir::kIn, EdgeDir::kOut}) {
    for (int64_t fanout : {-1, 0, 1, 3, 10, 100}) {
      for (const auto& st : stores_) {
        std::vector<int64_t> seeds = AllNodes(*st);
        SampledEdges got;
        ASSERT_TRUE(SampleNeighbors(*st, seeds, {.fanout = fanout, .dir = dir, .seed = 5}, &got).ok());
        std::map<int64_t, std::vector<int64_t>> per_seed;
        for (size_t i = 0; i < got.size(); ++i) {
          // Every sampled edge exists, with the endpoints reported.
          ASSERT_EQ(edges_.at(got.eid[i]), std::make_pair(got.src[i], got.dst[i]));
          per_seed[dir == EdgeDir::kIn ? got.dst[i] : got.src[i]].push_back(got.eid[i]);
        }
        std::vector<int64_t> deg(seeds.size());
        ASSERT_TRUE(st->Degrees(seeds, dir, deg.data()).ok());
        for (size_t i = 0; i < seeds.size(); ++i) {
          const auto& e = per_seed[seeds[i]];
          int64_t want = fanout == -1 ? deg[i] : std::min(deg[i], fanout);
          ASSERT_EQ(static_cast<int64_t>(e.size()), want) << "seed " << seeds[i] << " fanout " << fanout;
          EXPECT_EQ(std::set<int64_t>(e.begin(), e.end()).size(), e.size()) << "duplicate without replacement";
        }
      }
    }
  }
}

TEST_F(PartitionStoreTest, SamplingIsDeterministicPerSeedAndIndependentOfBatching) {
  const PartitionStore& s = *stores_[0];
  std::vector<int64_t> seeds = AllNodes(s);
  SampledEdges all, again, other;
  ASSERT_TRUE(SampleNeighbors(s, seeds, {.fanout = 3, .seed = 9}, &all).ok());
  ASSERT_TRUE(SampleNeighbors(s, seeds, {.fanout = 3, .seed = 9}, &again).ok());
  ASSERT_TRUE(SampleNeighbors(s, seeds, {.fanout = 3, .seed = 10}, &other).ok());
  EXPECT_EQ(all.eid, again.eid);
  EXPECT_NE(all.eid, other.eid);
  // One seed alone gets the same edges as inside the batch.
  std::vector<int64_t> one = {seeds[7]};
  SampledEdges single;
  ASSERT_TRUE(SampleNeighbors(s, one, {.fanout = 3, .seed = 9}, &single).ok());
  std::vector<int64_t> in_batch;
  for (size_t i = 0; i < all.size(); ++i) {
    if (all.dst[i] == seeds[7]) in_batch.push_back(all.eid[i]);
  }
  EXPECT_EQ(single.eid, in_batch);
}

TEST_F(PartitionStoreTest, WithReplacementDrawsExactlyFanout) {
  const PartitionStore& s = *stores_[1];
  std::vector<int64_t> seeds = AllNodes(s);
  SampledEdges got;
  ASSERT_TRUE(SampleNeighbors(s, seeds, {.fanout = 25, .replace = true, .seed = 1}, &got).ok());
  std::vector<int64_t> deg(seeds.size());
  ASSERT_TRUE(s.Degrees(seeds, EdgeDir::kIn, deg.data()).ok());
  std::map<int64_t, int64_t> count;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(edges_.at(got.eid[i]), std::make_pair(got.src[i], got.dst[i]));
    ++count[got.dst[i]];
  }
  for (size_t i = 0; i < seeds.size(); ++i) EXPECT_EQ(count[seeds[i]], deg[i] > 0 ? 25 : 0);
}

// Weighted sampling picks edge e with probability proportional to its weight: a chi-square test
// over many independent draws (different seeds) of one node's neighbourhood, fixed seeds.
TEST_F(PartitionStoreTest, WeightedSamplingFollowsTheWeights) {
  const PartitionStore& s = *stores_[0];
  auto weights = s.EdgeWeights("w");
  ASSERT_TRUE(weights.ok()) << weights.status();
  // The node with the largest in-degree.
  int64_t best = s.node_start(), best_deg = 0;
  for (int64_t v = s.node_start(); v < s.node_end(); ++v) {
    int64_t d = s.Neighbors(v, EdgeDir::kIn).degree;
    if (d > best_deg) best = v, best_deg = d;
  }
  ASSERT_GE(best_deg, 10);
  auto adj = s.Neighbors(best, EdgeDir::kIn);
  const double* w = (*weights)->data() + (adj.first_eid - s.edge_start());
  double total = 0;
  for (int64_t i = 0; i < adj.degree; ++i) total += w[i];
  std::map<int64_t, int64_t> hits;
  const int kDraws = 40000;
  std::vector<int64_t> one = {best};
  for (int t = 0; t < kDraws; ++t) {
    SampledEdges got;
    ASSERT_TRUE(SampleNeighbors(s, one, {.fanout = 1, .replace = true, .weight_field = "w",
                                         .seed = static_cast<uint64_t>(t)}, &got).ok());
    ASSERT_EQ(got.size(), 1u);
    ++hits[got.eid[0]];
  }
  double chi2 = 0;
  int cells = 0;
  for (int64_t i = 0; i < adj.degree; ++i) {
    double expect = kDraws * w[i] / total;
    if (w[i] == 0) {
      EXPECT_EQ(hits[adj.eid(i)], 0) << "zero-weight edge drawn";
      continue;
    }
    chi2 += std::pow(hits[adj.eid(i)] - expect, 2) / expect;
    ++cells;
  }
  // 99.9th percentile of chi-square with (cells - 1) degrees of freedom is below 3*dof + 20.
  EXPECT_LT(chi2, 3.0 * (cells - 1) + 20) << "cells " << cells;

  // Without replacement: distinct, never a zero weight, heavier edges picked more often.
  std::map<int64_t, int64_t> picked;
  for (int t = 0; t < 4000; ++t) {
    SampledEdges got;
    ASSERT_TRUE(SampleNeighbors(s, one, {.fanout = 3, .weight_field = "w", .seed = static_cast<uint64_t>(t)}, &got).ok());
    std::set<int64_t> distinct(got.eid.begin(), got.eid.end());
    ASSERT_EQ(distinct.size(), got.size());
    for (int64_t e : got.eid) {
      ASSERT_GT(w[e - adj.first_eid], 0);
      ++picked[e];
    }
  }
  double light = 0, heavy = 0;
  int nl = 0, nh = 0;
  for (int64_t i = 0; i < adj.degree; ++i) {
    if (w[i] == 1) light += picked[adj.eid(i)], ++nl;
    if (w[i] == 4) heavy += picked[adj.eid(i)], ++nh;
  }
  if (nl > 0 && nh > 0) {
    EXPECT_GT(heavy / nh, 1.5 * light / nl);
  }
}

TEST_F(PartitionStoreTest, SamplingErrors) {
  const PartitionStore& s = *stores_[0];
  SampledEdges got;
  std::vector<int64_t> foreign = {stores_[1]->node_start()};
  EXPECT_EQ(SampleNeighbors(s, foreign, {.fanout = 2}, &got).code(), absl::StatusCode::kInvalidArgument);
  std::vector<int64_t> mine = {s.node_start()};
  EXPECT_EQ(SampleNeighbors(s, mine, {.fanout = -2}, &got).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SampleNeighbors(s, mine, {.fanout = 2, .weight_field = "nope"}, &got).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(SampleNeighbors(s, mine, {.fanout = 2, .dir = EdgeDir::kOut, .weight_field = "w"}, &got).code(),
            absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace fanout::core

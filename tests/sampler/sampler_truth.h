// Checks mini-batches against the dataset they were partitioned from: every block edge exists in
// the original graph, fanouts are respected, block invariants hold, features and labels equal the
// source rows. Shared by the sampler's unit and integration tests.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/npy.h"
#include "core/partition_config.h"
#include "core/partition_store.h"
#include "gtest/gtest.h"
#include "partition/dataset.h"
#include "sampler/minibatch.h"

namespace fanout::testing {

class BatchTruth {
 public:
  // `d` partitioned (with `reverse_edges` as given) into the output at `config_path`.
  BatchTruth(const partition::Dataset& d, bool reverse_edges, const std::string& config_path)
      : d_(d), view_(d, reverse_edges) {
    auto cfg = core::LoadPartitionConfig(config_path);
    EXPECT_TRUE(cfg.ok()) << cfg.status();
    config_ = *cfg;
    for (int k = 0; k < config_.num_parts; ++k) {
      auto nids = core::NpyArray::Map(config_.PartPath(k, core::PartFiles::kOrigNids));
      auto eids = core::NpyArray::Map(config_.PartPath(k, core::PartFiles::kOrigEids));
      EXPECT_TRUE(nids.ok() && eids.ok());
      orig_nid_.insert(orig_nid_.end(), nids->data_as<int64_t>(), nids->data_as<int64_t>() + nids->rows());
      orig_eid_.insert(orig_eid_.end(), eids->data_as<int64_t>(), eids->data_as<int64_t>() + eids->rows());
      auto store = core::PartitionStore::Open(config_, k);
      EXPECT_TRUE(store.ok()) << store.status();
      stores_.push_back(std::move(*store));
    }
  }

  int64_t InDegree(int64_t v) const {
    int64_t deg = 0;
    const auto& s = *stores_[stores_[0]->node_book().PartOf(v)];
    EXPECT_TRUE(s.Degrees({&v, 1}, core::EdgeDir::kIn, &deg).ok());
    return deg;
  }
  int64_t orig_nid(int64_t v) const { return orig_nid_[v]; }

  // Every check of one batch. `fanouts` in DGL order (input layer first).
  void Check(const sampler::MiniBatch& mb, const std::vector<int64_t>& fanouts, bool replace) const {
    const size_t L = fanouts.size();
    ASSERT_EQ(mb.blocks.size(), L);
    const sampler::Block& out = mb.blocks.back();
    ASSERT_EQ(out.num_dst, static_cast<int64_t>(mb.seeds.size()));
    ASSERT_TRUE(std::equal(mb.seeds.begin(), mb.seeds.end(), out.src_nodes.begin()));
    for (size_t l = 0; l < L; ++l) {
      const sampler::Block& b = mb.blocks[l];
      SCOPED_TRACE("layer " + std::to_string(l));
      ASSERT_LE(b.num_dst, b.num_src());
      ASSERT_EQ(std::set<int64_t>(b.src_nodes.begin(), b.src_nodes.end()).size(), b.src_nodes.size());
      ASSERT_EQ(b.indptr.size(), static_cast<size_t>(b.num_dst) + 1);
      ASSERT_EQ(b.indptr.front(), 0);
      ASSERT_EQ(b.indptr.back(), b.num_edges());
      ASSERT_EQ(b.eids.size(), b.indices.size());
      if (l + 1 < L) {
        const sampler::Block& next = mb.blocks[l + 1];
        ASSERT_EQ(b.num_dst, next.num_src()) << "a block's destinations are the next block's sources";
        ASSERT_TRUE(std::equal(next.src_nodes.begin(), next.src_nodes.end(), b.src_nodes.begin()));
      }
      for (int64_t j = 0; j < b.num_dst; ++j) {
        ASSERT_LE(b.indptr[j], b.indptr[j + 1]);
        const int64_t dst = b.src_nodes[j], n = b.indptr[j + 1] - b.indptr[j], deg = InDegree(dst);
        if (fanouts[l] == -1) {
          EXPECT_EQ(n, deg) << "fanout -1 takes every in-edge of node " << dst;
        } else if (replace) {
          EXPECT_EQ(n, deg == 0 ? 0 : fanouts[l]) << "node " << dst;
        } else {
          EXPECT_EQ(n, std::min(deg, fanouts[l])) << "node " << dst << " in-degree " << deg;
        }
        std::set<int64_t> seen;
        for (int64_t e = b.indptr[j]; e < b.indptr[j + 1]; ++e) {
          ASSERT_GE(b.indices[e], 0);
          ASSERT_LT(b.indices[e], b.num_src());
          if (!replace) {
            EXPECT_TRUE(seen.insert(b.eids[e]).second) << "edge " << b.eids[e] << " sampled twice";
          }
          // The edge exists in the source dataset, between the original IDs of its endpoints.
          const int64_t v = orig_eid_[b.eids[e]];
          ASSERT_EQ(view_.src(v), orig_nid_[b.src_nodes[b.indices[e]]]) << "edge " << b.eids[e];
          ASSERT_EQ(view_.dst(v), orig_nid_[dst]) << "edge " << b.eids[e];
        }
      }
    }
    // Features of the input nodes and labels of the seeds are the dataset's rows.
    const auto* feat = d_.FindNodeField("feat");
    if (mb.features.data != nullptr && feat != nullptr) {
      const auto& in = mb.input_nodes();
      ASSERT_EQ(mb.features.rows, static_cast<int64_t>(in.size()));
      ASSERT_EQ(mb.features.cols, feat->data.row_elems());
      ASSERT_EQ(mb.features.dtype, feat->data.dtype());  // as stored: the trainer converts
      const auto* rows = static_cast<const char*>(mb.features.data);
      const size_t rb = mb.features.row_bytes();
      for (size_t i = 0; i < in.size(); ++i) {
        ASSERT_EQ(std::memcmp(rows + i * rb, feat->data.row(orig_nid_[in[i]]), rb), 0)
            << "features of input node " << in[i];
      }
    }
    const auto* label = d_.FindNodeField("label");
    if (!mb.labels.empty() && label != nullptr) {
      ASSERT_EQ(mb.labels.size(), mb.seeds.size());
      for (size_t i = 0; i < mb.seeds.size(); ++i) {
        EXPECT_EQ(mb.labels[i], label->data.data_as<int64_t>()[orig_nid_[mb.seeds[i]]]) << "label of " << mb.seeds[i];
      }
    }
  }

 private:
  const partition::Dataset& d_;
  partition::EdgeView view_;
  core::PartitionConfig config_;
  std::vector<int64_t> orig_nid_, orig_eid_;
  std::vector<std::unique_ptr<core::PartitionStore>> stores_;
};

// The same fields, in the same order: names, dtypes, widths and values.
inline void ExpectSameFields(const sampler::Fields& a, const sampler::Fields& b) {
  ASSERT_EQ(a.size(), b.size());
  for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y) {
    EXPECT_EQ(x->name, y->name);
    EXPECT_EQ(x->dtype(), y->dtype()) << x->name;
    EXPECT_EQ(x->width, y->width) << x->name;
    EXPECT_EQ(x->matrix, y->matrix) << x->name;
    ASSERT_EQ(x->bytes(), y->bytes()) << x->name;
    EXPECT_EQ(std::memcmp(x->data(), y->data(), x->bytes()), 0) << x->name;
  }
}

// Two batches are the same batch: same seeds, blocks, labels, fields and feature bytes.
inline void ExpectSameBatch(const sampler::MiniBatch& a, const sampler::MiniBatch& b) {
  ASSERT_EQ(a.epoch, b.epoch);
  ASSERT_EQ(a.step, b.step);
  ASSERT_EQ(a.seeds, b.seeds);
  ASSERT_EQ(a.labels, b.labels);
  ASSERT_EQ(a.blocks.size(), b.blocks.size());
  for (size_t l = 0; l < a.blocks.size(); ++l) {
    EXPECT_EQ(a.blocks[l].src_nodes, b.blocks[l].src_nodes);
    EXPECT_EQ(a.blocks[l].num_dst, b.blocks[l].num_dst);
    EXPECT_EQ(a.blocks[l].indptr, b.blocks[l].indptr);
    EXPECT_EQ(a.blocks[l].indices, b.blocks[l].indices);
    EXPECT_EQ(a.blocks[l].eids, b.blocks[l].eids);
    ExpectSameFields(a.blocks[l].fields, b.blocks[l].fields);
  }
  ExpectSameFields(a.input_fields, b.input_fields);
  ExpectSameFields(a.seed_fields, b.seed_fields);
  ASSERT_EQ(a.features.rows, b.features.rows);
  ASSERT_EQ(a.features.cols, b.features.cols);
  ASSERT_EQ(a.features.dtype, b.features.dtype);
  EXPECT_EQ(std::memcmp(a.features.data, b.features.data, a.features.bytes()), 0);
}

}  // namespace fanout::testing

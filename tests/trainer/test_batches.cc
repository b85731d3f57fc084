#include "tests/trainer/test_batches.h"

#include <algorithm>
#include <memory>
#include <random>
#include <unordered_map>
#include <utility>

#include "base/check.h"

namespace fanout::trainer::testing {

sampler::Rows OwnedRows(std::vector<float> values, int64_t cols) {
  auto owned = std::make_shared<std::vector<float>>(std::move(values));
  sampler::Rows rows;
  rows.data = owned->data();
  rows.rows = cols == 0 ? 0 : static_cast<int64_t>(owned->size()) / cols;
  rows.cols = cols;
  rows.owner = owned;
  return rows;
}

sampler::MiniBatch HandBuiltBatch(int64_t in_dim, int64_t num_classes) {
  sampler::Block b;
  b.src_nodes = {100, 101, 102, 103, 104, 105, 106};
  b.num_dst = 4;
  // dst 0 <- {1, 4, 4, 0}; dst 1 <- {}; dst 2 <- {5, 6, 1}; dst 3 <- {3, 2}
  b.indptr = {0, 4, 4, 7, 9};
  b.indices = {1, 4, 4, 0, 5, 6, 1, 3, 2};
  for (int64_t e = 0; e < b.num_edges(); ++e) b.eids.push_back(1000 + e);
  sampler::MiniBatch batch;
  batch.seeds = {100, 101, 102, 103};
  batch.blocks = {b};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> features(b.num_src() * in_dim);
  for (float& f : features) f = uniform(rng);
  batch.features = OwnedRows(std::move(features), in_dim);
  for (int64_t i = 0; i < b.num_dst; ++i) batch.labels.push_back(i % num_classes);
  return batch;
}

sampler::MiniBatch MakeRandomBatch(const RandomBatchSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  constexpr int64_t kPool = 1000;
  std::uniform_int_distribution<int64_t> any_node(spec.id_offset, spec.id_offset + kPool - 1);
  std::vector<int64_t> frontier;
  while (static_cast<int64_t>(frontier.size()) < spec.num_seeds) {
    const int64_t v = any_node(rng);
    if (std::find(frontier.begin(), frontier.end(), v) == frontier.end()) frontier.push_back(v);
  }
  sampler::MiniBatch batch;
  batch.seeds = frontier;
  std::vector<sampler::Block> top_down;
  std::bernoulli_distribution no_edges(spec.zero_degree_fraction);
  std::bernoulli_distribution reuse(0.3);  // pick an existing source: self loops, duplicates
  std::uniform_int_distribution<int64_t> fanout(1, spec.max_fanout);
  int64_t next_eid = 0;
  for (int64_t l = 0; l < spec.num_layers; ++l) {
    sampler::Block b;
    b.src_nodes = frontier;
    b.num_dst = static_cast<int64_t>(frontier.size());
    std::unordered_map<int64_t, int64_t> local;
    for (int64_t i = 0; i < b.num_dst; ++i) local[frontier[i]] = i;
    b.indptr = {0};
    for (int64_t j = 0; j < b.num_dst; ++j) {
      const int64_t degree = no_edges(rng) ? 0 : fanout(rng);
      for (int64_t k = 0; k < degree; ++k) {
        int64_t index;
        if (reuse(rng)) {
          index = std::uniform_int_distribution<int64_t>(0, b.num_src() - 1)(rng);
        } else {
          const int64_t v = any_node(rng);
          auto [it, inserted] = local.emplace(v, b.num_src());
          if (inserted) b.src_nodes.push_back(v);
          index = it->second;
        }
        b.indices.push_back(index);
        b.eids.push_back(next_eid++);
      }
      b.indptr.push_back(b.num_edges());
    }
    frontier = b.src_nodes.ToVector();
    top_down.push_back(std::move(b));
  }
  batch.blocks.assign(top_down.rbegin(), top_down.rend());
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> features(frontier.size() * spec.in_dim);
  for (float& f : features) f = uniform(rng);
  batch.features = OwnedRows(std::move(features), spec.in_dim);
  std::uniform_int_distribution<int64_t> label(0, spec.num_classes - 1);
  for (int64_t i = 0; i < spec.num_seeds; ++i) batch.labels.push_back(label(rng));
  return batch;
}

sampler::MiniBatch UnionOfBatches(const sampler::MiniBatch& a, const sampler::MiniBatch& b) {
  FANOUT_CHECK(a.blocks.size() == b.blocks.size());
  FANOUT_CHECK(a.features.cols == b.features.cols);
  const sampler::MiniBatch* in[2] = {&a, &b};
  // Each node of the union is (which batch, its index in that batch's current node list),
  // listed in the union's order; built from the output layer down, since layer l's destination
  // order is layer l + 1's source order.
  using Node = std::pair<int, int64_t>;
  std::vector<Node> dst_order;
  for (int w = 0; w < 2; ++w) {
    for (int64_t i = 0; i < in[w]->blocks.back().num_dst; ++i) dst_order.push_back({w, i});
  }
  sampler::MiniBatch out;
  out.blocks.resize(a.blocks.size());
  for (size_t l = a.blocks.size(); l-- > 0;) {
    const sampler::Block* block[2] = {&a.blocks[l], &b.blocks[l]};
    std::vector<Node> src_order = dst_order;
    for (int w = 0; w < 2; ++w) {
      for (int64_t i = block[w]->num_dst; i < block[w]->num_src(); ++i) src_order.push_back({w, i});
    }
    std::vector<int64_t> position[2] = {std::vector<int64_t>(block[0]->num_src()),
                                        std::vector<int64_t>(block[1]->num_src())};
    sampler::Block& o = out.blocks[l];
    for (size_t k = 0; k < src_order.size(); ++k) {
      const auto [w, i] = src_order[k];
      position[w][i] = static_cast<int64_t>(k);
      o.src_nodes.push_back(block[w]->src_nodes[i]);
    }
    o.num_dst = static_cast<int64_t>(dst_order.size());
    o.indptr = {0};
    for (const auto& [w, j] : dst_order) {
      for (int64_t e = block[w]->indptr[j]; e < block[w]->indptr[j + 1]; ++e) {
        o.indices.push_back(position[w][block[w]->indices[e]]);
        o.eids.push_back(block[w]->eids[e]);
      }
      o.indptr.push_back(o.num_edges());
    }
    dst_order = std::move(src_order);
  }
  const int64_t cols = a.features.cols;
  std::vector<float> features;
  for (const auto& [w, i] : dst_order) {
    const float* row = in[w]->features.as<float>() + i * cols;
    features.insert(features.end(), row, row + cols);
  }
  out.features = OwnedRows(std::move(features), cols);
  for (int w = 0; w < 2; ++w) {
    out.seeds.insert(out.seeds.end(), in[w]->seeds.begin(), in[w]->seeds.end());
    out.labels.insert(out.labels.end(), in[w]->labels.begin(), in[w]->labels.end());
  }
  return out;
}

}  // namespace fanout::trainer::testing

// Mini-batches built by hand or at random for the trainer tests (no LibTorch here).
#pragma once

#include <cstdint>
#include <vector>

#include "sampler/minibatch.h"

namespace fanout::trainer::testing {

// float32 Rows that own a copy of `values` (rows = values.size() / cols).
sampler::Rows OwnedRows(std::vector<float> values, int64_t cols);

// One block, 4 destinations and 7 sources, with the cases the models must handle: a duplicated
// edge (4 -> 0 twice), a self loop (0 -> 0), a destination without in-edges (1), a source used
// by two destinations (1 -> 0, 1 -> 2), and sources that are destinations too. Features are
// 7 x in_dim, labels 4.
sampler::MiniBatch HandBuiltBatch(int64_t in_dim, int64_t num_classes);

struct RandomBatchSpec {
  int64_t num_seeds = 6;
  int64_t num_layers = 2;
  int64_t max_fanout = 4;
  double zero_degree_fraction = 0.2;  // destinations sampled without in-edges
  int64_t in_dim = 5;
  int64_t num_classes = 3;
  int64_t id_offset = 0;  // global IDs are drawn from [id_offset, id_offset + 1000)
  uint64_t seed = 1;
};

// A valid multi-layer mini-batch with random structure, duplicate edges, self loops and
// zero-in-degree destinations, random features and labels.
sampler::MiniBatch MakeRandomBatch(const RandomBatchSpec& spec);

// The disjoint union of two mini-batches with the same number of layers and feature width and
// disjoint global IDs: one batch whose seeds are a's then b's. A GNN's output on it is a's
// output followed by b's.
sampler::MiniBatch UnionOfBatches(const sampler::MiniBatch& a, const sampler::MiniBatch& b);

}  // namespace fanout::trainer::testing

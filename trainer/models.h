// GNN models on sampled blocks: GraphSAGE (mean), GCN and GAT, with DGL's layer semantics
// (SAGEConv, GraphConv(norm='both'), GATConv), and for typed graphs R-GCN (per-relation means,
// summed, with a self term), R-GAT (a GAT per relation, summed, with a self term) and HGT (PyG's
// HGTConv). Exact definitions: docs/training.md. Each is a GnnModel (gnn_model.h).
//
// Message passing uses index_select / index_add over the block's edge list only (never a dense
// adjacency matrix), so memory grows with the number of sampled edges.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "trainer/batch_tensors.h"
#include "trainer/gnn_model.h"
#include "trainer/model_kinds.h"  // the models' names, defaults and option checks

namespace fanout::trainer {

// Whether a layer with weight [out, in] on block `b` projects the sources before aggregating
// (messages of width `out`) rather than aggregating first and projecting the destinations
// (width `in`); both give the same result. DGL decides by in > out alone, but a sampled block
// has several times more sources than destinations, so projecting first multiplies every
// source: the choice here compares the two costs (matrix-product FLOPs plus aggregated
// elements, each weighted by its measured cost).
bool ProjectBeforeAggregating(const BlockTensors& b, int64_t in, int64_t out);

// Builds the model `options` describe, its parameters initialised on the CPU the way DGL
// initialises the layer (xavier-uniform / xavier-normal with ReLU gain, zero biases) from a
// generator seeded with `init_seed` alone: equal seeds give bit-identical parameters, and
// LibTorch's global generator is neither used nor advanced. Move it with model->to(device).
absl::StatusOr<std::shared_ptr<GnnModel>> MakeModel(const ModelOptions& options,
                                                    uint64_t init_seed);

}  // namespace fanout::trainer

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
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/batch_tensors.h"
#include "trainer/gnn_model.h"

namespace fanout::trainer {

// "sage", "gcn", "gat", "rgcn", "rgat", "hgt", or a TorchScript file (a name ending in .pt or .pth, or any existing
// file: kScripted; the path goes to ModelOptions::script_path). INVALID_ARGUMENT lists the
// valid names.
absl::StatusOr<ModelKind> ParseModelKind(std::string_view name);
std::string_view ModelKindName(ModelKind kind);
// The model's --dropout when none is given: 0.5, or the peers' own where they differ (rgat: 0.2,
// MLPerf's R-GAT).
double DefaultDropout(ModelKind kind);
// The built-in models' names, in ModelKind order ("sage", "gcn", ...): for help texts.
std::vector<std::string_view> BuiltInModelNames();

// OK, or INVALID_ARGUMENT naming the first bad field and its valid range.
absl::Status ValidateModelOptions(const ModelOptions& options);
// OK when a built-in model of `options` fits in `memory_bytes` with its training state (values,
// gradients, Adam's moments); otherwise INVALID_ARGUMENT naming --hidden and both sizes, so that
// a size no machine can hold is refused up front instead of failing inside LibTorch.
// ValidateModelOptions applies it with this machine's usable memory.
absl::Status CheckModelFits(const ModelOptions& options, int64_t memory_bytes);

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

// GNN models on sampled blocks: GraphSAGE (mean), GCN and GAT, with DGL's layer semantics
// (SAGEConv, GraphConv(norm='both'), GATConv), and for typed graphs R-GCN (per-relation means,
// summed, with a self term), R-GAT (a GAT per relation, summed, with a self term) and HGT (PyG's
// HGTConv). Exact definitions: docs/training.md.
//
// Message passing uses index_select / index_add over the block's edge list only (never a dense
// adjacency matrix), so memory grows with the number of sampled edges.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/batch_tensors.h"

namespace fanout::trainer {

enum class ModelKind { kSage, kGcn, kGat, kRgcn, kRgat, kHgt, kScripted };

// "sage", "gcn", "gat", "rgcn", "rgat", "hgt", or a TorchScript file (a name ending in .pt or .pth, or any existing
// file: kScripted; the path goes to ModelOptions::script_path). INVALID_ARGUMENT lists the
// valid names.
absl::StatusOr<ModelKind> ParseModelKind(std::string_view name);
std::string_view ModelKindName(ModelKind kind);

struct ModelOptions {
  ModelKind model = ModelKind::kSage;
  int64_t in_dim = 0;       // input feature width; required
  int64_t hidden = 256;     // hidden width (per head for gat; all heads together for rgat and hgt)
  int64_t num_classes = 0;  // output width; required
  int64_t num_layers = 2;   // layers = blocks per mini-batch (one block per layer)
  double dropout = 0.5;     // in [0, 1); gat and rgat also use it for attention and input dropout
  int64_t heads = 4;        // gat, rgat, hgt: attention heads of every layer, unless layer_heads is set
  std::vector<int64_t> layer_heads;  // gat, rgat, hgt: heads per layer (--heads 8,1); empty: `heads`
  int64_t num_relations = 1;         // rgcn, rgat, hgt: the graph's edge types (the job sets it)
  int64_t num_node_types = 1;        // hgt: the graph's node types (the job sets it)
  // Aggregate with the fused kernels (message_passing.h); false runs the ATen composition that
  // builds per-edge message tensors (the reference, and what CUDA runs either way).
  bool fused = true;
  // kScripted: the TorchScript file (scripted_model.h); hidden, dropout and heads are the
  // script's own then.
  std::string script_path;
};

// OK, or INVALID_ARGUMENT naming the first bad field and its valid range.
absl::Status ValidateModelOptions(const ModelOptions& options);
// OK when a built-in model of `options` fits in `memory_bytes` with its training state (values,
// gradients, Adam's moments); otherwise INVALID_ARGUMENT naming --hidden and both sizes, so that
// a size no machine can hold is refused up front instead of failing inside LibTorch.
// ValidateModelOptions applies it with this machine's usable memory.
absl::Status CheckModelFits(const ModelOptions& options, int64_t memory_bytes);

// Whether the model has attention heads (gat, rgat, hgt).
bool UsesHeads(ModelKind kind);
// The heads of layer l of an attention model: layer_heads[l], else heads.
int64_t HeadsOf(const ModelOptions& options, int64_t layer);

// A GNN over a mini-batch's blocks. It is a torch::nn::Module: parameters() lists parameters in
// registration order, which is the same in every process (layer 0 first; within a layer in the
// order docs/training.md lists), so gradient buckets and checkpoints line up across ranks.
// train() / eval() switch dropout on / off. Not thread-safe (as any Module).
class GnnModel : public torch::nn::Module {
 public:
  explicit GnnModel(const ModelOptions& options) : options_(options) {}
  const ModelOptions& options() const { return options_; }

  // blocks.size() must equal num_layers; x is [blocks[0].num_src, in_dim] float32 on the
  // parameters' device. Returns logits [blocks.back().num_dst, num_classes]. Throws c10::Error
  // on a shape mismatch (wrap calls in CatchTorch, torch_util.h, to get a Status).
  virtual at::Tensor Forward(const std::vector<BlockTensors>& blocks, const at::Tensor& x) = 0;

  // Layer `layer` alone, for layer-wise inference over the whole graph (inference.h): h holds the
  // input of that layer for block.num_src nodes; returns its output for the block's destinations,
  // with what Forward applies between layers (activation; dropout in training only), so that
  // chaining ForwardLayer over the layers gives Forward. Throws c10::Error when the model cannot
  // run layer by layer (SupportsLayerwise() false).
  virtual at::Tensor ForwardLayer(int64_t layer, const BlockTensors& block, const at::Tensor& h) = 0;
  virtual bool SupportsLayerwise() const { return true; }

  // Forward for a caller that hands over its last reference to x (evaluation, under no_grad):
  // the same result, but a model may let go of x as soon as its input layer no longer needs
  // it, so that x and the input layer's output are not in memory together (the built-in
  // GraphSAGE layer does: at products scale a 4096-seed batch's x is 0.33 GB and the layer's
  // output 0.27 GB). By default, Forward.
  virtual at::Tensor Infer(const std::vector<BlockTensors>& blocks, at::Tensor x) { return Forward(blocks, x); }

  // Parameters, then buffers, under the names PyTorch code gives them: `layers.0.fc_self.weight`
  // for the built-in models (the names of python/fanout's models.GNN, which loads them), a
  // scripted model's own names. In parameters() order; the model's own tensors, not copies.
  std::vector<std::pair<std::string, at::Tensor>> StateDict() const;

 protected:
  // The public name of a tensor registered under `name` (default: the same).
  virtual std::string PublicName(const std::string& name) const { return name; }

 private:
  ModelOptions options_;
};

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

// The interface every GNN model fanout trains implements: GnnModel, a torch::nn::Module over a
// mini-batch's blocks, and the ModelOptions that describe one. The built-in models and MakeModel
// are in models.h, models written in Python (TorchScript) in scripted_model.h.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trainer/batch_tensors.h"

namespace fanout::trainer {

// The model a ModelOptions describes: a built-in one (models.h), or a TorchScript file (kScripted).
enum class ModelKind { kSage, kGcn, kGat, kRgcn, kRgat, kHgt, kScripted };

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

}  // namespace fanout::trainer

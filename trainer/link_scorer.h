// Link prediction's score of a node pair from the two nodes' embeddings (the GNN's outputs):
//   dot: <a, b>, no parameters (DGL's DotPredictor, PyG's link examples);
//   mlp: an MLP over the element-wise product a * b, Linear(D, D) -> ReLU -> Linear(D, D) ->
//        ReLU -> Linear(D, 1), as the predictor of DGL's GraphSAGE link-prediction example;
//   distmult: <a, r, b> = sum(a * r * b) with a learnable vector r per relation (DistMult, as
//        GraphStorm's decoder of the same name): one row per edge type of the graph (one on a
//        graph of one type), each pair scored with its relation's row (by default the one the
//        scorer was made with).
// The score is a logit: binary cross-entropy with logits trains it; ROC-AUC, MRR and Hits@K rank
// it as it is.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace fanout::trainer {

enum class ScorerKind { kDot, kMlp, kDistMult };

// "dot", "mlp" or "distmult"; INVALID_ARGUMENT lists them.
absl::StatusOr<ScorerKind> ParseScorerKind(std::string_view name);
std::string_view ScorerKindName(ScorerKind kind);

// Registered by the trainer as the submodule `scorer` of its GnnModel, so that its parameters
// (mlp only) are trained, synchronised and checkpointed with the model's, under PyTorch's names
// `scorer.0.weight`, `scorer.0.bias`, `scorer.2.weight`, ... (an nn.Sequential of Linear and
// ReLU: python/fanout's models.MLPScorer loads them), or `scorer.relations` [R, D] (distmult:
// models.DistMultScorer). Not thread-safe (as any Module).
class LinkScorer : public torch::nn::Module {
 public:
  // Parameters drawn from a generator seeded with `init_seed` alone: mlp as torch.nn.Linear's
  // default initialisation, distmult's [num_relations, dim] Xavier-uniform with ReLU's gain (as
  // GraphStorm's). dim >= 1; `relation` in [0, num_relations): the row distmult scores with.
  LinkScorer(ScorerKind kind, int64_t dim, uint64_t init_seed, int64_t num_relations = 1, int64_t relation = 0);
  ScorerKind kind() const { return kind_; }

  // a, b: [n, dim] embeddings of the pairs' two ends (float32, on the parameters' device);
  // `rel` (optional, int64 [n]): each pair's edge type, the distmult row it is scored with
  // (undefined: the scorer's `relation`; dot and mlp ignore it). Returns their scores [n].
  // Throws c10::Error on a shape mismatch.
  at::Tensor Score(const at::Tensor& a, const at::Tensor& b, const at::Tensor& rel = {});
  // Every a against every b: a [n, dim], b [m, dim] -> scores [n, m] (row i, column j: Score of
  // a[i] and b[j] with a[i]'s relation `rel`[i]); a product of matrices for dot and distmult,
  // chunks of pairs for mlp.
  at::Tensor ScoreAll(const at::Tensor& a, const at::Tensor& b, const at::Tensor& rel = {});

 private:
  ScorerKind kind_;
  int64_t dim_;
  int64_t relation_ = 0;
  // distmult: the relation vectors of pairs of relations `rel` ([n, dim]; one row when undefined).
  at::Tensor RelationRows(const at::Tensor& rel);
  std::vector<torch::nn::Linear> linears_;  // mlp: scorer.0, scorer.2, scorer.4
  at::Tensor relations_;                    // distmult: scorer.relations
};

}  // namespace fanout::trainer

// Link prediction's training losses, over a batch's positive scores and each positive's
// negatives' scores (logits from the scorer, link_scorer.h):
//   bce          binary cross-entropy with logits, the mean over every positive and negative pair
//                (DGL's and PyG's link examples);
//   weighted-bce the same with each positive pair weighted by its edge's weight (negatives 1), as
//                GraphStorm's weighted cross-entropy: mean(w * bce) over the pairs;
//   adversarial  self-adversarial negative sampling (RotatE, GraphStorm's adversarial
//                cross-entropy): (-mean log σ(pos) - mean_i Σ_j p_ij log σ(-neg_ij)) / 2, where
//                p_i = softmax(neg_i · T) over positive i's negatives, not differentiated
//                (detached): the hardest negatives weigh most;
//   contrastive  InfoNCE: mean_i -log(exp(pos_i / T) / (exp(pos_i / T) + Σ_j exp(neg_ij / T))),
//                the positive as the right class among its negatives (GraphStorm's contrastive
//                loss).
#pragma once

#include <ATen/core/Tensor.h>

#include <string_view>

#include "absl/status/statusor.h"

namespace fanout::trainer {

enum class LinkLoss { kBce, kWeightedBce, kAdversarial, kContrastive };

// "bce", "weighted-bce", "adversarial", "contrastive"; and back (INVALID_ARGUMENT lists them).
std::string_view LinkLossName(LinkLoss loss);
absl::StatusOr<LinkLoss> ParseLinkLoss(std::string_view name);

struct LinkLossOptions {
  LinkLoss kind = LinkLoss::kBce;
  double temperature = 1.0;  // adversarial: T multiplies the scores; contrastive: T divides them
};

// pos: [n] scores; neg: [n, k] (row i: positive i's negatives; k may be 0); pos_weight: [n] for
// kWeightedBce (undefined otherwise). A 0-dim loss to minimise. Throws c10::Error on shapes
// that do not match.
at::Tensor LinkLossOf(const LinkLossOptions& options, const at::Tensor& pos, const at::Tensor& neg,
                      const at::Tensor& pos_weight = {});

}  // namespace fanout::trainer

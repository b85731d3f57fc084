#include "trainer/link_loss.h"

#include <ATen/ops/binary_cross_entropy_with_logits.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/log_sigmoid.h>
#include <ATen/ops/log_softmax.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/Exception.h>

#include <utility>

#include "base/enum_names.h"
#include "base/strings.h"

namespace fanout::trainer {
namespace {

constexpr std::pair<LinkLoss, std::string_view> kNames[] = {
    {LinkLoss::kBce, "bce"},
    {LinkLoss::kWeightedBce, "weighted-bce"},
    {LinkLoss::kAdversarial, "adversarial"},
    {LinkLoss::kContrastive, "contrastive"},
};

}  // namespace

std::string_view LinkLossName(LinkLoss loss) { return base::EnumName(kNames, loss); }

absl::StatusOr<LinkLoss> ParseLinkLoss(std::string_view name) {
  if (std::optional<LinkLoss> l = base::EnumFromName(kNames, name)) return *l;
  return absl::InvalidArgumentError(base::StrCat("'", name, "' is not a link loss: ", base::EnumNameList(kNames)));
}

at::Tensor LinkLossOf(const LinkLossOptions& o, const at::Tensor& pos, const at::Tensor& neg,
                      const at::Tensor& pos_weight) {
  TORCH_CHECK_VALUE(pos.dim() == 1 && neg.dim() == 2 && neg.size(0) == pos.size(0), "link loss: scores of ",
                    pos.sizes(), " positives and ", neg.sizes(), " negatives, expected [n] and [n, k]");
  switch (o.kind) {
    case LinkLoss::kBce:
    case LinkLoss::kWeightedBce: {
      const at::Tensor scores = at::cat({pos, neg.flatten()});
      const at::Tensor labels = at::cat({at::ones_like(pos), at::zeros_like(neg.flatten())});
      if (o.kind == LinkLoss::kBce) return at::binary_cross_entropy_with_logits(scores, labels);
      TORCH_CHECK_VALUE(pos_weight.defined() && pos_weight.sizes().equals(pos.sizes()),
                        "weighted-bce: one weight per positive expected");
      const at::Tensor weights = at::cat({pos_weight.to(pos.scalar_type()), at::ones_like(neg.flatten())});
      return at::binary_cross_entropy_with_logits(scores, labels, weights);
    }
    case LinkLoss::kAdversarial: {
      const at::Tensor pos_loss = -at::log_sigmoid(pos).mean();
      if (neg.size(1) == 0) return pos_loss / 2;
      const at::Tensor p = at::softmax(neg.detach() * o.temperature, 1);
      const at::Tensor neg_loss = -(p * at::log_sigmoid(-neg)).sum(1).mean();
      return (pos_loss + neg_loss) / 2;
    }
    case LinkLoss::kContrastive: {
      const at::Tensor logits = at::cat({pos.unsqueeze(1), neg}, 1) / o.temperature;
      return -at::log_softmax(logits, 1).select(1, 0).mean();
    }
  }
  TORCH_CHECK_VALUE(false, "link loss: unknown kind");
}

}  // namespace fanout::trainer

#include "trainer/link_scorer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/relu.h>

#include <cmath>
#include <memory>
#include <string>

#include "base/strings.h"

namespace fanout::trainer {

using base::StrCat;

absl::StatusOr<ScorerKind> ParseScorerKind(std::string_view name) {
  if (name == "dot") return ScorerKind::kDot;
  if (name == "mlp") return ScorerKind::kMlp;
  return absl::InvalidArgumentError(StrCat("--scorer: '", name, "' is not one of dot, mlp"));
}

std::string_view ScorerKindName(ScorerKind kind) { return kind == ScorerKind::kDot ? "dot" : "mlp"; }

LinkScorer::LinkScorer(ScorerKind kind, int64_t dim, uint64_t init_seed) : kind_(kind), dim_(dim) {
  TORCH_CHECK_VALUE(dim >= 1, "a link scorer needs an embedding width >= 1, got ", dim);
  if (kind != ScorerKind::kMlp) return;
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(init_seed);
  // torch.nn.Linear's reset_parameters: weight and bias uniform in +-1/sqrt(fan_in) (kaiming
  // uniform with a = sqrt(5) reduces to this bound for the weight).
  const double bound = 1.0 / std::sqrt(static_cast<double>(dim));
  for (int64_t i = 0; i < 3; ++i) {
    const int64_t out = i == 2 ? 1 : dim;
    torch::nn::Linear l(torch::nn::LinearOptions(dim, out));
    {
      at::NoGradGuard no_grad;
      l->weight.uniform_(-bound, bound, gen);
      l->bias.uniform_(-bound, bound, gen);
    }
    // Sequential indices: Linear at 0, 2, 4 with the ReLUs (no parameters) at 1 and 3.
    linears_.push_back(register_module(StrCat(2 * i), l));
  }
}

at::Tensor LinkScorer::Score(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK_VALUE(a.dim() == 2 && a.sizes().equals(b.sizes()) && a.size(1) == dim_, "link scorer: pairs of ",
                    a.sizes(), " and ", b.sizes(), ", expected two [n, ", dim_, "] embeddings");
  if (kind_ == ScorerKind::kDot) return (a * b).sum(1);
  at::Tensor h = a * b;
  for (size_t i = 0; i < linears_.size(); ++i) {
    h = linears_[i]->forward(h);
    if (i + 1 < linears_.size()) h = at::relu(h);
  }
  return h.squeeze(1);
}

}  // namespace fanout::trainer

#include "trainer/link_scorer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/relu.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "base/enum_names.h"
#include "base/strings.h"

namespace fanout::trainer {

using base::StrCat;

namespace {

constexpr std::pair<ScorerKind, std::string_view> kScorerNames[] = {
    {ScorerKind::kDot, "dot"}, {ScorerKind::kMlp, "mlp"}, {ScorerKind::kDistMult, "distmult"}};

}  // namespace

absl::StatusOr<ScorerKind> ParseScorerKind(std::string_view name) {
  if (std::optional<ScorerKind> k = base::EnumFromName(kScorerNames, name)) return *k;
  return absl::InvalidArgumentError(StrCat("--scorer: '", name, "' is not one of ", base::EnumNameList(kScorerNames)));
}

std::string_view ScorerKindName(ScorerKind kind) { return base::EnumName(kScorerNames, kind); }

LinkScorer::LinkScorer(ScorerKind kind, int64_t dim, uint64_t init_seed, int64_t num_relations, int64_t relation)
    : kind_(kind), dim_(dim), relation_(relation) {
  TORCH_CHECK_VALUE(dim >= 1, "a link scorer needs an embedding width >= 1, got ", dim);
  TORCH_CHECK_VALUE(num_relations >= 1 && relation >= 0 && relation < num_relations, "link scorer: relation ",
                    relation, " of ", num_relations);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(init_seed);
  if (kind == ScorerKind::kDistMult) {
    // torch.nn.init.xavier_uniform_(w, gain=calculate_gain("relu")): bound gain * sqrt(6 / (fan_in + fan_out)).
    const double bound = std::sqrt(2.0) * std::sqrt(6.0 / static_cast<double>(num_relations + dim));
    at::NoGradGuard no_grad;
    relations_ = register_parameter("relations", at::empty({num_relations, dim}).uniform_(-bound, bound, gen));
    return;
  }
  if (kind != ScorerKind::kMlp) return;
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

at::Tensor LinkScorer::RelationRows(const at::Tensor& rel) {
  if (!rel.defined()) return relations_[relation_];
  TORCH_CHECK_VALUE(rel.dim() == 1, "link scorer: relations of shape ", rel.sizes(), ", expected [n]");
  return relations_.index_select(0, rel);
}

at::Tensor LinkScorer::Score(const at::Tensor& a, const at::Tensor& b, const at::Tensor& rel) {
  TORCH_CHECK_VALUE(a.dim() == 2 && a.sizes().equals(b.sizes()) && a.size(1) == dim_, "link scorer: pairs of ",
                    a.sizes(), " and ", b.sizes(), ", expected two [n, ", dim_, "] embeddings");
  if (kind_ == ScorerKind::kDot) return (a * b).sum(1);
  if (kind_ == ScorerKind::kDistMult) return (a * RelationRows(rel) * b).sum(1);
  at::Tensor h = a * b;
  for (size_t i = 0; i < linears_.size(); ++i) {
    h = linears_[i]->forward(h);
    if (i + 1 < linears_.size()) h = at::relu(h);
  }
  return h.squeeze(1);
}

at::Tensor LinkScorer::ScoreAll(const at::Tensor& a, const at::Tensor& b, const at::Tensor& rel) {
  TORCH_CHECK_VALUE(a.dim() == 2 && b.dim() == 2 && a.size(1) == dim_ && b.size(1) == dim_, "link scorer: ",
                    a.sizes(), " against ", b.sizes(), ", expected [n, ", dim_, "] and [m, ", dim_, "]");
  if (kind_ == ScorerKind::kDot) return at::matmul(a, b.t());
  if (kind_ == ScorerKind::kDistMult) return at::matmul(a * RelationRows(rel), b.t());
  // mlp: the pairs row by row of `a`, about a million pairs at a time.
  const int64_t n = a.size(0), m = b.size(0);
  const int64_t rows = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, m));
  std::vector<at::Tensor> parts;
  for (int64_t i = 0; i < n; i += rows) {
    const int64_t r = std::min(rows, n - i);
    const at::Tensor left = a.narrow(0, i, r).unsqueeze(1).expand({r, m, dim_}).reshape({r * m, dim_});
    const at::Tensor right = b.unsqueeze(0).expand({r, m, dim_}).reshape({r * m, dim_});
    parts.push_back(Score(left, right).view({r, m}));
  }
  return parts.empty() ? at::empty({0, m}, a.options()) : at::cat(parts);
}

}  // namespace fanout::trainer

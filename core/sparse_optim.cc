#include "core/sparse_optim.h"

#include <cmath>

#include "base/strings.h"

namespace fanout::core {

absl::StatusOr<SparseOptimizerKind> ParseSparseOptimizer(std::string_view name) {
  if (name == "adam") return SparseOptimizerKind::kAdam;
  if (name == "adagrad") return SparseOptimizerKind::kAdagrad;
  return absl::InvalidArgumentError(base::StrCat("unknown sparse optimizer '", name, "': expected adam or adagrad"));
}

std::string_view SparseOptimizerName(SparseOptimizerKind kind) {
  return kind == SparseOptimizerKind::kAdam ? "adam" : "adagrad";
}

absl::Status CheckSparseOptimizer(const SparseOptimizerOptions& o) {
  if (!(std::isfinite(o.lr) && o.lr > 0)) return absl::InvalidArgumentError(base::StrCat("lr must be > 0, got ", o.lr));
  if (!(std::isfinite(o.eps) && o.eps > 0)) return absl::InvalidArgumentError(base::StrCat("eps must be > 0, got ", o.eps));
  for (double b : {o.beta1, o.beta2}) {
    if (!(b >= 0 && b < 1)) return absl::InvalidArgumentError(base::StrCat("betas must be in [0, 1), got ", b));
  }
  return absl::OkStatus();
}

int64_t SparseStateWidth(SparseOptimizerKind kind, int64_t dim) {
  return kind == SparseOptimizerKind::kAdam ? 2 * dim + 1 : dim;
}

void SparseUpdateRow(const SparseOptimizerOptions& o, int64_t d, float* w, float* s, const float* g) {
  if (o.kind == SparseOptimizerKind::kAdagrad) {
    for (int64_t k = 0; k < d; ++k) {
      s[k] += g[k] * g[k];
      w[k] -= static_cast<float>(o.lr * g[k] / (std::sqrt(static_cast<double>(s[k])) + o.eps));
    }
    return;
  }
  float* m = s;
  float* v = s + d;
  const double t = static_cast<double>(s[2 * d]) + 1;  // this row's own step count
  s[2 * d] = static_cast<float>(t);
  const double c1 = 1 - std::pow(o.beta1, t), c2 = 1 - std::pow(o.beta2, t);
  for (int64_t k = 0; k < d; ++k) {
    m[k] = static_cast<float>(o.beta1 * m[k] + (1 - o.beta1) * g[k]);
    v[k] = static_cast<float>(o.beta2 * v[k] + (1 - o.beta2) * static_cast<double>(g[k]) * g[k]);
    w[k] -= static_cast<float>(o.lr * (m[k] / c1) / (std::sqrt(v[k] / c2) + o.eps));
  }
}

void SparseUpdate(const SparseOptimizerOptions& o, int64_t n, int64_t dim, float* rows, float* state,
                  const float* grads) {
  const int64_t sw = SparseStateWidth(o.kind, dim);
  for (int64_t i = 0; i < n; ++i) SparseUpdateRow(o, dim, rows + i * dim, state + i * sw, grads + i * dim);
}

}  // namespace fanout::core

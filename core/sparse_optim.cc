#include "core/sparse_optim.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

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

absl::Status SparseStateWidthError(SparseOptimizerKind kind, int64_t dim, std::string_view rows_key,
                                   std::string_view state_key, int64_t state_width) {
  return absl::InvalidArgumentError(base::StrCat("field '", state_key, "' holds ", state_width,
                                                 " values per row of its nodes; ", SparseOptimizerName(kind), " on [",
                                                 dim, "]-wide rows of '", rows_key, "' keeps ",
                                                 SparseStateWidth(kind, dim), " per row of the same nodes"));
}

absl::Status CheckSparseGradients(std::span<const int64_t> ids, int64_t first_id, int64_t num_rows, int64_t dim,
                                  const float* grads) {
  const size_t n = ids.size();
  if (num_rows <= 64 * static_cast<int64_t>(n)) {
    // At most 8 bytes of bitmap per ID: one pass, no sort (a step of setup H: ~25K IDs).
    std::vector<uint64_t> seen(static_cast<size_t>(num_rows + 63) / 64, 0);
    for (int64_t id : ids) {
      const uint64_t r = static_cast<uint64_t>(id - first_id), bit = uint64_t{1} << (r % 64);
      if (r >= static_cast<uint64_t>(num_rows)) {  // the callers check first; never index past the bitmap
        return absl::InvalidArgumentError(base::StrCat("node ", id, " has no row here (rows of nodes [", first_id, ", ",
                                                       first_id + num_rows, "))"));
      }
      if (seen[r / 64] & bit) {
        return absl::InvalidArgumentError(
            base::StrCat("node ", id, " appears twice in one sparse update (sum its gradients first)"));
      }
      seen[r / 64] |= bit;
    }
  } else {
    std::vector<int64_t> sorted(ids.begin(), ids.end());
    std::sort(sorted.begin(), sorted.end());
    if (auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
      return absl::InvalidArgumentError(
          base::StrCat("node ", *dup, " appears twice in one sparse update (sum its gradients first)"));
    }
  }
  // Branch-free over every element (vectorised: an exponent of all ones is an infinity or a
  // NaN), then the first offender found only if there is one.
  const size_t total = n * static_cast<size_t>(dim);
  uint32_t bad = 0;
  for (size_t i = 0; i < total; ++i) {
    uint32_t bits;
    std::memcpy(&bits, grads + i, sizeof(bits));
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  if (bad != 0) {
    for (size_t i = 0; i < total; ++i) {
      if (!std::isfinite(grads[i])) {
        return absl::InvalidArgumentError(base::StrCat("the gradient of node ", ids[i / dim], " is not finite"));
      }
    }
  }
  return absl::OkStatus();
}

// The per-element work is float arithmetic in one loop of independent elements, which the
// compiler vectorises (for AVX2 and AVX-512 where the machine has them: FANOUT_CLONES); the per-row
// constants (the bias corrections, from the row's own step count) are computed once per row in
// double (core/CMakeLists.txt builds this file with -O3 -fno-math-errno, which the vectorised
// square root needs). A step of setup H touches ~50K rows of 64: 24-28 ms of the server's time
// with per-element double division and square root, 5.4-6.0 ms after (one thread, this machine,
// rows in order; see UpdateRows for rows in random order).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FANOUT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FANOUT_CLONES
#endif

namespace {

inline void AdagradRow(float lr, float eps, int64_t d, float* __restrict w, float* __restrict s,
                       const float* __restrict g) {
  for (int64_t k = 0; k < d; ++k) {
    s[k] += g[k] * g[k];
    w[k] -= lr * g[k] / (std::sqrt(s[k]) + eps);
  }
}

// w -= lr_c1 * m / (sqrt(v * inv_c2) + eps): lr (m / c1) / (sqrt(v / c2) + eps) with the row's
// bias corrections c1 = 1 - b1^t, c2 = 1 - b2^t folded into lr_c1 = lr / c1 and inv_c2 = 1 / c2.
inline void AdamRow(float b1, float b2, float lr_c1, float inv_c2, float eps, int64_t d, float* __restrict w,
                    float* __restrict m, float* __restrict v, const float* __restrict g) {
  const float a1 = 1.0f - b1, a2 = 1.0f - b2;
  for (int64_t k = 0; k < d; ++k) {
    m[k] = b1 * m[k] + a1 * g[k];
    v[k] = b2 * v[k] + a2 * g[k] * g[k];
    w[k] -= lr_c1 * m[k] / (std::sqrt(v[k] * inv_c2) + eps);
  }
}

// Rows [0, n): row i is the table's row index[i] (i without an index). Adam's bias corrections
// 1 - beta^t come from the row's own step count t as -expm1(t log beta) (one exp per correction
// where pow cost about twice that; relative difference from pow under 1e-13). Rows of a table are
// read in random order, so the rows a few positions ahead are prefetched: the loop is bound by
// memory, not arithmetic. A throwaway copy of this loop (g++ -O3 -march=x86-64-v4, one thread,
// this machine, best of 7) on setup H's step, 33K random rows of 64 out of 60K: 14 ms with pow and
// no prefetch, 5.6 ms so.
FANOUT_CLONES void UpdateRows(const SparseOptimizerOptions& o, int64_t n, int64_t d, const int64_t* index, float* w,
                              float* s, const float* g) {
  auto row = [index](int64_t i) { return index == nullptr ? i : index[i]; };
  const int64_t sw = SparseStateWidth(o.kind, d);
  constexpr int64_t kAhead = 4;
  auto prefetch = [&](int64_t r) {
    for (int64_t k = 0; k < d; k += 16) __builtin_prefetch(w + r * d + k, 1);
    for (int64_t k = 0; k < sw; k += 16) __builtin_prefetch(s + r * sw + k, 1);
  };
  if (o.kind == SparseOptimizerKind::kAdagrad) {
    for (int64_t i = 0; i < n; ++i) {
      if (i + kAhead < n) prefetch(row(i + kAhead));
      const int64_t r = row(i);
      AdagradRow(static_cast<float>(o.lr), static_cast<float>(o.eps), d, w + r * d, s + r * sw, g + i * d);
    }
    return;
  }
  const double log_b1 = std::log(o.beta1), log_b2 = std::log(o.beta2);
  for (int64_t i = 0; i < n; ++i) {
    if (i + kAhead < n) prefetch(row(i + kAhead));
    const int64_t r = row(i);
    float* state = s + r * sw;
    const double t = static_cast<double>(state[2 * d]) + 1;  // this row's own step count
    state[2 * d] = static_cast<float>(t);
    // beta 0 (allowed): log is -inf, t log beta -inf, the correction 1, as pow's.
    const double c1 = -std::expm1(t * log_b1), c2 = -std::expm1(t * log_b2);
    AdamRow(static_cast<float>(o.beta1), static_cast<float>(o.beta2), static_cast<float>(o.lr / c1),
            static_cast<float>(1 / c2), static_cast<float>(o.eps), d, w + r * d, state, state + d, g + i * d);
  }
}

}  // namespace

void SparseUpdate(const SparseOptimizerOptions& o, int64_t n, int64_t dim, float* rows, float* state,
                  const float* grads) {
  UpdateRows(o, n, dim, nullptr, rows, state, grads);
}

void SparseUpdateAt(const SparseOptimizerOptions& o, int64_t n, int64_t dim, const int64_t* index, float* rows,
                    float* state, const float* grads) {
  UpdateRows(o, n, dim, index, rows, state, grads);
}

}  // namespace fanout::core

// The sparse optimizers of learnable embeddings (DGL's SparseAdam and SparseAdagrad): one step on
// the rows a mini-batch touched, each row with its own state, so that rows no batch touched never
// change. No LibTorch: the graph server applies them to the rows it holds (PartitionStore::
// ApplySparseUpdate), and the trainer's tests hold them to LibTorch's dense optimizers.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"

namespace fanout::core {

enum class SparseOptimizerKind { kAdam, kAdagrad };

// "adam" or "adagrad"; INVALID_ARGUMENT lists them.
absl::StatusOr<SparseOptimizerKind> ParseSparseOptimizer(std::string_view name);
std::string_view SparseOptimizerName(SparseOptimizerKind kind);

struct SparseOptimizerOptions {
  SparseOptimizerKind kind = SparseOptimizerKind::kAdam;
  double lr = 0.01;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam's; Adagrad uses eps (DGL: 1e-10)
};

// OK, or INVALID_ARGUMENT naming the first bad value: lr and eps > 0, betas in [0, 1), finite.
absl::Status CheckSparseOptimizer(const SparseOptimizerOptions& o);

// The optimizer state's width per row: Adam 2 * dim + 1 (m, v, the row's step count), Adagrad
// dim (the sum of squares).
int64_t SparseStateWidth(SparseOptimizerKind kind, int64_t dim);

// What every applier of a step checks (a graph server, and a client that maps the rows itself):
// INVALID_ARGUMENT for a state field `state_key` of `state_width` values a row where `kind` on
// [dim]-wide rows of `rows_key` keeps SparseStateWidth (the message, for a caller's own
// condition), and for IDs that are not distinct or gradients ([ids.size(), dim]) that are not
// finite, naming the node. `ids` lie in [first_id, first_id + num_rows) (the caller checked):
// distinctness is then a bitmap over those rows where it is small beside the IDs, else a sort.
absl::Status SparseStateWidthError(SparseOptimizerKind kind, int64_t dim, std::string_view rows_key,
                                   std::string_view state_key, int64_t state_width);
absl::Status CheckSparseGradients(std::span<const int64_t> ids, int64_t first_id, int64_t num_rows, int64_t dim,
                                  const float* grads);

// One step on n distinct rows (row-major [n, dim]) with their state ([n, SparseStateWidth]) and
// gradients, in place. Adam per row: t += 1; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). Adagrad: s += g^2;
// w -= lr g / (sqrt(s) + eps).
void SparseUpdate(const SparseOptimizerOptions& o, int64_t n, int64_t dim, float* rows, float* state,
                  const float* grads);
// The same on n distinct rows spread over a table: row index[i] of `rows` ([*, dim]) and of
// `state` ([*, SparseStateWidth]) takes gradient row i.
void SparseUpdateAt(const SparseOptimizerOptions& o, int64_t n, int64_t dim, const int64_t* index, float* rows,
                    float* state, const float* grads);

}  // namespace fanout::core

// Learnable node embeddings that live on the graph servers (DistDGL's DistEmbedding with its
// SparseAdam / SparseAdagrad), for the node types of a typed graph that have no features
// (fanout-train --embed-featureless DIM).
//
// Where the rows live, and why: each type's table is a node field created in the servers'
// memory ("TYPE/embed", float32 [DIM]), partitioned with the nodes, with the optimizer's state
// beside it in a second field ("TYPE/embed.adam": the two moments and the row's step count;
// "TYPE/embed.adagrad": the sum of squares). Keeping them on the servers rather than in the
// trainers means every trainer (and any number of trainers per machine) reads a row from one
// place, the tables grow with the cluster, and no trainer holds a graph-sized table.
//
// A step: Lookup pulls the rows a batch needs (a leaf tensor that collects their gradient);
// after the backward pass, Step sends every row's gradient to the trainer that owns the row
// (its partition's machine; among that machine's trainers, ID mod trainers per machine) in one
// all-to-all, and each owner sums what it received, divides by the world size (the dense
// gradients are averaged the same way), reads the rows and their state from its servers,
// applies the sparse optimizer to those rows only, writes both back, and waits at a barrier, so
// the next step reads updated rows on every trainer. Rows no batch touched never change: their
// state, including Adam's per-row step count, stays as it was (DGL's sparse optimizers).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/partition_store.h"
#include "sampler/dist_graph.h"
#include "sampler/server_fields.h"
#include "trainer/dist.h"

namespace fanout::trainer {

enum class SparseOptimizerKind { kAdam, kAdagrad };

// "adam" or "adagrad"; INVALID_ARGUMENT lists them.
absl::StatusOr<SparseOptimizerKind> ParseSparseOptimizer(std::string_view name);
std::string_view SparseOptimizerName(SparseOptimizerKind kind);

struct EmbeddingOptions {
  int64_t dim = 0;  // row width (--embed-featureless)
  SparseOptimizerKind optimizer = SparseOptimizerKind::kAdam;
  double lr = 0.01;  // --sparse-lr
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam's; Adagrad uses eps (DGL: 1e-10)
  // Rows start uniform in [-init_scale, init_scale] (DistDGL's R-GCN example), each a function
  // of (seed, node ID, column) alone.
  double init_scale = 1.0;
  uint64_t seed = 0;
  std::string name = "embed";  // the fields are TYPE/NAME and TYPE/NAME.OPTIMIZER
};

// The optimizer state's width per row: Adam 2 * dim + 1 (m, v, step), Adagrad dim.
int64_t StateWidth(SparseOptimizerKind kind, int64_t dim);

// One sparse step on n distinct rows (row-major [n, dim]) with their state ([n, StateWidth])
// and summed gradients, in place. Adam per row: t += 1; m = b1 m + (1 - b1) g;
// v = b2 v + (1 - b2) g^2; w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
// Adagrad: s += g^2; w -= lr g / (sqrt(s) + eps).
void SparseUpdate(const EmbeddingOptions& o, int64_t n, float* rows, float* state, const float* grads);

// Not thread-safe: the training thread uses it.
class DistEmbeddings {
 public:
  // Creates the tables of node types `types` on the servers (every rank calls it; creating is
  // idempotent), has each rank write the initial rows it owns, and waits for all ranks.
  static absl::StatusOr<std::unique_ptr<DistEmbeddings>> Create(const sampler::DistGraph& graph,
                                                                sampler::ServerFields* fields, std::vector<int> types,
                                                                const EmbeddingOptions& options, Communicator& comm,
                                                                int trainers_per_machine);

  const EmbeddingOptions& options() const { return o_; }
  const std::vector<int>& types() const { return types_; }
  bool has(int type) const;

  // The rows of `ids` (int64 CPU, global IDs of `type`), float32 [n, dim] on the CPU. With
  // gradient mode on, a leaf that requires grad, recorded for Step.
  absl::StatusOr<at::Tensor> Lookup(int type, const at::Tensor& ids);
  // After backward, on every rank every step (collective): see the file comment. Clears the
  // record. `touched` (optional): how many distinct rows this rank updated.
  absl::Status Step(Communicator& comm, int64_t* touched = nullptr);
  // Drops what Lookup recorded without updating (a step that failed, evaluation).
  void Forget() { looked_up_.clear(); }
  // Copies the rows this rank owns (and their optimizer state) into memory, and writes the copy
  // back to the servers: the best epoch's embeddings, for the test of the best model. Restore
  // waits for every rank (collective).
  absl::Status Snapshot(int rank);
  absl::Status Restore(Communicator& comm);

  // The rank that updates node `id`'s row.
  int OwnerRank(int64_t id) const;

 private:
  DistEmbeddings(const sampler::DistGraph& graph, sampler::ServerFields* fields, std::vector<int> types,
                 EmbeddingOptions options, int trainers_per_machine);
  core::FieldSchema RowSchema(int type) const;
  core::FieldSchema StateSchema(int type) const;
  absl::Status Initialise(int rank);
  // The IDs of `type` whose rows `rank` owns and updates, in ID order.
  std::vector<int64_t> OwnedIds(int type, int rank) const;

  const sampler::DistGraph& graph_;
  sampler::ServerFields* fields_;
  std::vector<int> types_;
  EmbeddingOptions o_;
  int tpm_;
  struct Looked {
    at::Tensor ids, rows;
  };
  std::vector<Looked> looked_up_;
  struct Saved {
    std::vector<int64_t> ids;
    std::vector<float> rows, state;
  };
  std::vector<Saved> snapshot_;  // [index in types_]; empty: none taken
};

}  // namespace fanout::trainer

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
// gradients are averaged the same way) and sends the gradients to its servers, which apply the
// sparse optimizer to those rows only where they live (SparseUpdate: no rows or state cross the
// network; the owner applies it itself, in place, where it maps its machine's partition's rows
// from the server's shared memory); then every trainer waits at a barrier, so the next step reads
// updated rows. Rows no batch touched never change: their
// state, including Adam's per-row step count, stays as it was (DGL's sparse optimizers).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/partition_store.h"
#include "core/sparse_optim.h"
#include "sampler/dist_graph.h"
#include "sampler/server_fields.h"
#include "trainer/dist.h"

namespace fanout::trainer {

using core::SparseOptimizerKind;
using core::SparseOptimizerName;
using core::ParseSparseOptimizer;

struct EmbeddingOptions {
  int64_t dim = 0;  // row width (--embed-featureless)
  // --sparse-optimizer and --sparse-lr (Adam's betas and eps as DGL's SparseAdam).
  core::SparseOptimizerOptions optimizer;
  // Rows start uniform in [-init_scale, init_scale] (DistDGL's R-GCN example), each a function
  // of (seed, node ID, column) alone.
  double init_scale = 1.0;
  uint64_t seed = 0;
  std::string name = "embed";  // the fields are TYPE/NAME and TYPE/NAME.OPTIMIZER
  // --embed-grad-dtype bfloat16: each step's gradient rows cross to their owners as bfloat16
  // (float32's range, about 3 significant digits; half the bytes), summed as float32 there.
  bool grads_bfloat16 = false;
};

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
  // The same rows in consecutive pieces of `lengths` rows (summing to ids' length), pulled in one
  // request; with gradient mode on, each piece is a leaf of its own (a model that uses the rows
  // piece by piece then gets each piece's gradient as it is, where slices of one leaf would each
  // make a zero-filled gradient of the whole table and add it up).
  absl::StatusOr<std::vector<at::Tensor>> LookupPieces(int type, const at::Tensor& ids,
                                                       const std::vector<int64_t>& lengths);
  // LookupPieces for several types at once, their requests in flight together (a batch of a
  // typed graph needs rows of every featureless type: one round trip instead of one per type).
  struct PieceRequest {
    int type = 0;
    at::Tensor ids;
    std::vector<int64_t> lengths;
  };
  absl::StatusOr<std::vector<std::vector<at::Tensor>>> LookupPieces(const std::vector<PieceRequest>& requests);
  // The same in two halves, so that the caller can compute while the rows are in flight:
  // StartLookup sends the requests (on threads of their own) and returns at once; FinishLookup
  // waits for them and returns what LookupPieces would, recording the pieces for Step when
  // gradient mode is on in the calling thread. Every started lookup must be finished.
  struct PendingLookup {
    std::vector<PieceRequest> requests;
    std::vector<at::Tensor> ids, rows;
    std::vector<std::future<absl::Status>> pulls;
    absl::Status status;
  };
  std::unique_ptr<PendingLookup> StartLookup(std::vector<PieceRequest> requests);
  absl::StatusOr<std::vector<std::vector<at::Tensor>>> FinishLookup(std::unique_ptr<PendingLookup> pending);
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
  // The rows `rank` owns with their IDs and optimizer state, as named tensors for its checkpoint
  // ("TYPE.ids" int64 [n], "TYPE.rows" float32 [n, dim], "TYPE.state" float32 [n, state width]),
  // and back: Load writes a checkpoint's tables to the servers, after checking that they are this
  // rank's rows of this job's tables (INVALID_ARGUMENT naming what differs).
  absl::StatusOr<std::vector<std::pair<std::string, at::Tensor>>> Tables(int rank);
  absl::Status Load(const std::vector<std::pair<std::string, at::Tensor>>& tables, int rank);

  // The rank that updates node `id`'s row.
  int OwnerRank(int64_t id) const;
  // Whether this process reads and updates partition `part`'s rows and optimizer state of every
  // table in the servers' shared memory (sampler/server_fields.h) rather than through them.
  bool Mapped(int part) const;

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
  // Rank `rank`'s rows and state of every table, from the servers; and the same written back.
  absl::StatusOr<std::vector<Saved>> PullOwned(int rank);
  absl::Status PushOwned(const std::vector<Saved>& saved);
};

}  // namespace fanout::trainer

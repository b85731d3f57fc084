// The model's input, whatever feeds it, behind one interface the job calls the same way for
// every kind: a node field's rows as the batch carries them (plain features), or a typed graph's
// input layer (TypedInput: per-type projections of featured types, learnable rows of featureless
// ones that DistEmbeddings keeps on the servers with their sparse optimiser; also the one-type
// graph's learnable rows with --embed-featureless). A new kind of input (a frozen pretrained
// table, a quantised field) is one more implementation here, not a branch in each of the job's
// phases.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/partition_config.h"
#include "sampler/dist_graph.h"
#include "sampler/minibatch.h"
#include "sampler/server_fields.h"
#include "trainer/batch_tensors.h"
#include "trainer/dist.h"
#include "trainer/dist_embedding.h"

namespace fanout::trainer {

// Rows trained outside the model (learnable embeddings): what a checkpoint keeps of them, by
// name ("TYPE.ids", "TYPE.rows", "TYPE.state").
using SparseTables = std::vector<std::pair<std::string, at::Tensor>>;

class ModelInput {
 public:
  virtual ~ModelInput() = default;
  // Width of each input row: the model's in_dim.
  virtual int64_t width() const = 0;
  // Dense parameters the model owns and trains with its own (registered as its "input" module);
  // null when there are none.
  virtual std::shared_ptr<torch::nn::Module> module() const { return nullptr; }
  // Once the trainers have joined: the state that needs them (learnable rows on the servers).
  virtual absl::Status Join(Communicator& comm) { return absl::OkStatus(); }

  // The input rows [blocks[0].num_src, width()] of batch `bt` (made from `mb`), on bt's device.
  virtual absl::StatusOr<at::Tensor> Forward(const BatchTensors& bt, const sampler::MiniBatch& mb) = 0;
  // Whether Forward is more than the batch's features (layer-wise inference then calls it).
  virtual bool transforms() const { return true; }
  // After the dense optimiser's step: the update of the rows trained outside the model.
  virtual absl::Status Step(Communicator& comm) { return absl::OkStatus(); }

  // Whether rows are trained outside the model; the calls below only matter when they are.
  virtual bool has_sparse_rows() const { return false; }
  // Keeps this epoch's rows (the best model so far) in memory, and puts them back.
  virtual absl::Status Snapshot(int rank) { return absl::OkStatus(); }
  virtual absl::Status Restore(Communicator& comm) { return absl::OkStatus(); }
  // The rows rank `rank` owns with their optimiser state, for its checkpoint, and back.
  virtual absl::StatusOr<SparseTables> Save(int rank) { return SparseTables{}; }
  virtual absl::Status Load(const SparseTables& tables, int rank) { return absl::OkStatus(); }

  // For the job's setup line ("model input: ..."); empty for plain features.
  virtual std::string Describe() const = 0;
};

// What the input is made from.
struct ModelInputOptions {
  std::string feature_field;  // the node field of features ("" on a graph trained without them)
  EmbeddingOptions embed;     // --embed-featureless (dim 0: none)
  uint64_t seed = 0;          // the job's seed
  // Where the learnable rows' fields live (the job's JobGraph::fields()); needed only with
  // learnable rows; must outlive the input.
  sampler::ServerFields* fields = nullptr;
  int trainers_per_machine = 1;
};

// The input for `graph`: typed input on a typed graph, learnable rows on a one-type graph with
// --embed-featureless (which refuses a graph that has features under `feature_field`), else the
// features as they are. Errors name the flag and the graph.
absl::StatusOr<std::unique_ptr<ModelInput>> MakeModelInput(const sampler::DistGraph& graph,
                                                           const ModelInputOptions& options);

}  // namespace fanout::trainer

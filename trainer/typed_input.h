// The input layer of a model on a typed graph (DistDGL's R-GCN example's embedding layer): one
// row of width() per input node of a batch. A node whose type has features gets them through its
// type's linear projection (when learnable embeddings are on; without them, its features as
// they are); a node of a featureless type gets its learnable embedding (DistEmbeddings), or
// zeros without them. The projections are this module's parameters: the job registers it in the
// model, so they are broadcast, averaged, optimised and checkpointed with the model's.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sampler/dist_graph.h"
#include "sampler/minibatch.h"
#include "trainer/batch_tensors.h"
#include "trainer/dist_embedding.h"

namespace fanout::trainer {

class TypedInput : public torch::nn::Module {
 public:
  // `feature_field`: each type's field of that name (TYPE/NAME) where it has one. `embed_dim`:
  // the width of the learnable embeddings (0: none). Parameters initialised from `init_seed`.
  static absl::StatusOr<std::shared_ptr<TypedInput>> Make(const sampler::DistGraph& graph,
                                                          const std::string& feature_field, int64_t embed_dim,
                                                          uint64_t init_seed);

  int64_t width() const { return width_; }
  // The node types without features (which get learnable embeddings when embed_dim > 0).
  const std::vector<int>& featureless() const { return featureless_; }
  const std::vector<int>& featured() const { return featured_; }

  // The input rows [blocks[0].num_src, width()] of batch `bt` (from `mb`, whose input node IDs
  // the embeddings are looked up by), on bt's device. `embeddings` may be null (zeros).
  absl::StatusOr<at::Tensor> Forward(const BatchTensors& bt, const sampler::MiniBatch& mb, DistEmbeddings* embeddings);

 private:
  TypedInput() = default;
  int64_t width_ = 0, feature_dim_ = 0;
  bool project_ = false;
  std::vector<int> featured_, featureless_;
  std::vector<at::Tensor> proj_weight_, proj_bias_;  // [type]: undefined for featureless types
};

}  // namespace fanout::trainer

// A device feature cache: the input features of the nodes that mini-batches reach most, kept on
// the training device (a GPU's memory, up to a byte budget), so that a batch fetches, and copies
// to the device, only the rows of the other input nodes. The sampler learns the cached nodes
// through SamplerOptions::cached_nodes and leaves their rows out of each batch
// (MiniBatch::feature_slots says which slot holds each); ToTensors puts the two together
// (Place on the host, Gather on the device).
//
// The nodes are chosen by one of two policies (--gpu-cache-policy):
// - degree: most in-edges first (ties: lower ID), as PaGraph and DGL's GPU cache do: a node
//   enters a batch as a sampled neighbour of its edges' endpoints, so the nodes with the most
//   edges are, over the whole graph, the ones batches reach most;
// - presample: how often the trainer's own batches took each node as an input in a sampled run
//   of their first steps (GNNLab's pre-sampling), then in-degree for nodes it never saw. A
//   trainer's seeds lie in its own partition, so its batches reach that neighbourhood far more
//   than the global in-degree says.
// Rows keep their stored dtype (float16 features take half the memory) and are converted to
// float32 when a batch is assembled.
//
// On a CPU device the same cache saves the sampler's gather of those rows (remote rows: a
// network fetch), at the cost of the budget in host memory.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sampler/dist_graph.h"
#include "sampler/id_map.h"

namespace fanout::trainer {

struct FeatureCacheOptions {
  std::string field = "feat";  // the node field cached (the sampler's feature field)
  int64_t max_bytes = 0;       // rows of the stored dtype that fit in this many bytes; 0: no cache
  // Presampled input counts, one per node (sampler::PresampleInputCounts): the most counted
  // nodes go first, in-degree orders the rest (sampler::ChooseHottest). Empty: in-degree alone.
  std::vector<int64_t> counts;
};

// Immutable once built; thread-safe.
class FeatureCache {
 public:
  // Chooses the nodes (sampler::ChooseHottest) whose rows of options.field fit in options.max_bytes,
  // pulls their rows from `graph` and keeps them on `device`. INVALID_ARGUMENT for an unknown
  // field or a budget below one row.
  static absl::StatusOr<std::shared_ptr<const FeatureCache>> Build(const sampler::DistGraph& graph,
                                                                   const FeatureCacheOptions& options,
                                                                   const c10::Device& device);
  // `rows` [ids.size(), dim] (any dtype and device) holds the features of `ids` (distinct, in
  // [0, num_nodes); -1: up to the largest ID), row i for ids[i].
  FeatureCache(std::vector<int64_t> ids, at::Tensor rows, int64_t num_nodes = -1);

  // The cached nodes, slot i holding ids()[i]: SamplerOptions::cached_nodes.
  const std::shared_ptr<const sampler::NodeSlots>& nodes() const { return nodes_; }
  int64_t size() const { return static_cast<int64_t>(nodes_->size()); }
  int64_t bytes() const;
  const at::Tensor& rows() const { return rows_; }

  // Where a batch's input rows come from: input hit_pos[k] is cache slot hit_slot[k]; input
  // miss_pos[k] is fetched row k. int64, on the host from Place, on the device for Gather
  // (ToTensors moves them with the batch).
  struct Placement {
    at::Tensor hit_pos, hit_slot, miss_pos;
  };
  // The placement of a batch's inputs from its slots (int64 CPU [num_inputs],
  // MiniBatch::feature_slots: a slot, or -1 for a fetched row), given that the sampler fetched
  // `fetched` rows of `cols` values. INVALID_ARGUMENT when they do not fit together or a slot is
  // out of range.
  absl::StatusOr<Placement> Place(const at::Tensor& slots, int64_t fetched, int64_t cols) const;
  // The batch's input features, float32 on the cache's device: rows()[hit_slot[k]] at
  // hit_pos[k] and `misses` (any dtype, on the cache's device) at miss_pos. `p` on that device.
  // Rows stored compressed (`codec`, the field's) are assembled as stored, then decoded.
  at::Tensor Gather(const Placement& p, const at::Tensor& misses,
                    core::FeatureCodec codec = core::FeatureCodec::kNone) const;

 private:
  std::shared_ptr<const sampler::NodeSlots> nodes_;
  at::Tensor rows_;
};

}  // namespace fanout::trainer

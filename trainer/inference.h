// Full-graph inference, as DistDGL's `inference`: every node's output with its full
// neighbourhood in every layer, computed layer by layer so that no node's L-hop neighbourhood is
// ever expanded. Each rank computes the nodes of its share (RankNodes) in batches; a layer's
// output is kept for the next one, and the rows a rank's blocks need from other ranks come in
// one all-to-all per layer. A model without ForwardLayer (a script with no forward_layer) is
// run with full neighbourhoods in every layer instead: the same result, more work.
//
// Then rank 0 writes what was computed in the original node-ID order (WriteNodeOutputs).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "base/progress.h"
#include "core/partition_book.h"
#include "nlohmann/json.hpp"
#include "sampler/dist_graph.h"
#include "sampler/minibatch_sampler.h"
#include "trainer/batch_tensors.h"
#include "trainer/dist.h"
#include "trainer/models.h"

namespace fanout::trainer {

// The contiguous global (new) IDs [begin, end) of the nodes rank `rank` computes: its
// partition's range, split evenly in order among the partition's `trainers_per_machine` ranks
// (rank = partition * trainers_per_machine + local rank). Ranks in order cover [0, N) in order.
struct NodeShare {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};
NodeShare RankNodes(const core::RangePartitionBook& book, int trainers_per_machine, int rank);

struct InferenceOptions {
  int64_t batch_size = 4096;            // destination nodes per block
  std::string feature_field = "feat";  // the model's input
  sampler::EdgeDataOptions edge;       // SamplerOptions::edge
  int trainers_per_machine = 1;
  base::ProgressMode progress = base::ProgressMode::kOff;  // rank 0's per-layer progress meter
  // Called on rank 0 after each layer (layer, layers, seconds since the start) for progress.
  std::function<void(int64_t, int64_t, double)> on_layer;
  // The model's input rows for a batch (a typed graph's input layer: JobContext::ModelInput);
  // null: the batch's features.
  std::function<absl::StatusOr<at::Tensor>(const BatchTensors&, const sampler::MiniBatch&)> model_input;
};

struct InferenceResult {
  NodeShare nodes;    // the rows below are nodes begin, begin + 1, ...
  at::Tensor output;  // float32 [nodes.size(), the model's output width] on the CPU
  bool layerwise = true;  // false: computed with full neighbourhoods in every layer
};

// Every rank calls it with the same options; the model is put in eval mode. Errors name the
// layer and the batch's first node.
absl::StatusOr<InferenceResult> InferAllNodes(GnnModel& model, const sampler::DistGraph& graph,
                                              Communicator& comm, const InferenceOptions& options);

// Rows of `ids` (any node IDs, repeats allowed) from the ranks that hold them: each rank holds
// `own`, the rows of its RankNodes share (as InferAllNodes returns them). Returns [ids.size(),
// own's width] in the order of `ids`. Collective: every rank calls it, with its own ids.
absl::StatusOr<at::Tensor> FetchNodeRows(Communicator& comm, const core::RangePartitionBook& book,
                                         int trainers_per_machine, const InferenceResult& own,
                                         std::span<const int64_t> ids);

struct NodeOutputFiles {
  std::string dir;            // written atomically (base::StagingDir) by rank 0
  bool overwrite = false;     // replace an earlier output of fanout-train in `dir`
  bool predictions = true;    // also predictions.npy: argmax of each row (int64)
  nlohmann::json info;        // merged into embeddings.json (model, checkpoint, epoch, ...)
};

// Gathers every rank's rows on rank 0 (in bounded chunks) and writes, in original node-ID order
// (row i = node i of the input dataset), `embeddings.npy` (float32 [N, width]),
// `predictions.npy` (int64 [N]) and `embeddings.json` (shapes, dtypes, what produced them).
// Collective: every rank calls it with its InferAllNodes result.
absl::Status WriteNodeOutputs(const InferenceResult& result, const sampler::DistGraph& graph,
                              Communicator& comm, const NodeOutputFiles& files);

}  // namespace fanout::trainer

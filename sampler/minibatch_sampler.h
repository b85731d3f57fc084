// Builds mini-batches: multi-layer neighbour sampling into DGL blocks over a DistGraph, then the
// input nodes' features and the seeds' labels, each fetched local-direct / remote-in-parallel.
// A batch is a pure function of (options, the trainer's seed list, epoch, step): the same batch
// comes out whichever thread or sampler process makes it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sampler/buffer_pool.h"
#include "sampler/dist_graph.h"
#include "sampler/id_map.h"
#include "sampler/minibatch.h"

namespace fanout::sampler {

class MachineRows;

// Edge fields fetched for every sampled edge of a block (any dtype, converted to float32), one
// pull per batch for all layers.
struct EdgeDataOptions {
  // One number per edge, as Block::edge_weight: models weight their messages by it. "" = none.
  std::string weight_field;
  // Any number per edge, as Block::edge_feat (edge_feat_dim per edge): for scripted models,
  // block["edge_feat"]. "" = none.
  std::string feature_field;
};

struct SamplerOptions {
  std::vector<int64_t> fanouts = {15, 10, 5};  // per layer, input layer first (DGL); -1 = all
  // Typed graphs: per layer, one fanout per edge type (DGL's per-etype fanouts); empty: every
  // relation gets its layer's `fanouts` entry (DGL's int fanout on a heterograph).
  std::vector<std::vector<int64_t>> relation_fanouts;
  int64_t batch_size = 1024;                   // seeds per step (the epoch's last may be smaller)
  bool replace = false;                        // sample with replacement
  bool shuffle = true;                         // reshuffle the seeds every epoch
  uint64_t seed = 0;                           // global seed of the job
  int rank = 0;                                // this trainer's rank (feeds the random streams)
  int64_t seeds_per_epoch = -1;                // seeds each epoch uses; -1: all of the trainer's
  // Input features; "" = none fetched. On a typed graph, each node type's field of this name
  // (TYPE/feat), for the types that have one.
  std::string feature_field = "feat";
  // Seed labels; "" = none fetched. On a typed graph, the seeds' type's field (TYPE/label).
  std::string label_field = "label";
  EdgeDataOptions edge;  // edge fields fetched for every sampled edge
  // The nodes whose features the trainer keeps itself, in a device feature cache
  // (trainer/feature_cache.h): slot i holds cached_nodes->ids()[i]. Their rows are not fetched;
  // each batch says which slot holds each input node (MiniBatch::feature_slots). Null: every
  // input row is fetched. Read-only once shared.
  std::shared_ptr<const NodeSlots> cached_nodes;
};

// An index of `ids` (distinct, in [0, num_nodes)) for SamplerOptions::cached_nodes: slot i is
// ids[i].
std::shared_ptr<const NodeSlots> IndexNodes(std::vector<int64_t> ids, int64_t num_nodes);

// Steps per epoch over `num_items` seeds (or positive edges): `limit` of them at most (-1: all),
// `batch_size` a step, the last step possibly smaller.
int64_t StepsPerEpoch(int64_t num_items, int64_t limit, int64_t batch_size);
// ... of node batches: options.seeds_per_epoch and options.batch_size.
inline int64_t StepsPerEpoch(const SamplerOptions& options, int64_t num_seeds) {
  return StepsPerEpoch(num_seeds, options.seeds_per_epoch, options.batch_size);
}

// Checks options against a graph: fanouts, batch size, fields present with usable dtypes.
absl::Status ValidateSamplerOptions(const SamplerOptions& options, const DistGraph& graph);

// Per layer and edge type, the fanouts that `specs` ("REL=F0,F1,...", one value per layer; REL a
// relation name or a canonical "SRC:REL:DST") give, every other relation taking `fanouts`.
// INVALID_ARGUMENT names the spec at fault: an unknown or ambiguous relation (listing the graph's
// edge types), a relation given twice, the wrong number of layers, a fanout below -1.
absl::StatusOr<std::vector<std::vector<int64_t>>> ResolveRelationFanouts(const core::PartitionConfig& config,
                                                                         const std::vector<int64_t>& fanouts,
                                                                         const std::vector<std::string>& specs);

// On a typed graph: per node type, the key ("TYPE/NAME") of its node field `name`, or "" for
// the types without one; NOT_FOUND (naming `what`, "feature" or "label", and the graph's
// fields) when no type has it.
absl::StatusOr<std::vector<std::string>> TypedFieldKeys(const DistGraph& graph, const std::string& name,
                                                        const char* what);

// Removes the edges of `edges` between a pair of `exclude` (sorted (min, max) pairs), in either
// direction, keeping the order of the others. `relations` (typed edges; may be null: every
// relation): only edges of the relations it marks.
void DropExcluded(const std::vector<std::pair<int64_t, int64_t>>& exclude, core::SampledEdges* edges,
                  const std::vector<char>* relations = nullptr);

// Thread-compatible: one instance per thread (it keeps scratch space); the graph is shared.
class MiniBatchSampler {
 public:
  // `seeds`: this trainer's seeds (SplitSeeds). The graph must outlive the sampler.
  MiniBatchSampler(const DistGraph* graph, SamplerOptions options, std::vector<int64_t> seeds);

  int64_t seeds_per_epoch() const { return seeds_per_epoch_; }
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  // Number of feature columns; 0 when no feature field.
  int64_t feature_dim() const { return feature_dim_; }
  // The feature field's stored dtype, in which features are fetched (the trainer converts).
  core::DType feature_dtype() const { return feature_dtype_; }
  core::FeatureCodec feature_codec() const { return feature_codec_; }
  size_t feature_row_bytes() const { return static_cast<size_t>(feature_dim_) * core::DTypeSize(feature_dtype_); }

  // The seeds of step `step` of `epoch`.
  std::vector<int64_t> StepSeeds(int64_t epoch, int64_t step);

  // Blocks and labels of (epoch, step); features left empty.
  absl::StatusOr<MiniBatch> SampleBlocks(int64_t epoch, int64_t step);
  // Blocks of arbitrary seeds (distinct), drawn with random stream `stream`. `exclude` (sorted
  // (min, max) node pairs; may be null) drops every sampled edge between such a pair, in either
  // direction, before the block is built: link prediction's seed edges and their reverses.
  // `exclude_relations` (typed graphs; may be null): only sampled edges of the marked relations.
  absl::Status SampleBlocksFor(std::span<const int64_t> seeds, uint64_t stream, std::vector<Block>* blocks,
                               const std::vector<std::pair<int64_t, int64_t>>* exclude = nullptr,
                               const std::vector<char>* exclude_relations = nullptr);
  // Fills every block's edge_weight and edge_feat fields from options.edge (one pull per field
  // for all layers; on a typed graph one per relation); nothing without those fields.
  absl::Status FetchEdgeData(std::vector<Block>* blocks);
  // The input nodes of `mb` whose feature rows must be fetched: all of them, or with
  // options.cached_nodes the others (in input order), after filling mb->feature_slots; on a
  // typed graph those whose type has the feature field, after filling its kInputTypes field. The
  // span is valid until the next call.
  std::span<const int64_t> FeatureRequest(MiniBatch* mb);
  // From now on FeatureRequest leaves out the input rows `rows` holds (its consumer reads them in
  // place: sampler/machine_rows.h), filling mb->feature_slots with their slots (-1: fetched), and
  // counts the halo cache's rows among them into the graph's cache figures. Not with
  // options.cached_nodes, nor on a typed graph (FeatureRequest then ignores it). Null: off.
  void LeaveMachineRows(std::shared_ptr<const MachineRows> rows) { machine_rows_ = std::move(rows); }
  // Fills `out` (input_nodes.size() x feature_row_bytes() bytes) with the input nodes' features,
  // as stored (feature_dtype()): nothing is converted on the sampler's side.
  absl::Status FetchFeatures(std::span<const int64_t> input_nodes, char* out);
  // The same into a buffer of `pool` (null: a fresh one), as the batch's Rows.
  absl::StatusOr<Rows> GatherFeatures(std::span<const int64_t> input_nodes, BufferPool* pool);
  absl::Status FetchLabels(std::span<const int64_t> seeds, std::vector<int64_t>* labels);
  // Everything, features in heap memory (from `pool` when given).
  absl::StatusOr<MiniBatch> Sample(int64_t epoch, int64_t step, BufferPool* pool = nullptr);
  // The features of a batch SampleBlocks made (by this sampler or another with the same
  // options), as Sample gathers them, with their time in mb->fetch_seconds.
  absl::Status FetchBatchFeatures(MiniBatch* mb, BufferPool* pool);

 private:
  const DistGraph* graph_;
  SamplerOptions options_;
  std::vector<int64_t> seeds_;
  int64_t seeds_per_epoch_ = 0;
  int64_t steps_per_epoch_ = 0;
  int64_t feature_dim_ = 0;
  core::DType feature_dtype_ = core::DType::kFloat32;
  core::FeatureCodec feature_codec_ = core::FeatureCodec::kNone;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> epoch_seeds_;
  core::SampledEdges edges_;  // scratch
  IdMap map_;                 // scratch
  std::string raw_;           // scratch for non-float32 edge fields
  // The keys of options.edge's weight and feature fields: {the field}, or on a typed graph each
  // edge type's ("" for one without it); empty when unset or when no edge type has it.
  std::vector<std::string> edge_weight_keys_, edge_feature_keys_;
  std::shared_ptr<const MachineRows> machine_rows_;  // LeaveMachineRows
  std::vector<int64_t> missing_;  // scratch: the input nodes a cache does not hold, or that have features
  // Typed graphs: the node types, and per type its feature field's key ("" = no features).
  const core::TypeMap* node_types_ = nullptr;
  std::vector<std::string> feature_keys_;
  // Typed graphs: a hop's new source nodes (ids[num_dst...]) reordered by node type, stable, and
  // `indices` renumbered to match, so that every block's nodes are a few runs of one type each
  // (a block's destinations are a prefix of its sources): the R-GCN layer's products run per
  // type over contiguous rows (trainer/models.cc).
  void GroupNewNodesByType(size_t num_dst, std::vector<int64_t>* ids, Int64Array* indices);
  std::vector<int> type_of_;         // scratch for GroupNewNodesByType
  std::vector<int64_t> new_local_;   // scratch
  std::vector<int64_t> reordered_;   // scratch
};

}  // namespace fanout::sampler

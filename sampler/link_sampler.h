// Edge mini-batches for link prediction: each step takes positive edges (stored training edges of
// the graph), draws negatives for them, and samples blocks around every endpoint with the
// positive pairs excluded from the neighbourhoods (in both directions, as DGL's
// exclude="reverse_id"), so a model never sees the edge it is asked to predict. A batch is a pure
// function of (options, the trainer's edge list, epoch, step).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/partition_config.h"
#include "sampler/dist_graph.h"
#include "sampler/minibatch.h"
#include "sampler/minibatch_sampler.h"
#include "sampler/prefetcher.h"
#include "sampler/seed_split.h"

namespace fanout::sampler {

// How a positive's negatives are made: its source kept, its destination replaced by ...
enum class NegativeSampling {
  kUniform,      // ... a node drawn uniformly, per positive (DGL's Uniform / PerSourceUniform)
  kDegreePow75,  // ... drawn with probability proportional to in-degree^0.75 (word2vec, DGL)
  // ... one of `negatives` nodes drawn uniformly once per batch and shared by all its positives
  // (GraphStorm's joint sampling): the batch embeds `negatives` extra nodes, not one per pair.
  kJoint,
  // ... the destination of another positive of the batch (positive i takes those of positives
  // i+1, i+2, ... mod the batch size, min(negatives, batch - 1) of them): no nodes beyond the
  // positives' endpoints. A batch of one positive has no negatives.
  kInBatch,
  // ... a node drawn uniformly among the trainer's own partition's (of the destination type on a
  // typed graph), so that a negative's own rows are never remote.
  kLocal,
};
// "uniform", "degree", "joint", "in-batch", "local"; and back (INVALID_ARGUMENT lists them).
std::string_view NegativeSamplingName(NegativeSampling n);
absl::StatusOr<NegativeSampling> ParseNegativeSampling(std::string_view name);

// What a link batch draws around its positives, as its user chooses it (fanout-train's
// --negatives, --negative-sampling, --edges-per-epoch, --hard-negative-field, --hard-negatives;
// a Python loader's negative sampler): the trainer's and the Python loaders' settings hold this
// struct, not copies of its members.
struct LinkDrawOptions {
  int64_t negatives = 1;  // negatives per positive (same source); kInBatch: at most this many
  NegativeSampling negative_sampling = NegativeSampling::kUniform;
  // Positive edges per trainer per epoch, a fresh shuffled draw of its edges each epoch; <= 0:
  // all of them.
  int64_t edges_per_epoch = 0;
  // Hard negatives: an int64 edge field [E, H] of node IDs (-1: none; fanout-partition
  // --hard-negative-field writes it). A positive's first negatives are its edge's valid entries
  // (not -1, neither endpoint), at most `hard_negatives` of them (0: up to `negatives`); the rest
  // are drawn by negative_sampling (uniform, degree or local). "" = none. On a typed graph the
  // field NAME is each link relation's "SRC:REL:DST/NAME" that exists (at least one must); the
  // positives of a relation without it get drawn negatives only.
  std::string hard_negative_field;
  int64_t hard_negatives = 0;
};

struct LinkSamplerOptions {
  // The node batch around the pairs' endpoints, sampled as any node batch: fanouts, replace,
  // seed, rank, feature_field and edge apply; batch_size counts positive edges per step; labels,
  // shuffle and seeds_per_epoch do not apply (draw.edges_per_epoch instead, always shuffled).
  SamplerOptions sampling;
  LinkDrawOptions draw;
  bool exclude_seed_edges = true;  // drop the positive pairs (both directions) from the blocks
};

// Pairs (LinkPairs, as positions in nodes.seeds) and the node batch that embeds them.
struct LinkMiniBatch : LinkPairs {
  int64_t epoch = 0, step = 0;
  // Blocks around `nodes.seeds`: the distinct endpoints of the positives and negatives, in order
  // of first appearance; features of the input nodes; no labels.
  MiniBatch nodes;
};

// The training edges of rank `rank`: the edges its partition stores (in-edges of its nodes,
// global edge IDs [edge_bounds[p], edge_bounds[p + 1])), cut into trainers_per_machine contiguous
// slices. Disjoint across ranks; together every stored edge once. On a typed graph partitioned
// for link prediction (config.link_etypes), only those relations' stored edges: each relation's
// contiguous range in the partition, cut into slices the same way, the rank's slices in
// link_etypes' order. One relation (or none): a range, no list of 8 bytes per edge is made.
SeedArray RankEdgeSeeds(const core::PartitionConfig& config, int trainers_per_machine, int rank);
// How many they are (no list made).
int64_t RankEdgeCount(const core::PartitionConfig& config, int trainers_per_machine, int rank);
// The same edges as [begin, end) of global edge IDs; INVALID_ARGUMENT when they are no one range
// (several link relations).
absl::StatusOr<std::pair<int64_t, int64_t>> RankEdgeRange(const core::PartitionConfig& config,
                                                          int trainers_per_machine, int rank);
// The link relations of config.link_etypes as indices among the edge types, in that order;
// empty on a graph without typed link relations.
std::vector<int> LinkRelations(const core::PartitionConfig& config);
// The link relation (an index into LinkRelations(config), passed as `relations`) stored edge
// `eid` is of; 0 when there are no typed link relations; -1 for an edge of none of them.
int LinkRelationOf(const core::PartitionConfig& config, std::span<const int> relations, int64_t eid);
// The node type index of each link relation's destination type (its negatives' type), in
// LinkRelations' order; {-1} without typed link relations (negatives among every node).
std::vector<int> LinkNegativeTypes(const core::PartitionConfig& config);

// Thread-compatible (one instance per thread); the graph is shared.
class LinkBatchSampler {
 public:
  // Prefix sums of in-degree^0.75 per candidate set (degree_table()).
  using DegreeTables = std::vector<std::vector<double>>;
  // `edges`: this trainer's positive edges (RankEdgeSeeds). For kDegreePow75 the in-degree of
  // every node is read once here.
  // `degree_table` (optional): another sampler's degree_table(), shared instead of read again.
  static absl::StatusOr<std::unique_ptr<LinkBatchSampler>> Create(
      const DistGraph* graph, LinkSamplerOptions options, SeedArray edges,
      std::shared_ptr<const DegreeTables> degree_table = nullptr);

  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int64_t feature_dim() const { return nodes_.feature_dim(); }
  core::DType feature_dtype() const { return nodes_.feature_dtype(); }
  core::FeatureCodec feature_codec() const { return nodes_.feature_codec(); }
  absl::StatusOr<LinkMiniBatch> Sample(int64_t epoch, int64_t step);
  // Sample without the features (nodes.features empty), and the gather on its own: a sampler
  // process writes the batch first and gathers the features straight into shared memory.
  absl::StatusOr<LinkMiniBatch> SampleBlocks(int64_t epoch, int64_t step);
  std::span<const int64_t> FeatureRequest(MiniBatch* mb) { return nodes_.FeatureRequest(mb); }
  void LeaveMachineRows(std::shared_ptr<const MachineRows> rows) { nodes_.LeaveMachineRows(std::move(rows)); }
  absl::Status FetchFeatures(std::span<const int64_t> input_nodes, char* out) {
    return nodes_.FetchFeatures(input_nodes, out);
  }
  // kDegreePow75: prefix sums of in-degree^0.75 over each candidate set (all nodes, or on a
  // typed graph each link relation's destination type's, by type-wise ID); null for uniform
  // negatives.
  std::shared_ptr<const DegreeTables> degree_table() const { return cumulative_; }

 private:
  LinkBatchSampler(const DistGraph* graph, LinkSamplerOptions options, SeedArray edges,
                   SamplerOptions node_options);
  // A node of candidate set `set` (see sets_).
  int64_t DrawNegative(int set, uint64_t& state) const;
  // The negatives' destinations of a batch's positives (src, dst; `set`: each one's candidate
  // set), `negatives` per positive (kInBatch: min(negatives, count - 1)), row i * k + j for
  // positive i.
  std::vector<int64_t> DrawNegatives(const std::vector<int64_t>& src, const std::vector<int64_t>& dst,
                                     const std::vector<int>& set, uint64_t& state) const;
  // Replaces the first negatives of each positive of `eids` (`rel`: each one's link relation) by
  // its edge's hard negatives.
  absl::Status PutHardNegatives(const std::vector<int64_t>& eids, const std::vector<int>& rel,
                                const std::vector<int64_t>& src, const std::vector<int64_t>& dst,
                                std::vector<int64_t>* neg);
  // A negative's node from its index among candidate set `set`'s.
  int64_t Candidate(int set, int64_t i) const;

  const DistGraph* graph_;
  LinkSamplerOptions options_;
  SeedArray edges_;  // shared with the loader's other samplers
  MiniBatchSampler nodes_;
  BufferPool pool_;
  int64_t edges_per_epoch_ = 0, steps_per_epoch_ = 0;
  std::shared_ptr<const DegreeTables> cumulative_;  // degree_table(), per candidate set
  // Where negatives are drawn: one set of candidates per distinct destination type of the link
  // relations (one set of every node without typed link relations); set_of_[i]: link relation
  // i's. A set's candidates are [first, first + count) of its type's type-wise IDs (type -1: of
  // all node IDs): every one, or with kLocal the machine's partition's.
  struct CandidateSet {
    int type = -1;
    int64_t first = 0, count = 0;
  };
  std::vector<CandidateSet> sets_;
  std::vector<int> set_of_;
  std::vector<int> link_relations_;  // LinkRelations(config)
  // Typed link prediction: the relations seed pairs are excluded from (each REL and its rev_REL).
  std::vector<char> exclude_relations_;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> epoch_edges_;  // cached_epoch_'s shuffled edges
  // Hard negatives: per link relation (one entry without typed link relations) the field's key
  // ("" where that relation has none) and its row width H.
  std::vector<std::string> hard_fields_;
  std::vector<int64_t> hard_widths_;
  std::vector<int64_t> hard_rows_;  // a batch's hard-negative rows
};

// The hard-negative field's key per link relation (one entry without typed link relations): the
// field itself, or on a typed graph each link relation's "SRC:REL:DST/NAME", "" where it has
// none. INVALID_ARGUMENT / NOT_FOUND naming the field when no relation has it or it is not int64.
absl::StatusOr<std::vector<std::string>> HardNegativeFields(const DistGraph& graph, const std::string& name);

// Checks options, the positive edge IDs and the graph (at least 3 nodes to draw negatives from)
// as LinkBatchSampler::Create does, without building a sampler; errors name the flag or edge.
absl::Status ValidateLinkSamplerOptions(const LinkSamplerOptions& options, const DistGraph& graph,
                                        const SeedArray& edges);

// The node-sampling options a link batch's blocks are sampled with (no labels).
SamplerOptions NodeOptionsOf(const LinkSamplerOptions& options);

// Evaluation's drawn negatives (fanout-train --eval-negatives): destinations among the link
// candidates (every node, or on a typed graph the positive's link relation's destination
// type's), drawn uniformly from (seed, stream, positive index, j) alone, so that every model, run
// and number of trainers ranks against the same ones. `pairs`: held-out positives first_index,
// first_index+1, ... as (src, dst) global IDs; `relations`: each one's link relation (an index
// into config.link_etypes; empty: all 0). Per positive (joint false): k each, neither endpoint,
// row i * k + j; joint: k per link relation, relation r's rows r * k .. r * k + k - 1 (from
// (seed, stream, r, j); `pairs` unused).
std::vector<int64_t> DrawEvalNegatives(const DistGraph& graph, std::span<const int64_t> pairs,
                                       std::span<const int64_t> relations, int64_t first_index, int64_t k, bool joint,
                                       uint64_t seed, uint64_t stream);

// Steps per epoch of link batches over `num_edges` positive edges.
int64_t LinkStepsPerEpoch(const LinkSamplerOptions& options, int64_t num_edges);

// A stream of ready link batches in (epoch, step) order: LinkBatchLoader (threads) or
// MakeLinkProcessLoader (sampler processes, loader.h) make the same batches.
class LinkBatchSource {
 public:
  virtual ~LinkBatchSource() = default;
  virtual int64_t steps_per_epoch() const = 0;
  // The next batch; OUT_OF_RANGE after the last epoch; a sampling error names its source.
  virtual absl::StatusOr<LinkMiniBatch> Next() = 0;
};

// Link batches made ahead of the trainer on `threads` threads (a LinkBatchSampler each, the degree
// table shared), at most `prefetch` ahead, handed out in (epoch, step) order (prefetcher.h).
class LinkBatchLoader final : public LinkBatchSource {
 public:
  static absl::StatusOr<std::unique_ptr<LinkBatchLoader>> Create(const DistGraph* graph,
                                                                 const LinkSamplerOptions& options,
                                                                 const SeedArray& edges, int threads,
                                                                 int prefetch, int64_t first_epoch, int64_t num_epochs,
                                                                 int64_t first_step = 0);
  int64_t steps_per_epoch() const override { return samplers_[0]->steps_per_epoch(); }
  // The next batch; OUT_OF_RANGE after the last epoch; a sampling error names its epoch and step.
  absl::StatusOr<LinkMiniBatch> Next() override { return prefetcher_->Next(); }

 private:
  LinkBatchLoader() = default;
  std::vector<std::unique_ptr<LinkBatchSampler>> samplers_;
  std::unique_ptr<Prefetcher<LinkMiniBatch>> prefetcher_;  // last: its threads stop first
};

}  // namespace fanout::sampler

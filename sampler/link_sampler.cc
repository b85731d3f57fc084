#include "sampler/link_sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "base/enum_names.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/random.h"
#include "sampler/id_map.h"
#include "sampler/seed_split.h"

namespace fanout::sampler {

using base::StrCat;

namespace {

uint64_t Mix(uint64_t h, uint64_t v) { return core::SplitMix64(h ^ core::SplitMix64(v)); }

// kLocal's candidates: the machine's partition's nodes, as a range of node IDs, or on a typed
// graph of type-wise IDs of `type` (-1: untyped). Empty without a machine.
std::pair<int64_t, int64_t> LocalCandidates(const DistGraph& graph, int type) {
  const int part = graph.machine_id();
  if (part < 0 || part >= graph.num_parts()) return {0, 0};
  if (type >= 0) return graph.node_types().TypeWiseRange(type, part);
  return {graph.node_book().start(part), graph.node_book().end(part)};
}

// The index of the link relation's destination type among the node types, or -1 (untyped link
// prediction).
int NegativeType(const core::PartitionConfig& config) {
  const int relation = LinkRelation(config);
  if (relation < 0) return -1;
  const std::string& dst = config.edge_types[relation].dst;
  return static_cast<int>(std::find(config.node_types.begin(), config.node_types.end(), dst) -
                          config.node_types.begin());
}

constexpr std::pair<NegativeSampling, std::string_view> kNegativeSamplingNames[] = {
    {NegativeSampling::kUniform, "uniform"}, {NegativeSampling::kDegreePow75, "degree"},
    {NegativeSampling::kJoint, "joint"},     {NegativeSampling::kInBatch, "in-batch"},
    {NegativeSampling::kLocal, "local"},
};

}  // namespace

std::string_view NegativeSamplingName(NegativeSampling n) { return base::EnumName(kNegativeSamplingNames, n); }

absl::StatusOr<NegativeSampling> ParseNegativeSampling(std::string_view name) {
  if (std::optional<NegativeSampling> n = base::EnumFromName(kNegativeSamplingNames, name)) return *n;
  return absl::InvalidArgumentError(
      StrCat("'", name, "' is not a negative sampling: ", base::EnumNameList(kNegativeSamplingNames)));
}

int LinkRelation(const core::PartitionConfig& config) {
  if (config.link_etype.empty()) return -1;
  for (size_t r = 0; r < config.edge_types.size(); ++r) {
    if (config.edge_types[r].ToString() == config.link_etype) return static_cast<int>(r);
  }
  return -1;  // LoadPartitionConfig refuses a link_etype that is not an edge type
}

std::pair<int64_t, int64_t> RankEdgeRange(const core::PartitionConfig& config, int tpm, int rank) {
  const int part = rank / tpm, local = rank % tpm;
  const int relation = LinkRelation(config);
  const auto [first, last] = relation >= 0 ? config.edge_type_ranges[relation][part]
                                           : std::pair{config.edge_bounds[part], config.edge_bounds[part + 1]};
  const int64_t begin = first, n = last - first;
  return {begin + n * local / tpm, begin + n * (local + 1) / tpm};
}

SeedArray RankEdgeSeeds(const core::PartitionConfig& config, int tpm, int rank) {
  const auto [begin, end] = RankEdgeRange(config, tpm, rank);
  return SeedArray::Range(begin, end - begin);
}

LinkBatchSampler::LinkBatchSampler(const DistGraph* graph, LinkSamplerOptions options, SeedArray edges,
                                   SamplerOptions node_options)
    : graph_(graph),
      options_(std::move(options)),
      edges_(std::move(edges)),
      nodes_(graph, std::move(node_options), {}) {
  const core::PartitionConfig& config = graph_->config();
  negative_type_ = NegativeType(config);
  num_candidates_ = negative_type_ >= 0 ? graph_->node_types().count(negative_type_) : graph_->num_nodes();
  if (options_.negative_sampling == NegativeSampling::kLocal) {
    const auto [first, last] = LocalCandidates(*graph_, negative_type_);
    local_first_ = first;
    num_candidates_ = last - first;
  }
  // Typed: the seed pairs are left out of the link relation and of its reverse (rev_REL, from the
  // destination type back to the source type), not of other relations that join the same nodes.
  if (const int relation = LinkRelation(config); relation >= 0) {
    const core::CanonicalEdgeType& rel = config.edge_types[relation];
    exclude_relations_.assign(config.edge_types.size(), 0);
    exclude_relations_[relation] = 1;
    for (size_t r = 0; r < config.edge_types.size(); ++r) {
      const core::CanonicalEdgeType& t = config.edge_types[r];
      if (t.rel == "rev_" + rel.rel && t.src == rel.dst && t.dst == rel.src) exclude_relations_[r] = 1;
    }
  }
  const int64_t n = edges_.size();
  edges_per_epoch_ = options_.edges_per_epoch < 0 ? n : std::min(n, options_.edges_per_epoch);
  steps_per_epoch_ = LinkStepsPerEpoch(options_, n);
}

SamplerOptions NodeOptionsOf(const LinkSamplerOptions& o) {
  SamplerOptions so = o.sampling;
  so.label_field = "";  // pairs have no labels
  return so;
}

int64_t LinkStepsPerEpoch(const LinkSamplerOptions& o, int64_t num_edges) {
  return StepsPerEpoch(num_edges, o.edges_per_epoch, o.sampling.batch_size);
}

absl::Status ValidateLinkSamplerOptions(const LinkSamplerOptions& o, const DistGraph& graph,
                                        const SeedArray& edges) {
  if (o.sampling.batch_size < 1) {
    return absl::InvalidArgumentError(StrCat("--batch-size must be >= 1, got ", o.sampling.batch_size));
  }
  if (o.negatives < 1) return absl::InvalidArgumentError(StrCat("--negatives must be >= 1, got ", o.negatives));
  if (graph.num_nodes() < 3) {
    return absl::FailedPreconditionError("link prediction needs at least 3 nodes to draw negatives from");
  }
  if (const int relation = LinkRelation(graph.config()); relation >= 0) {
    const core::CanonicalEdgeType& rel = graph.config().edge_types[relation];
    const auto dst = graph.node_types().TypeId(rel.dst);
    if (!dst.ok() || graph.node_types().count(*dst) < 3) {
      return absl::FailedPreconditionError(StrCat("link prediction on ", rel.ToString(),
                                                  " needs at least 3 nodes of type ", rel.dst,
                                                  " to draw negatives from"));
    }
  }
  if (o.negative_sampling == NegativeSampling::kLocal) {
    const auto [first, last] = LocalCandidates(graph, NegativeType(graph.config()));
    if (last - first < 3) {
      return absl::FailedPreconditionError(
          StrCat("local negatives are drawn among this machine's partition's nodes",
                 graph.machine_id() < 0 ? " (this process has no machine)" : "", ": it has ", last - first,
                 ", fewer than 3; use --negative-sampling uniform"));
    }
  }
  if (!o.hard_negative_field.empty()) {
    ASSIGN_OR_RETURN(core::FieldSchema f, graph.EdgeFieldSchema(o.hard_negative_field));
    if (f.dtype != core::DType::kInt64) {
      return absl::InvalidArgumentError(StrCat("hard negative field '", o.hard_negative_field, "' holds ",
                                               core::DTypeName(f.dtype), ", not int64 node IDs (write it with "
                                               "fanout-partition --hard-negative-field)"));
    }
    if (o.negative_sampling == NegativeSampling::kJoint || o.negative_sampling == NegativeSampling::kInBatch) {
      return absl::InvalidArgumentError(StrCat("hard negatives are per positive: they fill up with uniform, degree "
                                               "or local negatives, not ", NegativeSamplingName(o.negative_sampling)));
    }
    if (o.hard_negatives < 0 || o.hard_negatives > o.negatives) {
      return absl::InvalidArgumentError(StrCat("--hard-negatives must be in [0, --negatives ", o.negatives,
                                               "] (0: up to --negatives), got ", o.hard_negatives));
    }
  }
  const int64_t num_edges = graph.config().edge_bounds.empty() ? 0 : graph.config().edge_bounds.back();
  auto bad = [&](int64_t e) {
    return absl::InvalidArgumentError(StrCat("edge seed ", e, " is not an edge ID in [0, ", num_edges, ")"));
  };
  if (edges.is_range() && edges.size() > 0) {
    if (edges.first() < 0) return bad(edges.first());
    if (edges.first() + edges.size() > num_edges) return bad(edges.first() + edges.size() - 1);
  }
  for (int64_t e : edges.list()) {
    if (e < 0 || e >= num_edges) return bad(e);
  }
  return ValidateSamplerOptions(NodeOptionsOf(o), graph);
}

absl::StatusOr<std::unique_ptr<LinkBatchSampler>> LinkBatchSampler::Create(
    const DistGraph* graph, LinkSamplerOptions o, SeedArray edges,
    std::shared_ptr<const std::vector<double>> degree_table) {
  RETURN_IF_ERROR(ValidateLinkSamplerOptions(o, *graph, edges));
  SamplerOptions so = NodeOptionsOf(o);
  std::unique_ptr<LinkBatchSampler> s(new LinkBatchSampler(graph, std::move(o), std::move(edges), std::move(so)));
  if (!s->options_.hard_negative_field.empty()) {
    ASSIGN_OR_RETURN(core::FieldSchema f, graph->EdgeFieldSchema(s->options_.hard_negative_field));
    s->hard_width_ = f.row_elems();
  }
  if (s->options_.negative_sampling == NegativeSampling::kDegreePow75 && degree_table != nullptr) {
    s->cumulative_ = std::move(degree_table);
  } else if (s->options_.negative_sampling == NegativeSampling::kDegreePow75) {
    const int64_t n = s->num_candidates_;
    std::vector<int64_t> ids(n), degree(n);
    for (int64_t v = 0; v < n; ++v) ids[v] = s->Candidate(v);
    RETURN_IF_ERROR(graph->Degrees(ids, core::EdgeDir::kIn, degree.data()));
    auto table = std::make_shared<std::vector<double>>(n);
    double sum = 0;
    for (int64_t v = 0; v < n; ++v) (*table)[v] = sum += std::pow(static_cast<double>(degree[v]), 0.75);
    if (!(sum > 0)) return absl::FailedPreconditionError("degree^0.75 negatives: the graph has no edges");
    s->cumulative_ = std::move(table);
  }
  return s;
}

int64_t LinkBatchSampler::Candidate(int64_t i) const {
  i += local_first_;
  return negative_type_ >= 0 ? graph_->node_types().ToHomogeneous(negative_type_, i) : i;
}

int64_t LinkBatchSampler::DrawNegative(uint64_t& state) const {
  const uint64_t r = core::SplitMix64(state++);
  if (cumulative_ == nullptr) return Candidate(static_cast<int64_t>(r % static_cast<uint64_t>(num_candidates_)));
  // Uniform in [0, total), 53 bits, then the first candidate whose prefix sum exceeds it.
  const std::vector<double>& c = *cumulative_;
  const double x = static_cast<double>(r >> 11) * 0x1.0p-53 * c.back();
  return Candidate(std::upper_bound(c.begin(), c.end(), x) - c.begin());
}

std::vector<int64_t> LinkBatchSampler::DrawNegatives(const std::vector<int64_t>& src, const std::vector<int64_t>& dst,
                                                     uint64_t& state) const {
  const int64_t count = static_cast<int64_t>(src.size()), k = options_.negatives;
  std::vector<int64_t> neg;
  switch (options_.negative_sampling) {
    case NegativeSampling::kInBatch: {  // the next positives' destinations, wrapping around
      const int64_t kb = std::min(k, count - 1);
      neg.resize(count * std::max<int64_t>(kb, 0));
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t j = 0; j < kb; ++j) neg[i * kb + j] = dst[(i + 1 + j) % count];
      }
      return neg;
    }
    case NegativeSampling::kJoint: {  // k nodes for the whole batch
      std::vector<int64_t> shared(k);
      for (int64_t& w : shared) w = DrawNegative(state);
      neg.resize(count * k);
      for (int64_t i = 0; i < count; ++i) std::copy(shared.begin(), shared.end(), neg.begin() + i * k);
      return neg;
    }
    default:  // per positive: a drawn node that is neither of its endpoints
      neg.resize(count * k);
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t j = 0; j < k; ++j) {
          int64_t w = DrawNegative(state);
          while (w == src[i] || w == dst[i]) w = DrawNegative(state);
          neg[i * k + j] = w;
        }
      }
      return neg;
  }
}

absl::Status LinkBatchSampler::PutHardNegatives(const std::vector<int64_t>& eids, const std::vector<int64_t>& src,
                                                const std::vector<int64_t>& dst, std::vector<int64_t>* neg) {
  const int64_t count = static_cast<int64_t>(eids.size()), k = options_.negatives;
  const int64_t most = options_.hard_negatives > 0 ? options_.hard_negatives : k;
  hard_rows_.resize(count * hard_width_);
  RETURN_IF_ERROR(graph_->PullEdgeRows(options_.hard_negative_field, eids, reinterpret_cast<char*>(hard_rows_.data())));
  const int64_t n = graph_->num_nodes();
  for (int64_t i = 0; i < count; ++i) {
    int64_t used = 0;
    for (int64_t j = 0; j < hard_width_ && used < most; ++j) {
      const int64_t w = hard_rows_[i * hard_width_ + j];
      if (w < 0 || w >= n || w == src[i] || w == dst[i]) continue;
      (*neg)[i * k + used++] = w;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LinkMiniBatch> LinkBatchSampler::Sample(int64_t epoch, int64_t step) {
  ASSIGN_OR_RETURN(LinkMiniBatch b, SampleBlocks(epoch, step));
  const auto start = std::chrono::steady_clock::now();
  // Pooled: a fresh buffer per batch would page-fault every 4 KiB of it (minibatch_sampler.h).
  ASSIGN_OR_RETURN(b.nodes.features, nodes_.GatherFeatures(nodes_.FeatureRequest(&b.nodes), &pool_));
  b.nodes.fetch_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return b;
}

absl::StatusOr<LinkMiniBatch> LinkBatchSampler::SampleBlocks(int64_t epoch, int64_t step) {
  if (step < 0 || step >= steps_per_epoch_) {
    return absl::OutOfRangeError(StrCat("step ", step, " of an epoch of ", steps_per_epoch_, " steps"));
  }
  const auto start = std::chrono::steady_clock::now();
  LinkMiniBatch b;
  b.epoch = epoch;
  b.step = step;
  // This epoch's positives: the trainer's edges shuffled per (seed, epoch, rank), cut to the
  // count every rank uses; then this step's slice.
  if (epoch != cached_epoch_) {  // one shuffle per epoch, not per step
    epoch_edges_ = EpochSeeds(edges_, edges_per_epoch_, /*shuffle=*/true, options_.sampling.seed, epoch,
                               options_.sampling.rank);
    cached_epoch_ = epoch;
  }
  const int64_t first = step * options_.sampling.batch_size;
  const int64_t count = std::min(options_.sampling.batch_size, edges_per_epoch_ - first);
  b.eids.assign(epoch_edges_.begin() + first, epoch_edges_.begin() + first + count);
  std::vector<int64_t> src(count), dst(count);
  RETURN_IF_ERROR(graph_->FindEdges(b.eids, src.data(), dst.data()));

  uint64_t state = Mix(Mix(Mix(options_.sampling.seed ^ 0x6e6567ULL, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(step)),
                       static_cast<uint64_t>(options_.sampling.rank));
  std::vector<int64_t> neg = DrawNegatives(src, dst, state);
  if (!options_.hard_negative_field.empty()) RETURN_IF_ERROR(PutHardNegatives(b.eids, src, dst, &neg));
  const size_t per_positive = count > 0 ? neg.size() / count : 0;

  // The distinct endpoints, in order of first appearance, and each pair's positions.
  IdMap map;
  map.Reset(static_cast<size_t>(2 * count + neg.size()));
  b.pos_src.resize(count);
  b.pos_dst.resize(count);
  b.neg_src.resize(neg.size());
  b.neg_dst.resize(neg.size());
  for (int64_t i = 0; i < count; ++i) {
    b.pos_src[i] = map.Insert(src[i]);
    b.pos_dst[i] = map.Insert(dst[i]);
  }
  for (size_t j = 0; j < neg.size(); ++j) {
    b.neg_src[j] = b.pos_src[j / per_positive];
    b.neg_dst[j] = map.Insert(neg[j]);
  }
  b.nodes.epoch = epoch;
  b.nodes.step = step;
  b.nodes.seeds = map.TakeIds();

  std::vector<std::pair<int64_t, int64_t>> exclude;
  if (options_.exclude_seed_edges) {
    for (int64_t i = 0; i < count; ++i) exclude.emplace_back(std::min(src[i], dst[i]), std::max(src[i], dst[i]));
    std::sort(exclude.begin(), exclude.end());
    exclude.erase(std::unique(exclude.begin(), exclude.end()), exclude.end());
  }
  RETURN_IF_ERROR(nodes_.SampleBlocksFor(b.nodes.seeds, Mix(state, 0x626c6f636bULL), &b.nodes.blocks,
                                         options_.exclude_seed_edges ? &exclude : nullptr,
                                         exclude_relations_.empty() ? nullptr : &exclude_relations_));
  b.nodes.sample_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return b;
}

std::vector<int64_t> DrawEvalNegatives(const DistGraph& graph, std::span<const int64_t> pairs, int64_t first_index,
                                       int64_t k, bool joint, uint64_t seed, uint64_t stream) {
  const int type = NegativeType(graph.config());
  const uint64_t n = static_cast<uint64_t>(type >= 0 ? graph.node_types().count(type) : graph.num_nodes());
  auto draw = [&](uint64_t index, int64_t j, uint64_t attempt) {
    const int64_t i = static_cast<int64_t>(
        Mix(Mix(Mix(Mix(seed ^ 0x6576616cULL, stream), index), static_cast<uint64_t>(j)), attempt) % n);
    return type >= 0 ? graph.node_types().ToHomogeneous(type, i) : i;
  };
  std::vector<int64_t> out;
  if (joint) {
    for (int64_t j = 0; j < k; ++j) out.push_back(draw(~uint64_t{0}, j, 0));
    return out;
  }
  const int64_t count = static_cast<int64_t>(pairs.size() / 2);
  out.resize(count * k);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t src = pairs[2 * i], dst = pairs[2 * i + 1];
    for (int64_t j = 0; j < k; ++j) {
      uint64_t attempt = 0;
      int64_t w = draw(static_cast<uint64_t>(first_index + i), j, attempt);
      while ((w == src || w == dst) && n > 2) w = draw(static_cast<uint64_t>(first_index + i), j, ++attempt);
      out[i * k + j] = w;
    }
  }
  return out;
}

absl::StatusOr<std::unique_ptr<LinkBatchLoader>> LinkBatchLoader::Create(const DistGraph* graph,
                                                                         const LinkSamplerOptions& options,
                                                                         const SeedArray& edges, int threads,
                                                                         int prefetch, int64_t first_epoch,
                                                                         int64_t num_epochs, int64_t first_step) {
  if (prefetch < 1) return absl::InvalidArgumentError(StrCat("--prefetch must be >= 1, got ", prefetch));
  std::unique_ptr<LinkBatchLoader> l(new LinkBatchLoader());
  for (int i = 0; i < std::max(1, threads); ++i) {
    ASSIGN_OR_RETURN(auto s, LinkBatchSampler::Create(graph, options, edges,
                                                      l->samplers_.empty() ? nullptr : l->samplers_[0]->degree_table()));
    l->samplers_.push_back(std::move(s));
  }
  LinkBatchLoader* self = l.get();
  l->prefetcher_ = std::make_unique<Prefetcher<LinkMiniBatch>>(
      static_cast<int>(l->samplers_.size()), l->steps_per_epoch(), first_epoch, num_epochs, prefetch,
      [self](int w, int64_t epoch, int64_t step) { return self->samplers_[w]->Sample(epoch, step); }, first_step);
  return l;
}

}  // namespace fanout::sampler

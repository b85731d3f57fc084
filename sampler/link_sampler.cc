#include "sampler/link_sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "base/enum_names.h"
#include "base/status.h"
#include "base/strings.h"
#include "core/random.h"
#include "core/sampling.h"
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

std::vector<int> LinkRelations(const core::PartitionConfig& config) {
  std::vector<int> out;
  for (const std::string& name : config.link_etypes) {
    // (LoadPartitionConfig refuses a link_etypes entry that is not an edge type.)
    if (absl::StatusOr<int> r = core::FindEdgeType(config.edge_types, name); r.ok()) out.push_back(*r);
  }
  return out;
}

int LinkRelationOf(const core::PartitionConfig& config, std::span<const int> relations, int64_t eid) {
  if (relations.empty()) return 0;
  const auto& b = config.edge_bounds;
  const int part = static_cast<int>(std::upper_bound(b.begin(), b.end(), eid) - b.begin()) - 1;
  if (part < 0 || part >= config.num_parts) return -1;
  for (size_t i = 0; i < relations.size(); ++i) {
    const auto [first, last] = config.edge_type_ranges[relations[i]][part];
    if (eid >= first && eid < last) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> LinkNegativeTypes(const core::PartitionConfig& config) {
  std::vector<int> out;
  for (int r : LinkRelations(config)) {
    const std::string& dst = config.edge_types[r].dst;
    out.push_back(static_cast<int>(std::find(config.node_types.begin(), config.node_types.end(), dst) -
                                   config.node_types.begin()));
  }
  if (out.empty()) out.push_back(-1);
  return out;
}

namespace {

// Rank `rank`'s slice of the stored edges [first, last) of its partition.
std::pair<int64_t, int64_t> RankSlice(std::pair<int64_t, int64_t> range, int tpm, int rank) {
  const int local = rank % tpm;
  const int64_t n = range.second - range.first;
  return {range.first + n * local / tpm, range.first + n * (local + 1) / tpm};
}

// Rank `rank`'s slices [begin, end), one per link relation (one of every stored edge without).
std::vector<std::pair<int64_t, int64_t>> RankSlices(const core::PartitionConfig& config, int tpm, int rank) {
  const int part = rank / tpm;
  std::vector<std::pair<int64_t, int64_t>> out;
  const std::vector<int> relations = LinkRelations(config);
  if (relations.empty()) out.push_back(RankSlice({config.edge_bounds[part], config.edge_bounds[part + 1]}, tpm, rank));
  for (int r : relations) out.push_back(RankSlice(config.edge_type_ranges[r][part], tpm, rank));
  return out;
}

}  // namespace

absl::StatusOr<std::pair<int64_t, int64_t>> RankEdgeRange(const core::PartitionConfig& config, int tpm, int rank) {
  const std::vector<std::pair<int64_t, int64_t>> slices = RankSlices(config, tpm, rank);
  if (slices.size() > 1) {
    return absl::InvalidArgumentError(StrCat("the graph is partitioned for link prediction on ", slices.size(),
                                             " relations (", base::StrJoin(config.link_etypes, ", "),
                                             "): a rank's positive edges are one range per relation, not one range"));
  }
  return slices[0];
}

int64_t RankEdgeCount(const core::PartitionConfig& config, int tpm, int rank) {
  int64_t n = 0;
  for (const auto& [begin, end] : RankSlices(config, tpm, rank)) n += end - begin;
  return n;
}

SeedArray RankEdgeSeeds(const core::PartitionConfig& config, int tpm, int rank) {
  const std::vector<std::pair<int64_t, int64_t>> slices = RankSlices(config, tpm, rank);
  if (slices.size() == 1) return SeedArray::Range(slices[0].first, slices[0].second - slices[0].first);
  std::vector<int64_t> ids;
  for (const auto& [begin, end] : slices) {
    for (int64_t e = begin; e < end; ++e) ids.push_back(e);
  }
  return SeedArray::Of(std::move(ids));
}

LinkBatchSampler::LinkBatchSampler(const DistGraph* graph, LinkSamplerOptions options, SeedArray edges,
                                   SamplerOptions node_options)
    : graph_(graph),
      options_(std::move(options)),
      edges_(std::move(edges)),
      nodes_(graph, std::move(node_options), {}) {
  const core::PartitionConfig& config = graph_->config();
  link_relations_ = LinkRelations(config);
  for (int type : LinkNegativeTypes(config)) {
    int set = 0;
    while (set < static_cast<int>(sets_.size()) && sets_[set].type != type) ++set;
    if (set == static_cast<int>(sets_.size())) {
      CandidateSet c{.type = type, .count = type >= 0 ? graph_->node_types().count(type) : graph_->num_nodes()};
      if (options_.draw.negative_sampling == NegativeSampling::kLocal) {
        const auto [first, last] = LocalCandidates(*graph_, type);
        c.first = first;
        c.count = last - first;
      }
      sets_.push_back(c);
    }
    set_of_.push_back(set);
  }
  // Typed: the seed pairs are left out of each link relation and of its reverse (rev_REL, from
  // the destination type back to the source type), not of other relations that join the same nodes.
  if (!link_relations_.empty()) {
    exclude_relations_.assign(config.edge_types.size(), 0);
    for (int relation : link_relations_) {
      const core::CanonicalEdgeType& rel = config.edge_types[relation];
      exclude_relations_[relation] = 1;
      for (size_t r = 0; r < config.edge_types.size(); ++r) {
        const core::CanonicalEdgeType& t = config.edge_types[r];
        if (t.rel == "rev_" + rel.rel && t.src == rel.dst && t.dst == rel.src) exclude_relations_[r] = 1;
      }
    }
  }
  const int64_t n = edges_.size();
  edges_per_epoch_ = options_.draw.edges_per_epoch <= 0 ? n : std::min(n, options_.draw.edges_per_epoch);
  steps_per_epoch_ = LinkStepsPerEpoch(options_, n);
}

SamplerOptions NodeOptionsOf(const LinkSamplerOptions& o) {
  SamplerOptions so = o.sampling;
  so.label_field = "";  // pairs have no labels
  return so;
}

int64_t LinkStepsPerEpoch(const LinkSamplerOptions& o, int64_t num_edges) {
  const int64_t per_epoch = o.draw.edges_per_epoch <= 0 ? -1 : o.draw.edges_per_epoch;  // <= 0: all
  return StepsPerEpoch(num_edges, per_epoch, o.sampling.batch_size);
}

absl::Status ValidateLinkSamplerOptions(const LinkSamplerOptions& o, const DistGraph& graph,
                                        const SeedArray& edges) {
  RETURN_IF_ERROR(core::CheckBatchSize("--batch-size", o.sampling.batch_size));
  if (o.draw.negatives < 1) {
    return absl::InvalidArgumentError(StrCat("--negatives must be >= 1, got ", o.draw.negatives));
  }
  if (graph.num_nodes() < 3) {
    return absl::FailedPreconditionError("link prediction needs at least 3 nodes to draw negatives from");
  }
  const core::PartitionConfig& config = graph.config();
  const std::vector<int> relations = LinkRelations(config);
  const std::vector<int> types = LinkNegativeTypes(config);
  for (size_t i = 0; i < relations.size(); ++i) {
    const core::CanonicalEdgeType& rel = config.edge_types[relations[i]];
    if (graph.node_types().count(types[i]) < 3) {
      return absl::FailedPreconditionError(StrCat("link prediction on ", rel.ToString(),
                                                  " needs at least 3 nodes of type ", rel.dst,
                                                  " to draw negatives from"));
    }
  }
  if (o.draw.negative_sampling == NegativeSampling::kInBatch &&
      std::any_of(types.begin(), types.end(), [&](int t) { return t != types[0]; })) {
    return absl::InvalidArgumentError(
        StrCat("in-batch negatives are the batch's other destinations, but the link relations (",
               base::StrJoin(config.link_etypes, ", "),
               ") end in different node types; use --negative-sampling joint (shared per destination type) or uniform"));
  }
  if (o.draw.negative_sampling == NegativeSampling::kLocal) {
    for (size_t i = 0; i < types.size(); ++i) {
      const auto [first, last] = LocalCandidates(graph, types[i]);
      if (last - first < 3) {
        return absl::FailedPreconditionError(
            StrCat("local negatives are drawn among this machine's partition's nodes",
                   types[i] >= 0 ? StrCat(" of type ", config.node_types[types[i]]) : "",
                   graph.machine_id() < 0 ? " (this process has no machine)" : "", ": it has ", last - first,
                   ", fewer than 3; use --negative-sampling uniform"));
      }
    }
  }
  if (!o.draw.hard_negative_field.empty()) {
    RETURN_IF_ERROR(HardNegativeFields(graph, o.draw.hard_negative_field).status());
    const NegativeSampling drawn = o.draw.negative_sampling;
    if (drawn == NegativeSampling::kJoint || drawn == NegativeSampling::kInBatch) {
      return absl::InvalidArgumentError(StrCat("hard negatives are per positive: they fill up with uniform, degree "
                                               "or local negatives, not ", NegativeSamplingName(drawn)));
    }
    if (o.draw.hard_negatives < 0 || o.draw.hard_negatives > o.draw.negatives) {
      return absl::InvalidArgumentError(StrCat("--hard-negatives must be in [0, --negatives ", o.draw.negatives,
                                               "] (0: up to --negatives), got ", o.draw.hard_negatives));
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

absl::StatusOr<std::vector<std::string>> HardNegativeFields(const DistGraph& graph, const std::string& name) {
  const core::PartitionConfig& config = graph.config();
  const std::vector<int> relations = LinkRelations(config);
  std::vector<std::string> keys;
  if (relations.empty()) {
    keys.push_back(name);
  } else {
    for (int r : relations) {
      const std::string key = config.edge_types[r].ToString() + "/" + name;
      keys.push_back(graph.EdgeFieldSchema(key).ok() ? key : "");
    }
    if (std::all_of(keys.begin(), keys.end(), [](const std::string& k) { return k.empty(); })) {
      return absl::NotFoundError(StrCat("hard negative field '", name, "': none of the link relations (",
                                        base::StrJoin(config.link_etypes, ", "), ") has an edge field of that name ",
                                        "(fanout-partition --hard-negative-field with edge_data/SRC___REL___DST/", name,
                                        ".npy)"));
    }
  }
  for (const std::string& key : keys) {
    if (key.empty()) continue;
    ASSIGN_OR_RETURN(core::FieldSchema f, graph.EdgeFieldSchema(key));
    if (f.dtype != core::DType::kInt64) {
      return absl::InvalidArgumentError(StrCat("hard negative field '", key, "' holds ", core::DTypeName(f.dtype),
                                               ", not int64 node IDs (write it with fanout-partition "
                                               "--hard-negative-field)"));
    }
  }
  return keys;
}

absl::StatusOr<std::unique_ptr<LinkBatchSampler>> LinkBatchSampler::Create(
    const DistGraph* graph, LinkSamplerOptions o, SeedArray edges,
    std::shared_ptr<const DegreeTables> degree_table) {
  RETURN_IF_ERROR(ValidateLinkSamplerOptions(o, *graph, edges));
  SamplerOptions so = NodeOptionsOf(o);
  std::unique_ptr<LinkBatchSampler> s(new LinkBatchSampler(graph, std::move(o), std::move(edges), std::move(so)));
  if (!s->options_.draw.hard_negative_field.empty()) {
    ASSIGN_OR_RETURN(s->hard_fields_, HardNegativeFields(*graph, s->options_.draw.hard_negative_field));
    for (const std::string& key : s->hard_fields_) {
      int64_t width = 0;
      if (!key.empty()) {
        ASSIGN_OR_RETURN(core::FieldSchema f, graph->EdgeFieldSchema(key));
        width = f.row_elems();
      }
      s->hard_widths_.push_back(width);
    }
  }
  if (s->options_.draw.negative_sampling == NegativeSampling::kDegreePow75 && degree_table != nullptr) {
    s->cumulative_ = std::move(degree_table);
  } else if (s->options_.draw.negative_sampling == NegativeSampling::kDegreePow75) {
    auto tables = std::make_shared<DegreeTables>();
    for (int set = 0; set < static_cast<int>(s->sets_.size()); ++set) {
      const int64_t n = s->sets_[set].count;
      std::vector<int64_t> ids(n), degree(n);
      for (int64_t v = 0; v < n; ++v) ids[v] = s->Candidate(set, v);
      RETURN_IF_ERROR(graph->Degrees(ids, core::EdgeDir::kIn, degree.data()));
      std::vector<double>& table = tables->emplace_back(n);
      double sum = 0;
      for (int64_t v = 0; v < n; ++v) table[v] = sum += std::pow(static_cast<double>(degree[v]), 0.75);
      if (!(sum > 0)) {
        return absl::FailedPreconditionError(
            StrCat("degree^0.75 negatives: the ",
                   s->sets_[set].type >= 0 ? StrCat(graph->config().node_types[s->sets_[set].type], " nodes have")
                                           : "graph has",
                   " no in-edges"));
      }
    }
    s->cumulative_ = std::move(tables);
  }
  return s;
}

int64_t LinkBatchSampler::Candidate(int set, int64_t i) const {
  const CandidateSet& c = sets_[set];
  i += c.first;
  return c.type >= 0 ? graph_->node_types().ToHomogeneous(c.type, i) : i;
}

int64_t LinkBatchSampler::DrawNegative(int set, uint64_t& state) const {
  const uint64_t r = core::SplitMix64(state++);
  if (cumulative_ == nullptr) return Candidate(set, static_cast<int64_t>(r % static_cast<uint64_t>(sets_[set].count)));
  // Uniform in [0, total), 53 bits, then the first candidate whose prefix sum exceeds it.
  const std::vector<double>& c = (*cumulative_)[set];
  const double x = static_cast<double>(r >> 11) * 0x1.0p-53 * c.back();
  return Candidate(set, std::upper_bound(c.begin(), c.end(), x) - c.begin());
}

std::vector<int64_t> LinkBatchSampler::DrawNegatives(const std::vector<int64_t>& src, const std::vector<int64_t>& dst,
                                                     const std::vector<int>& set, uint64_t& state) const {
  const int64_t count = static_cast<int64_t>(src.size()), k = options_.draw.negatives;
  std::vector<int64_t> neg;
  switch (options_.draw.negative_sampling) {
    case NegativeSampling::kInBatch: {  // the next positives' destinations, wrapping around
      const int64_t kb = std::min(k, count - 1);
      neg.resize(count * std::max<int64_t>(kb, 0));
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t j = 0; j < kb; ++j) neg[i * kb + j] = dst[(i + 1 + j) % count];
      }
      return neg;
    }
    case NegativeSampling::kJoint: {  // k nodes for the whole batch (per candidate set)
      std::vector<std::vector<int64_t>> shared(sets_.size());
      for (int c = 0; c < static_cast<int>(sets_.size()); ++c) {
        if (std::find(set.begin(), set.end(), c) == set.end()) continue;
        shared[c].resize(k);
        for (int64_t& w : shared[c]) w = DrawNegative(c, state);
      }
      neg.resize(count * k);
      for (int64_t i = 0; i < count; ++i) std::copy(shared[set[i]].begin(), shared[set[i]].end(), neg.begin() + i * k);
      return neg;
    }
    default:  // per positive: a drawn node that is neither of its endpoints
      neg.resize(count * k);
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t j = 0; j < k; ++j) {
          int64_t w = DrawNegative(set[i], state);
          while (w == src[i] || w == dst[i]) w = DrawNegative(set[i], state);
          neg[i * k + j] = w;
        }
      }
      return neg;
  }
}

absl::Status LinkBatchSampler::PutHardNegatives(const std::vector<int64_t>& eids, const std::vector<int>& rel,
                                                const std::vector<int64_t>& src, const std::vector<int64_t>& dst,
                                                std::vector<int64_t>* neg) {
  const int64_t count = static_cast<int64_t>(eids.size()), k = options_.draw.negatives;
  const int64_t most = options_.draw.hard_negatives > 0 ? options_.draw.hard_negatives : k;
  const int64_t n = graph_->num_nodes();
  // The positives of each link relation that has the field, pulled together.
  for (size_t r = 0; r < hard_fields_.size(); ++r) {
    if (hard_fields_[r].empty()) continue;
    std::vector<int64_t> mine, ids;
    for (int64_t i = 0; i < count; ++i) {
      if (rel[i] == static_cast<int>(r)) {
        mine.push_back(i);
        ids.push_back(eids[i]);
      }
    }
    if (mine.empty()) continue;
    const int64_t width = hard_widths_[r];
    hard_rows_.resize(mine.size() * width);
    RETURN_IF_ERROR(graph_->PullEdgeRows(hard_fields_[r], ids, reinterpret_cast<char*>(hard_rows_.data())));
    for (size_t m = 0; m < mine.size(); ++m) {
      const int64_t i = mine[m];
      int64_t used = 0;
      for (int64_t j = 0; j < width && used < most; ++j) {
        const int64_t w = hard_rows_[m * width + j];
        if (w < 0 || w >= n || w == src[i] || w == dst[i]) continue;
        (*neg)[i * k + used++] = w;
      }
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
  // Each positive's link relation (0 with one or none), found once, and its candidate set: its
  // relation's destination type's.
  std::vector<int> rel(count, 0), set(count, set_of_[0]);
  if (link_relations_.size() > 1) {
    for (int64_t i = 0; i < count; ++i) {
      rel[i] = std::max(0, LinkRelationOf(graph_->config(), link_relations_, b.eids[i]));
      set[i] = set_of_[rel[i]];
    }
  }
  std::vector<int64_t> neg = DrawNegatives(src, dst, set, state);
  if (!options_.draw.hard_negative_field.empty()) RETURN_IF_ERROR(PutHardNegatives(b.eids, rel, src, dst, &neg));
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

std::vector<int64_t> DrawEvalNegatives(const DistGraph& graph, std::span<const int64_t> pairs,
                                       std::span<const int64_t> relations, int64_t first_index, int64_t k, bool joint,
                                       uint64_t seed, uint64_t stream) {
  const std::vector<int> types = LinkNegativeTypes(graph.config());
  auto count_of = [&](int type) {
    return static_cast<uint64_t>(type >= 0 ? graph.node_types().count(type) : graph.num_nodes());
  };
  // Relation r > 0 draws from its own stream; relation 0's are what one relation always drew.
  auto draw = [&](int r, uint64_t index, int64_t j, uint64_t attempt) {
    const int type = types[r];
    const uint64_t s = r == 0 ? stream : Mix(stream, 0x72656c0000ULL + static_cast<uint64_t>(r));
    const int64_t i = static_cast<int64_t>(
        Mix(Mix(Mix(Mix(seed ^ 0x6576616cULL, s), index), static_cast<uint64_t>(j)), attempt) % count_of(type));
    return type >= 0 ? graph.node_types().ToHomogeneous(type, i) : i;
  };
  std::vector<int64_t> out;
  if (joint) {
    for (int r = 0; r < static_cast<int>(types.size()); ++r) {
      for (int64_t j = 0; j < k; ++j) out.push_back(draw(r, ~uint64_t{0}, j, 0));
    }
    return out;
  }
  const int64_t count = static_cast<int64_t>(pairs.size() / 2);
  out.resize(count * k);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t src = pairs[2 * i], dst = pairs[2 * i + 1];
    const int r = relations.empty() ? 0 : static_cast<int>(relations[i]);
    const uint64_t n = count_of(types[r]);
    for (int64_t j = 0; j < k; ++j) {
      uint64_t attempt = 0;
      int64_t w = draw(r, static_cast<uint64_t>(first_index + i), j, attempt);
      while ((w == src || w == dst) && n > 2) w = draw(r, static_cast<uint64_t>(first_index + i), j, ++attempt);
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

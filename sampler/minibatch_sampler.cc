#include "sampler/minibatch_sampler.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <tuple>

#include "base/check.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/text_reader.h"
#include "core/dtype.h"
#include "core/random.h"
#include "core/sampling.h"
#include "sampler/machine_rows.h"
#include "sampler/seed_split.h"

namespace fanout::sampler {

using core::DType;
using base::StrCat;

namespace {

uint64_t Mix(uint64_t h, uint64_t v) { return core::SplitMix64(h ^ core::SplitMix64(v)); }

// The edge field keys that field `name` stands for: on a typed graph each edge type's own
// ("SRC:REL:DST/NAME", indexed by relation; "" for the types without one, whose edges get
// weight 1 and zero features, as a relation's layer given no edge data), else {name}. NOT_FOUND
// when no edge type has one (`what`: "weight" or "feature"), naming the graph's edge fields.
absl::StatusOr<std::vector<std::string>> EdgeFieldKeys(const DistGraph& graph,
                                                       const std::string& name, const char* what) {
  const core::PartitionConfig& config = graph.config();
  if (!config.typed()) return std::vector<std::string>{name};
  std::vector<std::string> keys;
  bool any = false;
  for (const core::CanonicalEdgeType& type : config.edge_types) {
    keys.push_back(type.ToString() + "/" + name);
    if (graph.EdgeFieldSchema(keys.back()).ok()) {
      any = true;
    } else {
      keys.back().clear();
    }
  }
  if (any) return keys;
  std::vector<std::string> fields;
  for (const core::FieldSchema& f : config.edge_fields) fields.push_back(f.key());
  return absl::NotFoundError(
      StrCat("no edge type of graph '", config.graph_name, "' has an edge ", what, " field '", name,
             "' (SRC:REL:DST/", name,
             "); edge fields: ", fields.empty() ? "(none)" : base::StrJoin(fields, ", ")));
}

// Checks the edge field `name` stands for with `check` (which names the key at fault); on a typed
// graph every edge type's, which must agree in width.
absl::Status CheckEdgeField(const DistGraph& graph, const std::string& name, const char* what,
                            const std::function<absl::Status(const core::FieldSchema&)>& check) {
  ASSIGN_OR_RETURN(std::vector<std::string> keys, EdgeFieldKeys(graph, name, what));
  std::optional<core::FieldSchema> first;
  for (const std::string& key : keys) {
    if (key.empty()) continue;
    ASSIGN_OR_RETURN(core::FieldSchema f, graph.EdgeFieldSchema(key));
    RETURN_IF_ERROR(check(f));
    if (first && f.row_elems() != first->row_elems()) {
      return absl::InvalidArgumentError(
          StrCat("edge ", what, " fields '", first->key(), "' (", first->row_elems(),
                 " values per edge) and '", key, "' (", f.row_elems(),
                 ") differ: every edge type's must have the same width"));
    }
    if (!first) first = f;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateSamplerOptions(const SamplerOptions& o, const DistGraph& graph) {
  RETURN_IF_ERROR(core::CheckLayerFanouts("--fanouts", o.fanouts));
  if (!o.relation_fanouts.empty()) {
    const size_t relations = graph.config().edge_types.size();
    if (o.relation_fanouts.size() != o.fanouts.size()) {
      return absl::InvalidArgumentError(StrCat("--relation-fanout: ", o.relation_fanouts.size(), " layers, --fanouts ",
                                               o.fanouts.size()));
    }
    for (const std::vector<int64_t>& layer : o.relation_fanouts) {
      if (layer.size() != relations) {
        return absl::InvalidArgumentError(
            StrCat("--relation-fanout: ", layer.size(), " fanouts for a graph of ", relations, " edge types"));
      }
      for (int64_t f : layer) RETURN_IF_ERROR(core::CheckFanout(f));
    }
  }
  RETURN_IF_ERROR(core::CheckBatchSize("--batch-size", o.batch_size));
  if (o.cached_nodes != nullptr) {
    const std::vector<int64_t>& ids = o.cached_nodes->ids();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= graph.num_nodes()) {
        return absl::InvalidArgumentError(StrCat("feature cache slot ", i, " names node ", ids[i],
                                                 ", outside the graph's ", graph.num_nodes(), " nodes"));
      }
    }
  }
  const bool typed = graph.config().typed();
  if (typed && o.cached_nodes != nullptr) {
    return absl::UnimplementedError("a device feature cache (--gpu-cache-bytes) on a typed graph is not built yet");
  }
  if (!o.feature_field.empty() && typed) {
    ASSIGN_OR_RETURN(std::vector<std::string> keys, TypedFieldKeys(graph, o.feature_field, "feature"));
    std::optional<core::FieldSchema> first;
    for (const std::string& key : keys) {
      if (key.empty()) continue;
      ASSIGN_OR_RETURN(core::FieldSchema f, graph.NodeFieldSchema(key));
      if (f.row_elems() < 1) return absl::InvalidArgumentError(StrCat("feature field '", key, "' has no values per node"));
      if (first && (f.dtype != first->dtype || f.row_shape != first->row_shape || f.codec != first->codec)) {
        return absl::InvalidArgumentError(StrCat("feature fields '", first->key(), "' (", core::DTypeName(first->dtype), " x ",
                                                 first->row_elems(), ") and '", key, "' (", core::DTypeName(f.dtype), " x ",
                                                 f.row_elems(), ") differ: the node types that have features must share "
                                                 "their width and dtype"));
      }
      if (!first) first = f;
    }
  } else if (!o.feature_field.empty()) {
    ASSIGN_OR_RETURN(core::FieldSchema f, graph.NodeFieldSchema(o.feature_field));
    if (f.row_elems() < 1) {
      return absl::InvalidArgumentError(StrCat("feature field '", o.feature_field, "' has no values per node"));
    }
  }
  if (!o.edge.weight_field.empty()) {
    RETURN_IF_ERROR(
        CheckEdgeField(graph, o.edge.weight_field, "weight", [](const core::FieldSchema& f) {
          if (f.row_elems() == 1) return absl::OkStatus();
          return absl::InvalidArgumentError(
              StrCat("edge weight field '", f.key(), "' must hold one number per edge; it is ",
                     core::DTypeName(f.dtype), " with ", f.row_elems(), " values per edge"));
        }));
  }
  if (!o.edge.feature_field.empty()) {
    RETURN_IF_ERROR(
        CheckEdgeField(graph, o.edge.feature_field, "feature", [](const core::FieldSchema& f) {
          if (f.row_elems() >= 1) return absl::OkStatus();
          return absl::InvalidArgumentError(
              StrCat("edge feature field '", f.key(),
                     "' must hold at least one number for every edge; it is ",
                     core::DTypeName(f.dtype), " with ", f.row_elems(), " values per edge"));
        }));
  }
  if (!o.label_field.empty()) {
    std::vector<std::string> keys = {o.label_field};
    if (typed) {
      ASSIGN_OR_RETURN(keys, TypedFieldKeys(graph, o.label_field, "label"));
    }
    for (const std::string& key : keys) {
      if (key.empty()) continue;
      ASSIGN_OR_RETURN(core::FieldSchema f, graph.NodeFieldSchema(key));
      if (f.row_elems() != 1 || f.dtype == DType::kFloat16 || f.dtype == DType::kFloat32 || f.dtype == DType::kFloat64) {
        return absl::InvalidArgumentError(StrCat("label field '", key, "' must hold one integer per node; it is ",
                                                 core::DTypeName(f.dtype), " with ", f.row_elems(), " values per node"));
      }
    }
  }
  return absl::OkStatus();
}

int64_t StepsPerEpoch(int64_t num_items, int64_t limit, int64_t batch_size) {
  const int64_t per_epoch = limit < 0 ? num_items : std::min(num_items, limit);
  return (per_epoch + batch_size - 1) / std::max<int64_t>(1, batch_size);
}

absl::StatusOr<std::vector<std::vector<int64_t>>> ResolveRelationFanouts(const core::PartitionConfig& config,
                                                                         const std::vector<int64_t>& fanouts,
                                                                         const std::vector<std::string>& specs) {
  if (specs.empty()) return std::vector<std::vector<int64_t>>{};
  const size_t relations = config.edge_types.size();
  std::vector<std::vector<int64_t>> out(fanouts.size());
  for (size_t l = 0; l < fanouts.size(); ++l) out[l].assign(relations, fanouts[l]);
  std::vector<bool> given(relations, false);
  for (const std::string& spec : specs) {
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(StrCat("--relation-fanout ", spec, ": ", why));
    };
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) return bad("expected REL=F0,F1,... (one fanout per layer)");
    const std::string rel = spec.substr(0, eq);
    const absl::StatusOr<int> type = core::FindEdgeType(config.edge_types, rel);
    if (!type.ok()) return bad(std::string(type.status().message()));
    const int found = *type;
    if (given[found]) return bad(StrCat("edge type ", config.edge_types[found].ToString(), " is given twice"));
    given[found] = true;
    const std::vector<std::string> values = base::StrSplit(spec.substr(eq + 1), ",");
    if (values.size() != fanouts.size()) {
      return bad(StrCat(values.size(), " fanouts for ", fanouts.size(), " layers (--fanouts)"));
    }
    for (size_t l = 0; l < values.size(); ++l) {
      int64_t f = 0;
      if (!base::ParseInt64(values[l], &f) || !core::CheckFanout(f).ok()) {
        return bad(StrCat("fanout '", values[l], "' is not -1 (all) or a count >= 0"));
      }
      out[l][found] = f;
    }
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> TypedFieldKeys(const DistGraph& graph, const std::string& name,
                                                        const char* what) {
  const core::TypeMap& types = graph.node_types();
  std::vector<std::string> keys(types.num_types());
  bool any = false;
  for (int t = 0; t < types.num_types(); ++t) {
    const std::string key = types.name(t) + "/" + name;
    if (graph.NodeFieldSchema(key).ok()) {
      keys[t] = key;
      any = true;
    }
  }
  if (!any) {
    std::vector<std::string> fields;
    for (const core::FieldSchema& f : graph.config().node_fields) fields.push_back(f.key());
    return absl::NotFoundError(StrCat("no node type of graph '", graph.config().graph_name, "' has a ", what, " field '",
                                      name, "' (TYPE/", name, "); node fields: ",
                                      fields.empty() ? "(none)" : base::StrJoin(fields, ", ")));
  }
  return keys;
}

MiniBatchSampler::MiniBatchSampler(const DistGraph* graph, SamplerOptions options, std::vector<int64_t> seeds)
    : graph_(graph), options_(std::move(options)), seeds_(std::move(seeds)) {
  const int64_t n = static_cast<int64_t>(seeds_.size());
  seeds_per_epoch_ = options_.seeds_per_epoch < 0 ? n : std::min(n, options_.seeds_per_epoch);
  steps_per_epoch_ = StepsPerEpoch(options_, n);
  // The edge fields' keys, resolved once (a field that has none is left empty here; the batch
  // that needs it reports why, as ValidateSamplerOptions does).
  for (auto [field, what, keys] :
       {std::tuple{&options_.edge.weight_field, "weight", &edge_weight_keys_},
        std::tuple{&options_.edge.feature_field, "feature", &edge_feature_keys_}}) {
    if (field->empty()) continue;
    absl::StatusOr<std::vector<std::string>> resolved = EdgeFieldKeys(*graph_, *field, what);
    if (resolved.ok()) *keys = *std::move(resolved);
  }
  if (graph_->config().typed()) {
    const core::TypeMap& types = graph_->node_types();
    node_types_ = &types;
    feature_keys_.assign(types.num_types(), "");
    if (!options_.feature_field.empty()) {
      auto keys = TypedFieldKeys(*graph_, options_.feature_field, "feature");
      if (keys.ok()) feature_keys_ = std::move(*keys);
    }
    for (const std::string& key : feature_keys_) {
      auto f = key.empty() ? absl::NotFoundError("") : graph_->NodeFieldSchema(key);
      if (f.ok()) {
        feature_dim_ = f->row_elems();
        feature_dtype_ = f->dtype;
        feature_codec_ = f->codec;
      }
    }
  } else if (!options_.feature_field.empty()) {
    auto f = graph_->NodeFieldSchema(options_.feature_field);
    if (f.ok()) {
      feature_dim_ = f->row_elems();
      feature_dtype_ = f->dtype;
      feature_codec_ = f->codec;
    }
  }
}

std::vector<int64_t> MiniBatchSampler::StepSeeds(int64_t epoch, int64_t step) {
  FANOUT_CHECK(step >= 0 && step < steps_per_epoch_);
  if (epoch != cached_epoch_) {
    epoch_seeds_ = EpochSeeds(seeds_, seeds_per_epoch_, options_.shuffle, options_.seed, epoch, options_.rank);
    cached_epoch_ = epoch;
  }
  const int64_t begin = step * options_.batch_size;
  const int64_t end = std::min(seeds_per_epoch_, begin + options_.batch_size);
  return std::vector<int64_t>(epoch_seeds_.begin() + begin, epoch_seeds_.begin() + end);
}

absl::Status MiniBatchSampler::SampleBlocksFor(std::span<const int64_t> seeds, uint64_t stream,
                                               std::vector<Block>* blocks,
                                               const std::vector<std::pair<int64_t, int64_t>>* exclude,
                                               const std::vector<char>* exclude_relations) {
  const int layers = static_cast<int>(options_.fanouts.size());
  blocks->assign(layers, Block());
  std::span<const int64_t> frontier = seeds;
  for (int l = layers - 1; l >= 0; --l) {
    core::SampleOptions so;
    so.fanout = options_.fanouts[l];
    if (!options_.relation_fanouts.empty()) so.etype_fanouts = options_.relation_fanouts[l];
    so.replace = options_.replace;
    so.seed = Mix(stream, static_cast<uint64_t>(l) + 1);
    RETURN_IF_ERROR(graph_->SampleNeighbors(frontier, so, &edges_));
    if (exclude != nullptr && !exclude->empty()) DropExcluded(*exclude, &edges_, exclude_relations);
    Block& b = (*blocks)[l];
    const size_t nd = frontier.size(), ne = edges_.size();
    b.num_dst = static_cast<int64_t>(nd);
    // Sized for the destinations and a quarter of the edges' sources being new: sampled
    // neighbourhoods overlap (at products scale 2.1M sampled edges of a 4096-seed evaluation
    // batch reached 0.67M new nodes), and a table for every edge's source (134 MB there) outlives
    // the batch in this sampler. More grows it.
    map_.Reset(nd + ne / 4);
    for (int64_t v : frontier) map_.Insert(v);
    if (map_.size() != nd) {
      return absl::InvalidArgumentError(StrCat("layer ", l, ": the ", nd, " seeds of a batch must be distinct"));
    }
    b.indptr.assign(nd + 1, 0);
    b.indices.resize(ne);
    b.dst.resize(ne);
    int64_t* indptr = b.indptr.data();
    int64_t* indices = b.indices.data();
    int64_t* dst = b.dst.data();
    // Edges come grouped by destination in frontier order.
    size_t j = 0;
    constexpr size_t kAhead = 16;
    for (size_t e = 0; e < ne; ++e) {
      if (e + kAhead < ne) map_.Prefetch(edges_.src[e + kAhead]);
      while (j < nd && frontier[j] != edges_.dst[e]) indptr[++j] = static_cast<int64_t>(e);
      if (j == nd) return absl::InternalError(StrCat("layer ", l, ": sampled edges not grouped by destination"));
      indices[e] = map_.Insert(edges_.src[e]);
      dst[e] = static_cast<int64_t>(j);
    }
    while (j < nd) indptr[++j] = static_cast<int64_t>(ne);
    b.eids = std::move(edges_.eid);
    edges_.eid.clear();
    if (node_types_ != nullptr) b.fields.Add<int32_t>(kEdgeType) = std::move(edges_.etype);
    edges_.etype.clear();
    std::vector<int64_t> ids = map_.TakeIds();
    if (node_types_ != nullptr) GroupNewNodesByType(nd, &ids, &b.indices);
    b.src_nodes = std::move(ids);
    frontier = b.src_nodes;  // blocks are not resized from here on, so the span stays valid
  }
  return FetchEdgeData(blocks);
}

void MiniBatchSampler::GroupNewNodesByType(size_t num_dst, std::vector<int64_t>* ids, Int64Array* indices) {
  const size_t n = ids->size();
  if (n <= num_dst + 1) return;
  const int types = node_types_->num_types();
  type_of_.resize(n - num_dst);
  std::vector<size_t> start(types + 1, 0);
  for (size_t i = num_dst; i < n; ++i) {
    const int t = node_types_->ToTypeWise((*ids)[i]).first;
    type_of_[i - num_dst] = t;
    ++start[t + 1];
  }
  if (*std::max_element(start.begin(), start.end()) == n - num_dst) return;  // one type: already grouped
  for (int t = 0; t < types; ++t) start[t + 1] += start[t];
  // Stable: within a type, the nodes keep the order they were met in.
  new_local_.resize(n - num_dst);
  reordered_.resize(n - num_dst);
  for (size_t i = num_dst; i < n; ++i) {
    const size_t to = start[type_of_[i - num_dst]]++;
    new_local_[i - num_dst] = static_cast<int64_t>(num_dst + to);
    reordered_[to] = (*ids)[i];
  }
  std::copy(reordered_.begin(), reordered_.end(), ids->begin() + static_cast<ptrdiff_t>(num_dst));
  const int64_t nd = static_cast<int64_t>(num_dst);
  int64_t* idx = indices->data();
  for (size_t e = 0; e < indices->size(); ++e) {
    if (idx[e] >= nd) idx[e] = new_local_[idx[e] - nd];
  }
}

absl::Status MiniBatchSampler::FetchEdgeData(std::vector<Block>* blocks) {
  const EdgeDataOptions& o = options_.edge;
  if (o.weight_field.empty() && o.feature_field.empty()) return absl::OkStatus();
  std::vector<int64_t> eids;
  std::vector<int32_t> etypes;  // typed graphs: each edge's relation
  for (const Block& b : *blocks) {
    eids.insert(eids.end(), b.eids.begin(), b.eids.end());
    etypes.insert(etypes.end(), b.etype().begin(), b.etype().end());
  }
  // Rows of field `key` for edges `ids` as float32, at `out`.
  auto pull_key = [&](const std::string& key, std::span<const int64_t> ids, size_t width,
                      float* out) -> absl::Status {
    ASSIGN_OR_RETURN(core::FieldSchema f, graph_->EdgeFieldSchema(key));
    if (static_cast<size_t>(f.row_elems()) != width) {
      return absl::InvalidArgumentError(StrCat("edge field '", key, "' has ", f.row_elems(),
                                               " values per edge; ", "the other edge types' have ",
                                               width));
    }
    if (f.dtype == DType::kFloat32)
      return graph_->PullEdgeRows(key, ids, reinterpret_cast<char*>(out));
    raw_.resize(ids.size() * f.row_bytes());
    RETURN_IF_ERROR(graph_->PullEdgeRows(key, ids, raw_.data()));
    core::ConvertElements(f.dtype, raw_.data(), ids.size() * width, out);
    return absl::OkStatus();
  };
  // Rows of `field` for every block's edges (on a typed graph each relation's from its own
  // field), split back into the blocks as their field `name`. `matrix`: a [count, width] field
  // even of width 1 (features), else [count] (weights).
  // `missing`: the value of the edges of a relation without the field.
  auto pull = [&](const std::string& field, const std::vector<std::string>& keys,
                  std::string_view name, bool matrix, const char* what,
                  float missing) -> absl::Status {
    if (keys.empty()) {  // resolved to nothing: say why
      RETURN_IF_ERROR(EdgeFieldKeys(*graph_, field, what).status());
      return absl::InternalError(StrCat("edge ", what, " field '", field, "' was not resolved"));
    }
    ASSIGN_OR_RETURN(core::FieldSchema first,
                     graph_->EdgeFieldSchema(*std::find_if(keys.begin(), keys.end(),
                                                           [](auto& k) { return !k.empty(); })));
    const size_t width = static_cast<size_t>(first.row_elems());
    std::vector<float> all(eids.size() * width, missing);
    if (etypes.size() != eids.size()) {
      RETURN_IF_ERROR(pull_key(keys[0], eids, width, all.data()));
    } else {
      std::vector<std::vector<size_t>> at_of(keys.size());  // each relation's edges' positions
      for (size_t i = 0; i < etypes.size(); ++i) at_of[static_cast<size_t>(etypes[i])].push_back(i);
      std::vector<int64_t> ids;
      std::vector<float> rows;
      for (size_t r = 0; r < keys.size(); ++r) {
        if (at_of[r].empty() || keys[r].empty()) continue;
        ids.clear();
        for (size_t i : at_of[r]) ids.push_back(eids[i]);
        rows.resize(ids.size() * width);
        RETURN_IF_ERROR(pull_key(keys[r], ids, width, rows.data()));
        for (size_t k = 0; k < at_of[r].size(); ++k) {
          std::copy_n(rows.begin() + static_cast<ptrdiff_t>(k * width), width,
                      all.begin() + static_cast<ptrdiff_t>(at_of[r][k] * width));
        }
      }
    }
    size_t at = 0;
    for (Block& b : *blocks) {
      const size_t n = b.eids.size() * width;
      FloatArray& values = matrix ? b.fields.AddRows<float>(name, static_cast<int64_t>(width))
                                  : b.fields.Add<float>(name);
      values.assign(all.begin() + at, all.begin() + at + n);
      at += n;
    }
    return absl::OkStatus();
  };
  if (!o.weight_field.empty())
    RETURN_IF_ERROR(pull(o.weight_field, edge_weight_keys_, kEdgeWeight, false, "weight", 1.0f));
  if (!o.feature_field.empty())
    RETURN_IF_ERROR(pull(o.feature_field, edge_feature_keys_, kEdgeFeat, true, "feature", 0.0f));
  return absl::OkStatus();
}

absl::StatusOr<MiniBatch> MiniBatchSampler::SampleBlocks(int64_t epoch, int64_t step) {
  const auto start = std::chrono::steady_clock::now();
  MiniBatch mb;
  mb.epoch = epoch;
  mb.step = step;
  mb.seeds = StepSeeds(epoch, step);
  const uint64_t stream = Mix(Mix(Mix(options_.seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(step)),
                              static_cast<uint64_t>(options_.rank));
  RETURN_IF_ERROR(SampleBlocksFor(mb.seeds, stream, &mb.blocks));
  if (!options_.label_field.empty()) RETURN_IF_ERROR(FetchLabels(mb.seeds, &mb.labels));
  mb.sample_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return mb;
}

absl::Status MiniBatchSampler::FetchFeatures(std::span<const int64_t> input_nodes, char* out) {
  if (options_.feature_field.empty() || input_nodes.empty()) return absl::OkStatus();
  if (node_types_ == nullptr) return graph_->PullNodeRows(options_.feature_field, input_nodes, out);
  // Typed: each type's rows from its own field. The nodes of one type go straight to `out` when
  // they are all of it (the usual case: one type has features); otherwise type by type through a
  // buffer, then to their places.
  const int first = node_types_->ToTypeWise(input_nodes[0]).first;
  bool one_type = true;
  for (int64_t v : input_nodes) one_type = one_type && node_types_->ToTypeWise(v).first == first;
  if (one_type) {
    if (feature_keys_[first].empty()) return absl::InternalError("features requested for a type without them");
    return graph_->PullNodeRows(feature_keys_[first], input_nodes, out);
  }
  const size_t rb = feature_row_bytes();
  std::vector<int64_t> ids, at;
  std::string rows;
  for (int t = 0; t < node_types_->num_types(); ++t) {
    ids.clear();
    at.clear();
    for (size_t i = 0; i < input_nodes.size(); ++i) {
      if (node_types_->ToTypeWise(input_nodes[i]).first == t) {
        ids.push_back(input_nodes[i]);
        at.push_back(static_cast<int64_t>(i));
      }
    }
    if (ids.empty()) continue;
    if (feature_keys_[t].empty()) return absl::InternalError("features requested for a type without them");
    rows.resize(ids.size() * rb);
    RETURN_IF_ERROR(graph_->PullNodeRows(feature_keys_[t], ids, rows.data()));
    for (size_t j = 0; j < ids.size(); ++j) std::memcpy(out + at[j] * rb, rows.data() + j * rb, rb);
  }
  return absl::OkStatus();
}

absl::Status MiniBatchSampler::FetchLabels(std::span<const int64_t> seeds, std::vector<int64_t>* labels) {
  std::string key = options_.label_field;
  if (node_types_ != nullptr && !seeds.empty()) {
    // Seeds of one type (the task's target type) and that type's label field.
    const int t = node_types_->ToTypeWise(seeds[0]).first;
    for (int64_t v : seeds) {
      if (node_types_->ToTypeWise(v).first != t) {
        return absl::InvalidArgumentError(StrCat("a batch's seeds mix node types ", node_types_->name(t), " and ",
                                                 node_types_->name(node_types_->ToTypeWise(v).first),
                                                 "; labelled seeds must be of one type"));
      }
    }
    key = node_types_->name(t) + "/" + options_.label_field;
  }
  ASSIGN_OR_RETURN(core::FieldSchema f, graph_->NodeFieldSchema(key));
  std::string raw(seeds.size() * core::DTypeSize(f.dtype), '\0');
  RETURN_IF_ERROR(graph_->PullNodeRows(key, seeds, raw.data()));
  labels->resize(seeds.size());
  core::ConvertElements(f.dtype, raw.data(), seeds.size(), labels->data());
  return absl::OkStatus();
}

void DropExcluded(const std::vector<std::pair<int64_t, int64_t>>& exclude, core::SampledEdges* edges,
                  const std::vector<char>* relations) {
  // A filter of the pairs' smaller endpoints (64 Ki bits, hashed), so that the binary search
  // runs only for the few sampled edges that may be a pair: a link batch samples millions of
  // edges against a thousand or so pairs.
  constexpr uint64_t kBits = uint64_t{1} << 16;
  std::vector<uint64_t> filter(kBits / 64, 0);
  auto slot = [](int64_t x) { return core::SplitMix64(static_cast<uint64_t>(x)) & (kBits - 1); };
  for (const auto& pair : exclude) filter[slot(pair.first) / 64] |= uint64_t{1} << (slot(pair.first) % 64);
  size_t kept = 0;
  const bool typed = !edges->etype.empty();
  for (size_t e = 0; e < edges->size(); ++e) {
    const int64_t u = edges->src[e], v = edges->dst[e];
    const int64_t low = std::min(u, v);
    const bool maybe = (filter[slot(low) / 64] >> (slot(low) % 64)) & 1;
    const bool of_relation = relations == nullptr || !typed ||
                             (static_cast<size_t>(edges->etype[e]) < relations->size() && (*relations)[edges->etype[e]]);
    if (maybe && of_relation && std::binary_search(exclude.begin(), exclude.end(), std::pair{low, std::max(u, v)})) {
      continue;
    }
    edges->src[kept] = u;
    edges->dst[kept] = v;
    edges->eid[kept] = edges->eid[e];
    if (typed) edges->etype[kept] = edges->etype[e];
    ++kept;
  }
  edges->src.resize(kept);
  edges->dst.resize(kept);
  edges->eid.resize(kept);
  if (typed) edges->etype.resize(kept);
}

absl::StatusOr<Rows> MiniBatchSampler::GatherFeatures(std::span<const int64_t> input_nodes, BufferPool* pool) {
  Rows r;
  r.dtype = feature_dtype_;
  r.codec = feature_codec_;
  r.rows = static_cast<int64_t>(input_nodes.size());
  r.cols = feature_dim_;
  const size_t n = std::max<size_t>(8, r.bytes());
  std::shared_ptr<char[]> buf = pool != nullptr ? pool->Get(n) : BufferPool(0).Get(n);
  RETURN_IF_ERROR(FetchFeatures(input_nodes, buf.get()));
  r.data = buf.get();
  r.owner = std::move(buf);
  return r;
}

std::shared_ptr<const NodeSlots> IndexNodes(std::vector<int64_t> ids, int64_t num_nodes) {
  return std::make_shared<const NodeSlots>(std::move(ids), num_nodes);
}

std::span<const int64_t> MiniBatchSampler::FeatureRequest(MiniBatch* mb) {
  const Int64Array& inputs = mb->input_nodes();
  if (node_types_ != nullptr) {
    // Typed: every input node's type, and the rows of those whose type has features.
    std::vector<int32_t> types(inputs.size());
    missing_.clear();
    for (size_t i = 0; i < inputs.size(); ++i) {
      types[i] = node_types_->ToTypeWise(inputs[i]).first;
      if (!feature_keys_[types[i]].empty()) missing_.push_back(inputs[i]);
    }
    mb->input_fields.Add<int32_t>(kInputTypes) = std::move(types);
    return missing_;
  }
  if (options_.feature_field.empty()) return {inputs.data(), inputs.size()};
  // Each input's slot (-1: fetched) into mb->feature_slots, the fetched ones into missing_.
  auto leave_out = [&](auto slot_of) {
    std::vector<int64_t> slots(inputs.size());
    missing_.clear();
    for (size_t i = 0; i < inputs.size(); ++i) {
      slots[i] = slot_of(i);
      if (slots[i] < 0) missing_.push_back(inputs[i]);
    }
    mb->feature_slots = std::move(slots);
    return std::span<const int64_t>(missing_);
  };
  if (const NodeSlots* cached = options_.cached_nodes.get(); cached != nullptr) {
    return leave_out([&](size_t i) {
      if (i + 8 < inputs.size()) cached->Prefetch(inputs[i + 8]);
      return cached->Find(inputs[i]);
    });
  }
  if (machine_rows_ == nullptr) return {inputs.data(), inputs.size()};
  const core::PartitionStore* local = graph_->local_store();
  int64_t remote_hits = 0, local_hits = 0;  // rows of the halo cache, by owner
  const std::span<const int64_t> fetched = leave_out([&](size_t i) {
    const int64_t id = inputs[i], slot = machine_rows_->Slot(id);
    if (slot >= 0 && machine_rows_->InCache(slot)) {
      const bool own = local != nullptr && id >= local->node_start() && id < local->node_end();
      (own ? local_hits : remote_hits) += 1;
    }
    return slot;
  });
  graph_->CountCacheHits(remote_hits, local_hits);
  return fetched;
}

absl::StatusOr<MiniBatch> MiniBatchSampler::Sample(int64_t epoch, int64_t step, BufferPool* pool) {
  ASSIGN_OR_RETURN(MiniBatch mb, SampleBlocks(epoch, step));
  RETURN_IF_ERROR(FetchBatchFeatures(&mb, pool));
  return mb;
}

absl::Status MiniBatchSampler::FetchBatchFeatures(MiniBatch* mb, BufferPool* pool) {
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(mb->features, GatherFeatures(FeatureRequest(mb), pool));
  mb->fetch_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return absl::OkStatus();
}

}  // namespace fanout::sampler

#include "trainer/typed_input.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/zeros.h>

#include <cmath>

#include "base/status.h"
#include "base/strings.h"
#include "sampler/minibatch_sampler.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {

using base::StrCat;

absl::StatusOr<std::shared_ptr<TypedInput>> TypedInput::Make(const sampler::DistGraph& graph,
                                                             const std::string& feature_field, int64_t embed_dim,
                                                             uint64_t init_seed) {
  std::shared_ptr<TypedInput> m(new TypedInput());
  const core::TypeMap& types = graph.node_types();
  std::vector<std::string> keys(types.num_types());
  if (!feature_field.empty()) {
    absl::StatusOr<std::vector<std::string>> found = sampler::TypedFieldKeys(graph, feature_field, "feature");
    if (found.ok()) keys = std::move(*found);  // no type with features: every type is featureless
  }
  for (int t = 0; t < types.num_types(); ++t) {
    if (keys[t].empty()) {
      m->featureless_.push_back(t);
      continue;
    }
    m->featured_.push_back(t);
    ASSIGN_OR_RETURN(core::FieldSchema f, graph.NodeFieldSchema(keys[t]));
    m->feature_dim_ = f.decoded_elems();
  }
  m->project_ = embed_dim > 0;
  m->width_ = m->project_ ? embed_dim : m->feature_dim_;
  if (m->width_ < 1) {
    return absl::InvalidArgumentError(StrCat("no node type of graph '", graph.config().graph_name, "' has features '",
                                             feature_field, "': give the featureless types learnable embeddings "
                                             "(--embed-featureless DIM)"));
  }
  m->proj_weight_.resize(types.num_types());
  m->proj_bias_.resize(types.num_types());
  if (m->project_) {
    // nn.Linear's default initialisation, from our own generator.
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(init_seed ^ 0x1e97);
    const double bound = 1.0 / std::sqrt(static_cast<double>(m->feature_dim_));
    for (int t : m->featured_) {
      // Named by the type's index: LibTorch's names take no '.', which type names may hold.
      m->proj_weight_[t] = m->register_parameter(StrCat("proj", t, "_weight"),
                                                 at::empty({m->width_, m->feature_dim_}).uniform_(-bound, bound, gen));
      m->proj_bias_[t] =
          m->register_parameter(StrCat("proj", t, "_bias"), at::empty({m->width_}).uniform_(-bound, bound, gen));
    }
  }
  return m;
}

namespace {

// Consecutive input nodes of one type: [begin, end).
struct TypeRun {
  int64_t begin, end;
  int type;
};

// How a batch's input rows are built, segment by segment (see Forward).
struct Segments {
  std::vector<TypeRun> runs;             // the segments, in the order their rows are concatenated
  std::vector<int64_t> count;            // per type: its input nodes
  std::vector<bool> is_featured;         // per type
  bool by_runs = true;                   // the segments are the inputs' runs, in input order
  std::vector<std::vector<int64_t>> feature_rows;  // !by_runs, per type: the positions of its feature rows
  std::vector<int64_t> order;            // !by_runs: the input positions, type by type
};

// The segments of `mb`'s inputs: their runs of one type, or (more than `max_runs` runs) one
// segment per type. Checks each input's type and that the batch has a feature row for every
// input of a featured type.
absl::StatusOr<Segments> PlanSegments(const sampler::MiniBatch& mb, const BatchTensors& bt, int num_types,
                                      const std::vector<int>& featured, size_t max_runs) {
  const sampler::Int64Array& inputs = mb.input_nodes();
  const int64_t n = static_cast<int64_t>(inputs.size());
  // A graph with one node type carries no types: every input is of type 0.
  const sampler::Int32Array& types = mb.input_types();
  const bool typed = !types.empty();
  if (typed && static_cast<int64_t>(types.size()) != n) {
    return absl::InvalidArgumentError(
        StrCat(types.size(), " input node types for ", n, " input nodes"));
  }
  auto type_of = [&](int64_t i) { return typed ? static_cast<int>(types[i]) : 0; };
  Segments s;
  std::vector<TypeRun>& runs = s.runs;
  s.count.assign(num_types, 0);
  for (int64_t i = 0; i < n; ++i) {
    const int t = type_of(i);
    if (t < 0 || t >= num_types) return absl::InvalidArgumentError(StrCat("input node ", i, " has node type ", t));
    ++s.count[t];
    if (runs.empty() || runs.back().type != t) runs.push_back({i, i, t});
    runs.back().end = i + 1;
  }
  s.is_featured.assign(num_types, false);
  for (int t : featured) s.is_featured[t] = true;
  int64_t featured_inputs = 0;
  for (int t : featured) featured_inputs += s.count[t];
  const int64_t rows = featured.empty() || !bt.features.defined() ? 0 : bt.features.size(0);
  if (featured_inputs != rows) {
    return absl::InvalidArgumentError(StrCat("the batch has ", rows, " feature rows for ", featured_inputs,
                                             " input nodes of types with features"));
  }
  s.by_runs = runs.size() <= max_runs;
  if (!s.by_runs) {
    s.feature_rows.resize(num_types);
    std::vector<std::vector<int64_t>> positions(num_types);
    int64_t f = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int t = type_of(i);
      positions[t].push_back(i);
      if (s.is_featured[t]) s.feature_rows[t].push_back(f++);
    }
    runs.clear();
    for (int t = 0; t < num_types; ++t) {
      const int64_t first = static_cast<int64_t>(s.order.size());
      if (s.count[t] > 0) runs.push_back({first, first + s.count[t], t});
      s.order.insert(s.order.end(), positions[t].begin(), positions[t].end());
    }
  }
  return s;
}

}  // namespace

// The rows are built segment by segment, each of one type: a segment's rows are a slice of its
// type's rows (feature rows through the type's projection, looked-up embeddings, or zeros), and
// the input rows are the segments' concatenation. The sampler groups each hop's nodes by type, so
// a batch's inputs are a few runs of one type and the segments are those runs, in input order:
// no scatter of rows into place, forward or backward. Inputs in any other order (more than
// kMaxRuns runs) take one segment per type and one gather into input order.
absl::StatusOr<at::Tensor> TypedInput::Forward(const BatchTensors& bt, const sampler::MiniBatch& mb,
                                               DistEmbeddings* embeddings) {
  constexpr size_t kMaxRuns = 64;
  const sampler::Int64Array& inputs = mb.input_nodes();
  const int64_t n = static_cast<int64_t>(inputs.size());
  const int num_types = static_cast<int>(proj_weight_.size());
  ASSIGN_OR_RETURN(Segments seg, PlanSegments(mb, bt, num_types, featured_, kMaxRuns));
  const std::vector<TypeRun>& runs = seg.runs;
  const std::vector<int64_t>& count = seg.count;
  const std::vector<bool>& is_featured = seg.is_featured;
  const bool by_runs = seg.by_runs;
  const sampler::Int32Array& types = mb.input_types();
  const bool typed = !types.empty();
  auto type_of = [&](int64_t i) { return typed ? static_cast<int>(types[i]) : 0; };
  const at::Device device = bt.features.defined()   ? bt.features.device()
                            : bt.blocks.empty()     ? at::Device(at::kCPU)
                                                    : bt.blocks[0].src.device();
  // Each featureless type's learnable rows for its inputs in input order, one piece per segment
  // of that type (in one request per type; each piece its own leaf, so the backward pass hands
  // each its gradient without assembling a whole table's). The requests are sent first and the
  // featured types' projections computed while the rows are in flight (the trainer would
  // otherwise sit idle for the round trip: on setup H a third of the input layer's time).
  std::unique_ptr<DistEmbeddings::PendingLookup> lookup;
  std::vector<int> looked_up_types;
  if (embeddings != nullptr) {
    std::vector<DistEmbeddings::PieceRequest> requests;
    for (int t : featureless_) {
      if (!embeddings->has(t) || count[t] == 0) continue;
      DistEmbeddings::PieceRequest& r = requests.emplace_back();
      r.type = t;
      r.ids = at::empty({count[t]}, at::kLong);
      int64_t* out = r.ids.data_ptr<int64_t>();
      for (int64_t i = 0; i < n; ++i) {
        if (type_of(i) == t) *out++ = inputs[i];
      }
      for (const TypeRun& run : runs) {
        if (run.type == t) r.lengths.push_back(run.end - run.begin);
      }
      looked_up_types.push_back(t);
    }
    lookup = embeddings->StartLookup(std::move(requests));
  }
  // (A copy: autograd keeps an index for the backward pass, after these vectors are gone.)
  const auto index = [&](const std::vector<int64_t>& v) {
    return at::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())}, at::kLong)
        .to(device, /*non_blocking=*/false, /*copy=*/true);
  };
  // Per run: its rows (featured types' projections, or zeros), the looked-up ones filled in below.
  std::vector<at::Tensor> pieces(runs.size());
  RETURN_IF_ERROR(CatchTorch("typed input layer", [&] {
    int64_t next_feature = 0;  // by runs: the next feature row
    for (size_t j = 0; j < runs.size(); ++j) {
      const int t = runs[j].type;
      const int64_t len = runs[j].end - runs[j].begin;
      if (is_featured[t]) {
        const at::Tensor f = by_runs ? bt.features.narrow(0, next_feature, len) : bt.features.index_select(0, index(seg.feature_rows[t]));
        next_feature += len;
        pieces[j] = project_ ? at::linear(f.to(at::kFloat), proj_weight_[t], proj_bias_[t]) : f;
      }
    }
  }));
  std::vector<std::vector<at::Tensor>> looked_up(num_types);
  if (lookup != nullptr) {
    ASSIGN_OR_RETURN(std::vector<std::vector<at::Tensor>> got, embeddings->FinishLookup(std::move(lookup)));
    for (size_t i = 0; i < looked_up_types.size(); ++i) looked_up[looked_up_types[i]] = std::move(got[i]);
  }
  at::Tensor x;
  RETURN_IF_ERROR(CatchTorch("typed input layer", [&] {
    std::vector<size_t> next_piece(num_types, 0);  // per type: its next looked-up piece
    for (size_t j = 0; j < runs.size(); ++j) {
      const int t = runs[j].type;
      if (pieces[j].defined()) continue;
      if (!looked_up[t].empty()) {
        pieces[j] = looked_up[t][next_piece[t]++].to(device);
      } else {
        pieces[j] = at::zeros({runs[j].end - runs[j].begin, width_}, at::TensorOptions().dtype(at::kFloat).device(device));
      }
    }
    x = pieces.empty() ? at::zeros({0, width_}, at::TensorOptions().dtype(at::kFloat).device(device))
        : pieces.size() == 1 ? pieces[0]
                             : at::cat(pieces);
    if (!by_runs) {
      // x's rows are in `order`; put them in input order.
      std::vector<int64_t> inverse(n);
      for (int64_t j = 0; j < n; ++j) inverse[seg.order[j]] = j;
      x = x.index_select(0, index(inverse));
    }
  }));
  return x;
}

}  // namespace fanout::trainer

#include "trainer/typed_input.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/zeros.h>

#include <cmath>

#include "core/status.h"
#include "core/strings.h"
#include "sampler/minibatch_sampler.h"
#include "trainer/torch_util.h"

namespace fanout::trainer {

using core::StrCat;

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
    m->feature_dim_ = f.row_elems();
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

absl::StatusOr<at::Tensor> TypedInput::Forward(const BatchTensors& bt, const sampler::MiniBatch& mb,
                                               DistEmbeddings* embeddings) {
  const sampler::Int64Array& inputs = mb.input_nodes();
  const int64_t n = static_cast<int64_t>(inputs.size());
  // A graph with one node type carries no types: every input is of type 0.
  const at::Tensor types = bt.input_types.defined()
                               ? bt.input_types
                               : at::zeros({n}, at::TensorOptions().dtype(at::kLong).device(
                                                    bt.blocks.empty() ? at::kCPU : bt.blocks[0].src.device()));
  if (types.size(0) != n) {
    return absl::InvalidArgumentError(StrCat(types.size(0), " input node types for ", n, " input nodes"));
  }
  at::Tensor x;
  RETURN_IF_ERROR(CatchTorch("typed input layer", [&] {
    x = at::zeros({n, width_}, types.options().dtype(at::kFloat));
    // The featured inputs, in input order: the feature matrix's rows.
    at::Tensor featured = at::zeros_like(types, at::kBool);
    for (int t : featured_) featured = featured | types.eq(t);
    const at::Tensor pos = featured.nonzero().flatten();
    const int64_t rows = featured_.empty() || !bt.features.defined() ? 0 : bt.features.size(0);
    TORCH_CHECK_VALUE(pos.size(0) == rows, "the batch has ", rows, " feature rows for ", pos.size(0),
                      " input nodes of types with features");
    if (!project_) {
      if (pos.size(0) > 0) x = x.index_copy(0, pos, bt.features);
    } else {
      const at::Tensor of_pos = types.index_select(0, pos);
      for (int t : featured_) {
        const at::Tensor sel = of_pos.eq(t).nonzero().flatten();
        if (sel.size(0) == 0) continue;
        const at::Tensor rows = at::linear(bt.features.index_select(0, sel), proj_weight_[t], proj_bias_[t]);
        x = x.index_copy(0, pos.index_select(0, sel), rows);
      }
    }
  }));
  if (embeddings == nullptr) return x;
  const at::Tensor ids = at::from_blob(const_cast<int64_t*>(inputs.data()), {n}, at::kLong);
  for (int t : featureless_) {
    if (!embeddings->has(t)) continue;
    at::Tensor pos;
    RETURN_IF_ERROR(CatchTorch("typed input layer", [&] { pos = types.eq(t).nonzero().flatten(); }));
    if (pos.size(0) == 0) continue;
    ASSIGN_OR_RETURN(at::Tensor rows, embeddings->Lookup(t, ids.index_select(0, pos.to(at::kCPU))));
    RETURN_IF_ERROR(CatchTorch("typed input layer", [&] { x = x.index_copy(0, pos, rows.to(x.device())); }));
  }
  return x;
}

}  // namespace fanout::trainer

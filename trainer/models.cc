#include "trainer/models.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/elu.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "base/strings.h"
#include "trainer/dropout.h"
#include "trainer/message_passing.h"
#include "trainer/scripted_model.h"

namespace fanout::trainer {
namespace {

using base::StrCat;

// DGL initialises its conv layers with gain = nn.init.calculate_gain('relu').
const double kReluGain = std::sqrt(2.0);

// torch.nn.init.xavier_uniform_ / xavier_normal_ with explicit fans and our own generator.
at::Tensor XavierUniform(at::IntArrayRef shape, int64_t fan_in, int64_t fan_out, double gain,
                         at::Generator& gen) {
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return at::empty(shape, at::kFloat).uniform_(-bound, bound, gen);
}
at::Tensor XavierNormal(at::IntArrayRef shape, int64_t fan_in, int64_t fan_out, double gain,
                        at::Generator& gen) {
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return at::empty(shape, at::kFloat).normal_(0.0, std, gen);
}

// degree.clamp(min=1) ^ power as a column [n, 1] of x's dtype (DGL clamps degrees at 1).
at::Tensor DegreePower(const at::Tensor& degree, const at::Tensor& x, double power) {
  return degree.clamp_min(1).to(x.scalar_type()).pow(power).unsqueeze(1);
}

// Aggregate or its reference composition (ModelOptions::fused).
at::Tensor AggregateWith(bool fused, const BlockTensors& b, const at::Tensor& x, Reduce reduce,
                         const at::Tensor& edge_weight = at::Tensor()) {
  return fused ? Aggregate(b, x, reduce, edge_weight)
               : AggregateReference(b, x, reduce, edge_weight);
}

void CheckLayerInput(const BlockTensors& b, const at::Tensor& h, int64_t in_dim,
                     const char* layer) {
  TORCH_CHECK_VALUE(h.dim() == 2 && h.size(0) == b.num_src && h.size(1) == in_dim, layer,
                    ": input is ", h.sizes(), ", expected [", b.num_src, " source nodes, ", in_dim,
                    "]");
  TORCH_CHECK_VALUE(b.num_dst <= b.num_src && b.indptr.defined() && b.src.defined() &&
                        b.dst.defined() && b.in_degree.defined() &&
                        b.in_degree.size(0) == b.num_dst,
                    layer, ": malformed block (build blocks with ToTensors)");
}

// b.in_degree and b.indptr from b.dst (non-decreasing) and b.num_dst: a block made of a subset
// of another's edges.
void SetInDegreeAndIndptr(BlockTensors* b) {
  b->in_degree = at::bincount(b->dst, /*weights=*/{}, b->num_dst);
  b->indptr = at::cat({at::zeros({1}, b->in_degree.options()), b->in_degree.cumsum(0)});
}

// The tensors joined along dim 0, without a copy when there is one (non-empty list).
at::Tensor Cat(const std::vector<at::Tensor>& parts) { return parts.size() == 1 ? parts[0] : at::cat(parts); }

// x's rows at each index list, gathered in one index_select and split per list: its backward
// scatters into one zero-filled gradient of x, not one per list to be summed.
std::vector<at::Tensor> GatherSplit(const at::Tensor& x, const std::vector<at::Tensor>& index) {
  std::vector<int64_t> counts;
  for (const at::Tensor& i : index) counts.push_back(i.size(0));
  return x.index_select(0, Cat(index)).split_with_sizes(counts);
}

// The sources `src` (indices below num_src) use, ascending, and each entry of `src` renumbered as
// its position among them: a mark per source, the marked ones listed, each renumbered by the
// marks before it (no sort).
struct CompactSources {
  at::Tensor used, renumbered;
};
CompactSources Compact(const at::Tensor& src, int64_t num_src) {
  const at::Tensor marked = at::zeros({num_src}, src.options()).index_fill_(0, src, 1);
  return {marked.nonzero().flatten(), (marked.cumsum(0) - 1).index_select(0, src)};
}

// DGL SAGEConv(aggregator_type='mean'):
//   out = fc_self(h_dst) + fc_neigh(mean_{(u,v) in block} w_uv h_u) + bias, the mean 0 without
//   edges, w_uv the block's edge weight (1 without).
// Parameters, in order: fc_self [out, in], fc_neigh [out, in], bias [out].
class SageConv : public torch::nn::Module {
 public:
  SageConv(int64_t in, int64_t out, bool fused, at::Generator& gen)
      : in_(in), out_(out), fused_(fused) {
    fc_self_ = register_parameter("fc_self", XavierUniform({out, in}, in, out, kReluGain, gen));
    fc_neigh_ = register_parameter("fc_neigh", XavierUniform({out, in}, in, out, kReluGain, gen));
    bias_ = register_parameter("bias", at::zeros({out}));
  }

  // `h` by value: handed the last reference (GnnModel::Infer), the layer lets go of its input
  // once [h_dst | mean] is built, before the product allocates the output (autograd keeps what
  // backward needs on its own).
  at::Tensor Forward(const BlockTensors& b, at::Tensor h) {
    CheckLayerInput(b, h, in_, "sage layer");
    if (ProjectBeforeAggregating(b, in_, out_)) {
      const at::Tensor neigh = AggregateWith(fused_, b, at::linear(h, fc_neigh_), Reduce::kMean, b.edge_weight());
      return at::addmm(bias_, h.narrow(0, 0, b.num_dst), fc_self_.t()) + neigh;
    }
    at::Tensor both;
    if (b.edge_weight().defined()) {
      both = at::cat({h.narrow(0, 0, b.num_dst), AggregateWith(fused_, b, h, Reduce::kMean, b.edge_weight())}, 1);
    } else {
      // Otherwise fc_self and fc_neigh as one product over [h_dst | mean of neighbours]: one pass
      // over the output instead of two products and two sums, and a deeper inner dimension,
      // which the GEMM runs faster.
      both = fused_ ? AggregateWithSelf(b, h, Reduce::kMean)
                    : at::cat({h.narrow(0, 0, b.num_dst), AggregateReference(b, h, Reduce::kMean)}, 1);
    }
    h.reset();
    return at::addmm(bias_, both, at::cat({fc_self_, fc_neigh_}, 1).t());
  }

 private:
  int64_t in_, out_;
  bool fused_;
  at::Tensor fc_self_, fc_neigh_, bias_;
};

// R-GCN's layer on a typed block (one block, every relation; Schlichtkrull et al., as DGL's
// RelGraphConv with a self loop, with per-relation SAGE-style means as the imdb reference
// computes with HeteroGraphConv({rel: SAGEConv('mean')}, aggregate='sum')):
//   out_v = fc_self h_v + sum_r fc_rel[r] (mean_{(u,v) of relation r} w_uv h_u) + bias,
// a relation's mean 0 where v has no edge of it.
// Parameters, in order: fc_self [out, in], fc_rel [out, R * in] (relation r's weight is
// columns r * in ... (r + 1) * in - 1), bias [out]. A block without edge types (the one-type
// graph) is relation 0 of 1.
//
// A node type is the destination of only some relations (on ogbn-mag a paper of 4 of 8, an
// author of 2), so the layer works run by run over the block's destinations of one type
// (BlockTensors::dst_runs; the sampler groups each hop's nodes by type): a run's means are over
// its (destination, relation) pairs for the k relations its edges use (one aggregation computes
// every run's), and its output is fc_self h_v plus one product of [mean_1 | ... | mean_k] with
// those k relations' weights, as DGL's HeteroGraphConv computes only the relations a type
// receives. One run over all R relations costs R / k times the means and
// products a type of k relations needs (on the mag-shaped graph 2x for papers, 4x for authors;
// docs/benchmarks.md).
class RelSageConv : public torch::nn::Module {
 public:
  RelSageConv(int64_t in, int64_t out, int64_t relations, bool fused, at::Generator& gen)
      : in_(in), out_(out), relations_(relations), fused_(fused) {
    fc_self_ = register_parameter("fc_self", XavierUniform({out, in}, in, out, kReluGain, gen));
    std::vector<at::Tensor> rel;
    for (int64_t r = 0; r < relations; ++r) rel.push_back(XavierUniform({out, in}, in, out, kReluGain, gen));
    fc_rel_ = register_parameter("fc_rel", at::cat(rel, 1));
    bias_ = register_parameter("bias", at::zeros({out}));
  }

  at::Tensor Forward(const BlockTensors& b, const at::Tensor& h) {
    CheckLayerInput(b, h, in_, "rgcn layer");
    TORCH_CHECK_VALUE(b.etype().defined() || relations_ == 1, "rgcn layer: a block without edge types on a model of ",
                      relations_, " relations");
    std::vector<BlockTensors::DstRun> runs = b.dst_runs;
    if (runs.empty() || static_cast<int64_t>(runs.size()) > kMaxRuns) runs = {OneRun(b)};
    // Every run's means come from one aggregation over the (destination, relation) slots of all
    // runs, numbered run after run: run j's n * k slots start at slot_begin[j], and its edge e
    // goes to slot slot_begin[j] + (dst[e] - begin) * k + (the index of etype[e] among the run's
    // relations). The sampler lists a destination's edges relation by relation, so the slots
    // still form a CSC (non-decreasing along the edges) and the fused mean kernel runs on it
    // without per-edge messages; a block whose edges are not in that order takes the reference
    // composition. One aggregation rather than one per run: its backward fills and sums one
    // gradient for h, where a run each filled and added a full-size one (on setup H's batches,
    // a fifth of the layer's time).
    std::vector<int64_t> slot_begin(runs.size(), 0);
    std::vector<at::Tensor> srcs, slots, weights;
    int64_t num_slots = 0;
    for (size_t j = 0; j < runs.size(); ++j) {
      const BlockTensors::DstRun& run = runs[j];
      const int64_t n = run.end - run.begin, k = static_cast<int64_t>(run.relations.size());
      slot_begin[j] = num_slots;
      if (k == 0) continue;
      num_slots += n * k;  // a run's slots exist even without edges: their means are 0
      const int64_t ne = run.edge_end - run.edge_begin;
      if (ne == 0) continue;
      at::Tensor slot = (b.dst.narrow(0, run.edge_begin, ne) - run.begin) * k;
      if (b.etype().defined()) {
        // relation -> its index among the run's relations
        const at::Tensor rels = at::tensor(run.relations, b.dst.options().device(at::kCPU)).to(b.dst.device());
        const at::Tensor local =
            at::zeros({relations_}, rels.options()).index_put_({rels}, at::arange(k, rels.options()));
        slot = slot + local.index_select(0, b.etype().narrow(0, run.edge_begin, ne));
      }
      srcs.push_back(b.src.narrow(0, run.edge_begin, ne));
      slots.push_back(slot + slot_begin[j]);
      if (b.edge_weight().defined()) weights.push_back(b.edge_weight().narrow(0, run.edge_begin, ne));
    }
    at::Tensor means;  // [num_slots, in]
    at::Tensor h_dst;  // h's destination rows, for fc_self (with the means where one node can give both)
    if (num_slots > 0) {
      BlockTensors all;
      all.num_src = b.num_src;
      all.num_dst = num_slots;
      all.src = srcs.empty() ? b.src.narrow(0, 0, 0) : Cat(srcs);
      all.dst = srcs.empty() ? b.dst.narrow(0, 0, 0) : Cat(slots);
      SetInDegreeAndIndptr(&all);
      const int64_t ne = all.dst.size(0);
      const bool ordered =
          ne < 2 || all.dst.narrow(0, 1, ne - 1).ge(all.dst.narrow(0, 0, ne - 1)).all().item<bool>();
      const at::Tensor weight =
          weights.empty() ? at::Tensor() : Cat(weights);
      if (fused_ && ordered && !weight.defined()) {
        std::tie(means, h_dst) = AggregateAndHead(all, h, Reduce::kMean, b.num_dst);
      } else {
        means = AggregateWith(fused_ && ordered, all, h, Reduce::kMean, weight);
      }
    }
    if (!h_dst.defined()) h_dst = h.narrow(0, 0, b.num_dst);
    // fc_self on every destination in one product, plus per run its k relations' weights on its
    // means (no [h_v | means] copy; h's gradient is assembled once, not once per run).
    const at::Tensor self = at::addmm(bias_, h_dst, fc_self_.t());
    const at::Tensor per_relation = fc_rel_.view({out_, relations_, in_});
    // The runs' means by split rather than a narrow each: split's backward joins the runs'
    // gradients in one copy, where each narrow filled a zero gradient the size of all the means
    // and the runs' were added up (setup H: 5 % of a step).
    std::vector<int64_t> run_slots(runs.size());
    for (size_t j = 0; j < runs.size(); ++j) {
      run_slots[j] = (j + 1 < runs.size() ? slot_begin[j + 1] : num_slots) - slot_begin[j];
    }
    const std::vector<at::Tensor> run_means =
        means.defined() ? means.split_with_sizes(run_slots) : std::vector<at::Tensor>();
    std::vector<at::Tensor> parts;
    for (size_t j = 0; j < runs.size(); ++j) {
      const BlockTensors::DstRun& run = runs[j];
      const int64_t n = run.end - run.begin, k = static_cast<int64_t>(run.relations.size());
      if (k == 0) {
        parts.push_back(at::zeros({n, out_}, self.options()));
        continue;
      }
      const at::Tensor w =
          k == relations_
              ? fc_rel_
              : per_relation.index_select(1, at::tensor(run.relations, at::TensorOptions().dtype(at::kLong))
                                                 .to(h.device()))
                    .reshape({out_, k * in_});
      parts.push_back(at::mm(run_means[j].view({n, k * in_}), w.t()));
    }
    return self + Cat(parts);
  }

 private:
  // More runs than this (a block whose destinations were not grouped by type) take one run over
  // every relation instead of many small products.
  static constexpr int64_t kMaxRuns = 64;

  BlockTensors::DstRun OneRun(const BlockTensors& b) const {
    BlockTensors::DstRun run;
    run.end = b.num_dst;
    run.edge_end = b.num_edges();
    for (int64_t r = 0; r < relations_; ++r) run.relations.push_back(r);
    return run;
  }

  int64_t in_, out_, relations_;
  bool fused_;
  at::Tensor fc_self_, fc_rel_, bias_;
};

// DGL GraphConv(norm='both', weight=True, bias=True, allow_zero_in_degree=True) on a block:
//   out_v = bias + W (d_in(v)^-1/2 * sum_{(u,v)} w_uv d_out(u)^-1/2 h_u)
// (w_uv the block's edge weight, 1 without; the degrees count edges, not weights, as DGL's)
// where d_out(u) counts u's edges in this block (as a source; BlockTensors::out_degree instead
// when set) and d_in(v) v's edges in this block (as a destination), both clamped to >= 1. Parameters: weight [out, in], bias [out].
class GcnConv : public torch::nn::Module {
 public:
  GcnConv(int64_t in, int64_t out, bool fused, at::Generator& gen)
      : in_(in), out_(out), fused_(fused) {
    weight_ = register_parameter("weight", XavierUniform({out, in}, in, out, 1.0, gen));
    bias_ = register_parameter("bias", at::zeros({out}));
  }

  at::Tensor Forward(const BlockTensors& b, const at::Tensor& h) {
    CheckLayerInput(b, h, in_, "gcn layer");
    const at::Tensor out_degree = b.out_degree.defined() ? b.out_degree : at::bincount(b.src, /*weights=*/{}, b.num_src);
    at::Tensor feat = h * DegreePower(out_degree, h, -0.5);
    const bool project_first = ProjectBeforeAggregating(b, in_, out_);
    if (project_first) feat = at::linear(feat, weight_);
    at::Tensor agg = AggregateWith(fused_, b, feat, Reduce::kSum, b.edge_weight());
    if (!project_first) agg = at::linear(agg, weight_);
    return agg * DegreePower(b.in_degree, agg, -0.5) + bias_;
  }

 private:
  int64_t in_, out_;
  bool fused_;
  at::Tensor weight_, bias_;
};

// DGL GATConv(in, out, heads, feat_drop=p, attn_drop=p, negative_slope=0.2, residual=False,
// allow_zero_in_degree=True, bias=True). Returns [num_dst, heads, out]:
//   z = fc(dropout(h)) viewed [n, heads, out]
//   e_uv = LeakyReLU_0.2(<z_u, attn_l> + <z_v, attn_r>)         (per head)
//   a_uv = dropout(softmax of e over v's in-edges) * w_uv     (w the block's edge weight, 1 without)
//   out_v = sum_{(u,v)} a_uv z_u + bias                          (0 + bias without in-edges)
// Parameters: fc [heads*out, in], attn_l [heads, out], attn_r [heads, out], bias [heads*out].
class GatConv : public torch::nn::Module {
 public:
  GatConv(int64_t in, int64_t out, int64_t heads, double dropout, bool fused, at::Generator& gen)
      : in_(in), out_(out), heads_(heads), dropout_(dropout), fused_(fused) {
    fc_ =
        register_parameter("fc", XavierNormal({heads * out, in}, in, heads * out, kReluGain, gen));
    // DGL's attn_l/attn_r are [1, heads, out]; xavier fans of that shape.
    attn_l_ =
        register_parameter("attn_l", XavierNormal({heads, out}, heads * out, out, kReluGain, gen));
    attn_r_ =
        register_parameter("attn_r", XavierNormal({heads, out}, heads * out, out, kReluGain, gen));
    bias_ = register_parameter("bias", at::zeros({heads * out}));
  }

  at::Tensor Forward(const BlockTensors& b, const at::Tensor& h) {
    CheckLayerInput(b, h, in_, "gat layer");
    const at::Tensor x = Dropout(h, dropout_, is_training());
    const at::Tensor z = at::linear(x, fc_).view({b.num_src, heads_, out_});
    // <z_u, attn_l> = x_u . (fc^T attn_l) per head: projecting the attention vectors through fc
    // once costs [heads, in] instead of a pass over every z.
    const at::Tensor fc = fc_.view({heads_, out_, in_});
    const at::Tensor el = at::linear(x, (fc * attn_l_.unsqueeze(-1)).sum(1));  // [S, H]
    const at::Tensor er =
        at::linear(x.narrow(0, 0, b.num_dst), (fc * attn_r_.unsqueeze(-1)).sum(1));  // [D, H]
    const at::Tensor softmax = fused_ ? EdgeSoftmax(b, el, er, /*negative_slope=*/0.2)
                                      : EdgeSoftmaxReference(b, el, er, /*negative_slope=*/0.2);
    at::Tensor attention = Dropout(softmax, dropout_, is_training());
    if (b.edge_weight().defined()) attention = attention * b.edge_weight().unsqueeze(1);
    return AggregateWith(fused_, b, z, Reduce::kSum, attention) + bias_.view({1, heads_, out_});
  }

 private:
  int64_t in_, out_, heads_;
  double dropout_;
  bool fused_;
  at::Tensor fc_, attn_l_, attn_r_, bias_;
};

// R-GAT's layer on a typed block: a GAT per relation (GatConv's attention, softmax over a
// destination's in-edges of that relation only), relations summed, plus a projection of the
// destination itself (the skip of DGL's MAG240M R-GAT, which R-GCN's fc_self is too), as DGL's
// HeteroGraphConv({rel: GATConv}, aggregate='sum') with a self term. Returns [num_dst, heads, out]:
//   x = dropout(h);  z^r = fc[r] x viewed [n, heads, out]
//   a^r_uv = dropout(softmax over v's relation-r in-edges of LeakyReLU_0.2(<z^r_u, attn_l[r]> + <z^r_v, attn_r[r]>)) * w_uv
//   out_v = fc_self x_v + sum_r sum_{(u,v) of relation r} a^r_uv z^r_u + bias
// Parameters, in order: fc_self [heads*out, in], fc [R*heads*out, in] (relation r's rows
// r*heads*out ... (r+1)*heads*out - 1), attn_l [R*heads, out], attn_r [R*heads, out], bias
// [heads*out]. A block without edge types (the one-type graph) is relation 0 of 1.
//
// Each relation projects only the sources its edges use (a source of a typed batch is the tail of
// some relations, not all), so the products cost what DGL's per-relation GATConvs cost on their
// own subgraphs; attention and aggregation run on fanout's fused kernels per relation.
class RelGatConv : public torch::nn::Module {
 public:
  RelGatConv(int64_t in, int64_t out, int64_t heads, int64_t relations, double dropout, bool fused, at::Generator& gen)
      : in_(in), out_(out), heads_(heads), relations_(relations), dropout_(dropout), fused_(fused) {
    fc_self_ = register_parameter("fc_self", XavierNormal({heads * out, in}, in, heads * out, kReluGain, gen));
    std::vector<at::Tensor> fc, attn_l, attn_r;
    for (int64_t r = 0; r < relations; ++r) {  // relation by relation, as GatConv initialises one
      fc.push_back(XavierNormal({heads * out, in}, in, heads * out, kReluGain, gen));
      attn_l.push_back(XavierNormal({heads, out}, heads * out, out, kReluGain, gen));
      attn_r.push_back(XavierNormal({heads, out}, heads * out, out, kReluGain, gen));
    }
    fc_ = register_parameter("fc", at::cat(fc));
    attn_l_ = register_parameter("attn_l", at::cat(attn_l));
    attn_r_ = register_parameter("attn_r", at::cat(attn_r));
    bias_ = register_parameter("bias", at::zeros({heads * out}));
  }

  at::Tensor Forward(const BlockTensors& b, const at::Tensor& h) {
    CheckLayerInput(b, h, in_, "rgat layer");
    TORCH_CHECK_VALUE(b.etype().defined() || relations_ == 1, "rgat layer: a block without edge types on a model of ",
                      relations_, " relations");
    const at::Tensor x = Dropout(h, dropout_, is_training());
    const at::Tensor x_dst = x.narrow(0, 0, b.num_dst);
    at::Tensor out = at::addmm(bias_, x_dst, fc_self_.t()).view({b.num_dst, heads_, out_});
    const at::Tensor fc = fc_.view({relations_, heads_, out_, in_});
    // Each relation's block over its own sources, numbered compactly; the relations' source rows
    // then come from x in one gather (GatherSplit).
    struct Part {
      int64_t r;
      BlockTensors rb;
      at::Tensor weight;
    };
    std::vector<Part> parts;
    std::vector<at::Tensor> used;
    for (int64_t r = 0; r < relations_; ++r) {
      Part p{r, {}, {}};
      if (b.etype().defined()) {
        const at::Tensor edges = b.etype().eq(r).nonzero().flatten();
        if (edges.size(0) == 0) continue;
        const CompactSources sources = Compact(b.src.index_select(0, edges), b.num_src);
        p.rb.src = sources.renumbered;
        p.rb.dst = b.dst.index_select(0, edges);
        p.rb.num_src = sources.used.size(0);
        p.rb.num_dst = b.num_dst;
        SetInDegreeAndIndptr(&p.rb);
        if (b.edge_weight().defined()) p.weight = b.edge_weight().index_select(0, edges);
        used.push_back(sources.used);
      } else {
        p.rb = b;
        p.weight = b.edge_weight();
      }
      parts.push_back(std::move(p));
    }
    std::vector<at::Tensor> x_used;
    if (!used.empty()) x_used = GatherSplit(x, used);
    for (size_t i = 0; i < parts.size(); ++i) {
      const int64_t r = parts[i].r;
      const BlockTensors& rb = parts[i].rb;
      const at::Tensor& weight = parts[i].weight;
      const at::Tensor x_src = b.etype().defined() ? x_used[i] : x;
      const at::Tensor w = fc[r];  // [heads, out, in]
      const at::Tensor z = at::linear(x_src, w.reshape({heads_ * out_, in_})).view({rb.num_src, heads_, out_});
      // <z_u, attn_l> = x_u . (w^T attn_l) per head, as GatConv computes it.
      const at::Tensor el = at::linear(x_src, (w * attn_l_.narrow(0, r * heads_, heads_).unsqueeze(-1)).sum(1));
      const at::Tensor er = at::linear(x_dst, (w * attn_r_.narrow(0, r * heads_, heads_).unsqueeze(-1)).sum(1));
      const at::Tensor softmax = fused_ ? EdgeSoftmax(rb, el, er, /*negative_slope=*/0.2)
                                        : EdgeSoftmaxReference(rb, el, er, /*negative_slope=*/0.2);
      at::Tensor attention = Dropout(softmax, dropout_, is_training());
      if (weight.defined()) attention = attention * weight.unsqueeze(1);
      out = out + AggregateWith(fused_, rb, z, Reduce::kSum, attention);
    }
    return out;
  }

 private:
  int64_t in_, out_, heads_, relations_;
  double dropout_;
  bool fused_;
  at::Tensor fc_self_, fc_, attn_l_, attn_r_, bias_;
};

// HGT's layer (Hu et al. 2020, as PyG's HGTConv) on a typed block, width F = heads * d:
//   k, q, v = kqv[type(n)] h_n + kqv_bias[type(n)]          (per node type; each [heads, d])
//   for edge e = (u, v) of relation r:  k_e = k_u W_att[r],  m_e = v_u W_msg[r]    (per head)
//   a_e = softmax over all of v's in-edges of <q_v, k_e> * p_rel[r] / sqrt(d)       (per head)
//   out_v = out[type(v)] GELU(sum_e a_e m_e) + out_bias[type(v)]
//   then, where the input has width F: s = sigmoid(skip[type(v)]), out_v = s out_v + (1 - s) h_v
// with dropout on out_v before the skip (DGL's HGTConv). Parameters, in order: kqv
// [T * 3F, in] (type t's rows t * 3F ..., k then q then v), kqv_bias [T * 3F], k_rel and v_rel
// [R * heads, d, d] (relation r, head h at r * heads + h), p_rel [R, heads], out [T * F, F],
// out_bias [T * F], skip [T] (where in == F). A block without types is one node type and one
// relation.
//
// Each relation transforms only the sources its edges use (as R-GAT projects them); the softmax
// and the weighted sum run on fanout's fused kernels: the softmax over per-edge scores is the
// attention kernel with one source per edge and a slope of 1.
class HgtConv : public torch::nn::Module {
 public:
  HgtConv(int64_t in, int64_t width, int64_t heads, int64_t node_types, int64_t relations, double dropout, bool fused,
          at::Generator& gen)
      : in_(in), width_(width), heads_(heads), d_(width / heads), types_(node_types), relations_(relations),
        dropout_(dropout), fused_(fused) {
    TORCH_CHECK_VALUE(width % heads == 0, "hgt layer: width ", width, " is not a multiple of ", heads, " heads");
    std::vector<at::Tensor> kqv, out, k_rel, v_rel;
    for (int64_t t = 0; t < node_types; ++t) {
      kqv.push_back(XavierUniform({3 * width, in}, in, width, 1.0, gen));
      out.push_back(XavierUniform({width, width}, width, width, 1.0, gen));
    }
    for (int64_t i = 0; i < relations * heads; ++i) {
      k_rel.push_back(XavierUniform({1, d_, d_}, d_, d_, 1.0, gen));
      v_rel.push_back(XavierUniform({1, d_, d_}, d_, d_, 1.0, gen));
    }
    kqv_ = register_parameter("kqv", at::cat(kqv));
    kqv_bias_ = register_parameter("kqv_bias", at::zeros({node_types * 3 * width}));
    k_rel_ = register_parameter("k_rel", at::cat(k_rel));
    v_rel_ = register_parameter("v_rel", at::cat(v_rel));
    p_rel_ = register_parameter("p_rel", at::ones({relations, heads}));
    out_ = register_parameter("out", at::cat(out));
    out_bias_ = register_parameter("out_bias", at::zeros({node_types * width}));
    if (in == width) skip_ = register_parameter("skip", at::ones({node_types}));  // only used then
  }

  at::Tensor Forward(const BlockTensors& b, const at::Tensor& h) {
    CheckLayerInput(b, h, in_, "hgt layer");
    TORCH_CHECK_VALUE((b.etype().defined() || relations_ == 1) && (b.src_type.defined() || types_ == 1),
                      "hgt layer: a block without node or edge types on a model of ", types_, " node types and ",
                      relations_, " relations");
    const int64_t f = width_;
    // k, q, v of every source, type by type.
    const at::Tensor kqv = ByType(b, h, b.num_src, kqv_.view({types_, 3 * f, in_}), kqv_bias_.view({types_, 3 * f}));
    // (split rather than three narrows: backward joins the three gradients in one copy, where each
    // narrow would fill a zero gradient the size of kqv and the three be added up.)
    const std::vector<at::Tensor> kqv_parts = kqv.split(f, 1);
    const at::Tensor k = kqv_parts[0].reshape({b.num_src, heads_, d_});
    const at::Tensor q = kqv_parts[1].narrow(0, 0, b.num_dst).reshape({b.num_dst, heads_, d_});
    const at::Tensor v = kqv_parts[2].reshape({b.num_src, heads_, d_});
    // Each edge's relation prior (index_select also refuses a relation the model lacks, before an
    // edge of it could be left out of edge_src below).
    const at::Tensor edge_prior =
        b.etype().defined() ? p_rel_.index_select(0, b.etype()) : p_rel_[0].expand({b.num_edges(), heads_});
    // Per relation, its sources' keys and messages; every edge's key then indexes that list. The
    // relations' sources are gathered from k and v in one gather each (GatherSplit).
    std::vector<at::Tensor> used;
    std::vector<int64_t> rels;
    at::Tensor edge_src = b.etype().defined() ? at::empty_like(b.src) : at::Tensor();
    int64_t offset = 0;
    for (int64_t r = 0; r < relations_; ++r) {
      at::Tensor edges;
      if (b.etype().defined()) {
        edges = b.etype().eq(r).nonzero().flatten();
        if (edges.size(0) == 0) continue;
      }
      const CompactSources sources = Compact(edges.defined() ? b.src.index_select(0, edges) : b.src, b.num_src);
      const at::Tensor renumbered = sources.renumbered + offset;
      offset += sources.used.size(0);
      edge_src = edges.defined() ? edge_src.index_copy_(0, edges, renumbered) : renumbered;
      used.push_back(sources.used);
      rels.push_back(r);
    }
    at::Tensor agg;
    if (used.empty()) {
      agg = at::zeros({b.num_dst, f}, h.options());
    } else {
      const std::vector<at::Tensor> k_used = GatherSplit(k, used), v_used = GatherSplit(v, used);
      std::vector<at::Tensor> keys, messages;
      for (size_t i = 0; i < rels.size(); ++i) {
        // [n, heads, d] x [heads, d, d] per head.
        keys.push_back(at::einsum("nhd,hde->nhe", {k_used[i], k_rel_.narrow(0, rels[i] * heads_, heads_)}));
        messages.push_back(at::einsum("nhd,hde->nhe", {v_used[i], v_rel_.narrow(0, rels[i] * heads_, heads_)}));
      }
      const at::Tensor key = Cat(keys);
      const at::Tensor message = Cat(messages);
      BlockTensors expanded = b;  // every edge's source is its key and message row
      expanded.src = edge_src;
      expanded.num_src = message.size(0);
      // <q_v, key_e> per edge and head, without per-edge [E, heads, d] tensors (fused on the CPU).
      const at::Tensor dot = fused_ ? EdgeDot(expanded, key, q) : EdgeDotReference(expanded, key, q);
      const at::Tensor score = dot * edge_prior / std::sqrt(static_cast<double>(d_));  // [E, heads]
      // Softmax over each destination's in-edges of the scores: the attention kernel on a block
      // whose every edge has its own source, with el the scores, er 0 and LeakyReLU's slope 1.
      BlockTensors per_edge = b;
      per_edge.src = at::arange(b.num_edges(), b.src.options());
      per_edge.num_src = b.num_edges();
      const at::Tensor zero = at::zeros({b.num_dst, heads_}, h.options());
      const at::Tensor attention =
          fused_ ? EdgeSoftmax(per_edge, score, zero, 1.0) : EdgeSoftmaxReference(per_edge, score, zero, 1.0);
      agg = AggregateWith(fused_, expanded, message, Reduce::kSum, attention).view({b.num_dst, f});
    }
    at::Tensor out = ByType(b, at::gelu(agg), b.num_dst, out_.view({types_, f, f}), out_bias_.view({types_, f}));
    out = Dropout(out, dropout_, is_training());
    if (in_ == f) {
      const at::Tensor gate =
          (b.src_type.defined() ? skip_.index_select(0, b.src_type.narrow(0, 0, b.num_dst)) : skip_.expand({b.num_dst}))
              .sigmoid()
              .unsqueeze(1);
      out = gate * out + (1 - gate) * h.narrow(0, 0, b.num_dst);
    }
    return out;
  }

 private:
  // Row n of x (n < rows, x's first `rows` rows) times weight[type(n)]^T plus bias[type(n)]:
  // one product per node type over its rows.
  at::Tensor ByType(const BlockTensors& b, const at::Tensor& x, int64_t rows, const at::Tensor& weight,
                    const at::Tensor& bias) const {
    if (!b.src_type.defined()) return at::addmm(bias[0], x.narrow(0, 0, rows), weight[0].t());
    const at::Tensor types = b.src_type.narrow(0, 0, rows);
    // The sampler groups each hop's nodes by type, so the rows are a few runs of one type: one
    // product per run over a split of x (its backward joins the runs' gradients in one copy),
    // where gathering each type's rows and scattering them back fills and sums a zero gradient
    // per type. Rows in any other order (many runs) take the gather.
    if (types.device().is_cpu() && rows > 0) {
      const at::Tensor t = types.contiguous();
      const int64_t* tp = t.data_ptr<int64_t>();
      std::vector<int64_t> lengths, run_types;
      for (int64_t i = 0; i < rows; ++i) {
        if (i == 0 || tp[i] != tp[i - 1]) {
          if (static_cast<int64_t>(lengths.size()) == kMaxTypeRuns) break;
          lengths.push_back(0);
          run_types.push_back(tp[i]);
        }
        ++lengths.back();
      }
      int64_t covered = 0;
      for (int64_t n : lengths) covered += n;
      if (covered == rows) {
        const std::vector<at::Tensor> parts = x.narrow(0, 0, rows).split_with_sizes(lengths);
        std::vector<at::Tensor> outs;
        for (size_t j = 0; j < parts.size(); ++j) {
          TORCH_CHECK_VALUE(run_types[j] >= 0 && run_types[j] < types_, "hgt layer: node type ", run_types[j],
                            " of a model of ", types_, " node types");
          outs.push_back(at::addmm(bias[run_types[j]], parts[j], weight[run_types[j]].t()));
        }
        return Cat(outs);
      }
    }
    at::Tensor out = at::empty({rows, weight.size(1)}, x.options());
    for (int64_t t = 0; t < types_; ++t) {
      const at::Tensor idx = types.eq(t).nonzero().flatten();
      if (idx.size(0) == 0) continue;
      out.index_copy_(0, idx, at::addmm(bias[t], x.index_select(0, idx), weight[t].t()));
    }
    return out;
  }

  static constexpr int64_t kMaxTypeRuns = 64;

  int64_t in_, width_, heads_, d_, types_, relations_;
  double dropout_;
  bool fused_;
  at::Tensor kqv_, kqv_bias_, k_rel_, v_rel_, p_rel_, out_, out_bias_, skip_;
};

void CheckModelInput(const ModelOptions& o, const std::vector<BlockTensors>& blocks,
                     const at::Tensor& x) {
  TORCH_CHECK_VALUE(static_cast<int64_t>(blocks.size()) == o.num_layers, "model has ", o.num_layers,
                    " layers but the mini-batch has ", blocks.size(), " blocks");
  TORCH_CHECK_VALUE(x.dim() == 2 && x.size(0) == blocks.front().num_src && x.size(1) == o.in_dim,
                    "features are ", x.sizes(), ", expected [", blocks.front().num_src,
                    " input nodes, ", o.in_dim, "]");
}

// "layer3.fc_self" -> "layers.3.fc_self.weight": the names of python/fanout's models.GNN (an
// nn.ModuleList `layers` whose projections are nn.Linear), which can load the state dict.
std::string BuiltInPublicName(const std::string& name) {
  constexpr std::string_view kPrefix = "layer";
  if (name.rfind(kPrefix, 0) != 0) return name;
  const size_t dot = name.find('.');
  if (dot == std::string::npos) return name;
  std::string param = name.substr(dot + 1);
  if (param == "fc_self" || param == "fc_neigh" || param == "fc" || param == "fc_rel") param += ".weight";
  return StrCat("layers.", name.substr(kPrefix.size(), dot - kPrefix.size()), ".", param);
}

// A built-in model: Forward is ForwardLayer chained over the blocks (ForwardLayerTaking: the
// same, handed the last reference when the caller gave it up), and the tensors have
// python/fanout's names.
class BuiltInModel : public GnnModel {
 public:
  using GnnModel::GnnModel;

  // The caller keeps its reference to x, so no layer can let go of it early: Infer's result.
  at::Tensor Forward(const std::vector<BlockTensors>& blocks, const at::Tensor& x) final { return Infer(blocks, x); }
  at::Tensor Infer(const std::vector<BlockTensors>& blocks, at::Tensor x) final {
    CheckModelInput(options(), blocks, x);
    at::Tensor h = std::move(x);
    for (size_t l = 0; l < blocks.size(); ++l) h = ForwardLayerTaking(static_cast<int64_t>(l), blocks[l], std::move(h));
    return h;
  }

 protected:
  // ForwardLayer, handed the last reference to h: a layer may let go of it once it is read.
  virtual at::Tensor ForwardLayerTaking(int64_t l, const BlockTensors& block, at::Tensor h) {
    return ForwardLayer(l, block, h);
  }
  std::string PublicName(const std::string& name) const final { return BuiltInPublicName(name); }
};

// GraphSAGE, GCN and R-GCN as DGL's examples: conv, then ReLU and dropout between layers (not
// after the last).
// A layer of `Conv` from in to out, with what else it takes from the options.
template <typename Conv>
std::shared_ptr<Conv> MakeConv(const ModelOptions& o, int64_t in, int64_t out, at::Generator& gen) {
  return std::make_shared<Conv>(in, out, o.fused, gen);
}
template <>
std::shared_ptr<RelSageConv> MakeConv<RelSageConv>(const ModelOptions& o, int64_t in, int64_t out, at::Generator& gen) {
  return std::make_shared<RelSageConv>(in, out, o.num_relations, o.fused, gen);
}

template <typename Conv>
class ReluStackModel final : public BuiltInModel {
 public:
  ReluStackModel(const ModelOptions& o, at::Generator& gen) : BuiltInModel(o) {
    for (int64_t l = 0; l < o.num_layers; ++l) {
      layers_.push_back(register_module(StrCat("layer", l), MakeConv<Conv>(o, LayerIn(o, l, 1), LayerOut(o, l), gen)));
    }
  }

  at::Tensor ForwardLayer(int64_t l, const BlockTensors& block, const at::Tensor& h) override {
    return Layer(l, block, h);
  }

 protected:
  at::Tensor ForwardLayerTaking(int64_t l, const BlockTensors& block, at::Tensor h) override {
    return Layer(l, block, std::move(h));
  }

 private:
  // `h` by value: a layer whose Forward takes it by value (SageConv) gets the last reference
  // when the caller moved it here, and may let go of it early.
  at::Tensor Layer(int64_t l, const BlockTensors& block, at::Tensor h) {
    TORCH_CHECK(l >= 0 && l < static_cast<int64_t>(layers_.size()), "layer ", l, " of a ", layers_.size(), "-layer model");
    at::Tensor out = layers_[l]->Forward(block, std::move(h));
    // out is the layer's fresh output: ReLU and dropout can overwrite it.
    if (l + 1 < static_cast<int64_t>(layers_.size())) out = ReluDropoutInPlace(out, options().dropout, is_training());
    return out;
  }

  std::vector<std::shared_ptr<Conv>> layers_;
};
using SageModel = ReluStackModel<SageConv>;
using GcnModel = ReluStackModel<GcnConv>;

// R-GCN: RelSageConv layers, ReLU and dropout between them (DGL's entity classification shape).
using RgcnModel = ReluStackModel<RelSageConv>;

// GAT as DGL's example: every layer drops its input features and attention with `dropout`;
// hidden layers apply ELU and concatenate the heads, the output layer averages them.
class GatModel final : public BuiltInModel {
 public:
  GatModel(const ModelOptions& o, at::Generator& gen) : BuiltInModel(o) {
    for (int64_t l = 0; l < o.num_layers; ++l) {
      layers_.push_back(register_module(
          StrCat("layer", l), std::make_shared<GatConv>(LayerIn(o, l, l > 0 ? HeadsOf(o, l - 1) : 1), LayerOut(o, l),
                                                        HeadsOf(o, l), o.dropout, o.fused, gen)));
    }
  }

  at::Tensor ForwardLayer(int64_t l, const BlockTensors& block, const at::Tensor& h) override {
    TORCH_CHECK(l >= 0 && l < static_cast<int64_t>(layers_.size()), "layer ", l, " of a ", layers_.size(), "-layer model");
    at::Tensor out = layers_[l]->Forward(block, h);  // [num_dst, heads, out]
    return l + 1 < static_cast<int64_t>(layers_.size()) ? at::elu(out).flatten(1) : out.mean(1);
  }

 private:
  std::vector<std::shared_ptr<GatConv>> layers_;
};

// nn.Linear's tensors (`weight`, `bias`), initialised from the model's generator: the classifier
// that rgat and hgt put after their layers (public names classifier.weight, classifier.bias,
// after the layers' tensors).
struct Classifier : torch::nn::Module {
  Classifier(int64_t in, int64_t out, at::Generator& gen) {
    weight = register_parameter("weight", XavierUniform({out, in}, in, out, 1.0, gen));
    bias = register_parameter("bias", at::zeros({out}));
  }
  at::Tensor Forward(const at::Tensor& x) const { return at::addmm(bias, x, weight.t()); }
  at::Tensor weight, bias;
};

// The typed attention models as their references build them (MLPerf's and DGL's MAG240M R-GAT,
// PyG's HGT example): every layer of width `hidden`, its heads of hidden / heads each, one layer
// per block, then a linear classifier on the output nodes. R-GAT concatenates its heads and
// applies ELU after every layer (its layers drop their own input features); HGT's layers end in
// their own GELU, projection and gated skip, with nothing between them.
template <typename Conv>
class TypedAttentionModel final : public BuiltInModel {
 public:
  TypedAttentionModel(const ModelOptions& o, at::Generator& gen) : BuiltInModel(o) {
    for (int64_t l = 0; l < o.num_layers; ++l) {
      const int64_t in = l == 0 ? o.in_dim : o.hidden, heads = HeadsOf(o, l);
      std::shared_ptr<Conv> conv;
      if constexpr (std::is_same_v<Conv, RelGatConv>) {
        conv = std::make_shared<RelGatConv>(in, o.hidden / heads, heads, o.num_relations, o.dropout, o.fused, gen);
      } else {
        conv = std::make_shared<HgtConv>(in, o.hidden, heads, o.num_node_types, o.num_relations, o.dropout, o.fused, gen);
      }
      layers_.push_back(register_module(StrCat("layer", l), conv));
    }
    classifier_ = register_module("classifier", std::make_shared<Classifier>(o.hidden, o.num_classes, gen));
  }

  at::Tensor ForwardLayer(int64_t l, const BlockTensors& block, const at::Tensor& h) override {
    TORCH_CHECK(l >= 0 && l < static_cast<int64_t>(layers_.size()), "layer ", l, " of a ", layers_.size(), "-layer model");
    at::Tensor out = layers_[l]->Forward(block, h);
    if constexpr (std::is_same_v<Conv, RelGatConv>) out = at::elu(out.flatten(1));  // [num_dst, heads, d] -> hidden
    return l + 1 < static_cast<int64_t>(layers_.size()) ? out : classifier_->Forward(out);
  }

 private:
  std::vector<std::shared_ptr<Conv>> layers_;
  std::shared_ptr<Classifier> classifier_;
};
using RgatModel = TypedAttentionModel<RelGatConv>;
using HgtModel = TypedAttentionModel<HgtConv>;

}  // namespace

bool ProjectBeforeAggregating(const BlockTensors& b, int64_t in, int64_t out) {
  // An aggregated element (a gathered, added float) costs about as much as kAggregateFlops
  // multiply-adds of a matrix product here (bench/model_bench: ~0.35 ns against ~0.015 ns per
  // GEMM FLOP).
  constexpr double kAggregateFlops = 16;
  const double s = b.num_src, d = b.num_dst, e = static_cast<double>(b.num_edges());
  const double project_first = 2 * s * in * out + kAggregateFlops * e * out;
  const double aggregate_first = kAggregateFlops * e * in + 2 * d * in * out;
  return project_first < aggregate_first;
}

namespace {

// The models' factories (model_kinds.cc has their names and defaults): adding a built-in model
// is a class above, a ModelKind, a row there and one here.
struct ModelFactory {
  ModelKind kind;
  absl::StatusOr<std::shared_ptr<GnnModel>> (*make)(const ModelOptions&, at::Generator&);
};

template <typename M>
absl::StatusOr<std::shared_ptr<GnnModel>> Make(const ModelOptions& o, at::Generator& gen) {
  return std::shared_ptr<GnnModel>(std::make_shared<M>(o, gen));
}

absl::StatusOr<std::shared_ptr<GnnModel>> MakeScripted(const ModelOptions& o, at::Generator&) {
  return LoadScriptedModel(o);
}

constexpr ModelFactory kFactories[] = {
    {ModelKind::kSage, &Make<SageModel>}, {ModelKind::kGcn, &Make<GcnModel>},
    {ModelKind::kGat, &Make<GatModel>},   {ModelKind::kRgcn, &Make<RgcnModel>},
    {ModelKind::kRgat, &Make<RgatModel>}, {ModelKind::kHgt, &Make<HgtModel>},
    {ModelKind::kScripted, &MakeScripted},
};

}  // namespace

absl::StatusOr<std::shared_ptr<GnnModel>> MakeModel(const ModelOptions& options,
                                                    uint64_t init_seed) {
  if (absl::Status s = ValidateModelOptions(options); !s.ok()) return s;
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(init_seed);
  for (const ModelFactory& f : kFactories) {
    if (f.kind == options.model) return f.make(options, gen);
  }
  return absl::InvalidArgumentError("unknown model kind");
}

}  // namespace fanout::trainer

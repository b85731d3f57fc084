#include "trainer/message_passing.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index_add.h>
#include <ATen/ops/leaky_relu.h>
#include <ATen/ops/segment_reduce.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/kernels.h"

namespace fanout::trainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Destination rows per parallel task: enough that a task is worth a thread hand-off.
constexpr int64_t kRowGrain = 32;
// Column chunks of the scatter backward: whole cache lines, so two threads never share one.
constexpr int64_t kColumnChunk = 16;

void CheckBlock(const BlockTensors& b, const char* op) {
  TORCH_CHECK_VALUE(b.indptr.defined() && b.src.defined() && b.indptr.size(0) == b.num_dst + 1,
                    op, ": malformed block (build blocks with ToTensors)");
}

kernels::Csc CscOf(const at::Tensor& indptr, const at::Tensor& indices, int64_t num_src) {
  kernels::Csc g;
  g.indptr = indptr.data_ptr<int64_t>();
  g.indices = indices.data_ptr<int64_t>();
  g.num_dst = indptr.size(0) - 1;
  g.num_src = num_src;
  return g;
}

// x viewed as [num_src, heads, width]; edge_weight as [num_edges, heads] (or undefined).
kernels::Spmm SpmmOf(const at::Tensor& indptr, const at::Tensor& indices, const at::Tensor& x,
                     const at::Tensor& edge_weight, bool mean) {
  kernels::Spmm op;
  op.graph = CscOf(indptr, indices, x.size(0));
  op.heads = x.dim() == 3 ? x.size(1) : 1;
  op.width = x.size(-1);
  op.edge_weight = edge_weight.defined() ? edge_weight.data_ptr<float>() : nullptr;
  op.mean = mean;
  return op;
}

// The shared body of the two aggregation functions below (LibTorch's custom functions cannot
// take an undefined tensor as an input, so "no edge weights" is a function of its own).
// With `with_self` (2-d x, no weights) the output is [num_dst, 2 * width]: each destination's
// own row of x, then its aggregate.
at::Tensor AggregateForward(AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& edge_weight, const at::Tensor& indptr,
                            const at::Tensor& indices, bool mean, bool with_self) {
  RECORD_USER_SCOPE("fanout::aggregate");
  kernels::Spmm op = SpmmOf(indptr, indices, x, edge_weight, mean);
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes[0] = op.graph.num_dst;
  if (with_self) {
    sizes[1] *= 2;
    op.out_stride = sizes[1];
  }
  at::Tensor out = at::empty(sizes, x.options());
  const float* xp = x.data_ptr<float>();
  float* outp = out.data_ptr<float>();
  const int64_t width = op.width;
  at::parallel_for(0, op.graph.num_dst, kRowGrain, [&](int64_t begin, int64_t end) {
    if (with_self) {
      for (int64_t v = begin; v < end; ++v) {
        std::memcpy(outp + v * 2 * width, xp + v * width, width * sizeof(float));
      }
      kernels::SpmmForward(op, xp, outp + width, begin, end);
    } else {
      kernels::SpmmForward(op, xp, outp, begin, end);
    }
  });
  if (edge_weight.defined()) {
    ctx->save_for_backward({x, indptr, indices, edge_weight});
  } else {
    ctx->save_for_backward({x, indptr, indices});
  }
  ctx->saved_data["mean"] = mean;
  ctx->saved_data["with_self"] = with_self;
  return out;
}

// {grad_x, grad_w}, each undefined unless asked for.
std::pair<at::Tensor, at::Tensor> AggregateBackward(AutogradContext* ctx,
                                                    const variable_list& grads, bool need_x,
                                                    bool need_w) {
  RECORD_USER_SCOPE("fanout::aggregate_backward");
  const variable_list saved = ctx->get_saved_variables();
  const at::Tensor &x = saved[0], &indptr = saved[1], &indices = saved[2];
  const at::Tensor edge_weight = saved.size() > 3 ? saved[3] : at::Tensor();
  kernels::Spmm op = SpmmOf(indptr, indices, x, edge_weight, ctx->saved_data["mean"].toBool());
  const bool with_self = ctx->saved_data["with_self"].toBool();
  const at::Tensor grad_out = grads[0].contiguous();
  const float* g = grad_out.data_ptr<float>();
  at::Tensor grad_x, grad_w;
  if (need_x) {
    grad_x = at::zeros_like(x);
    float* gx = grad_x.data_ptr<float>();
    if (with_self) {
      // The self half goes straight to the destinations' rows; the rest is the aggregate's.
      const int64_t width = op.width;
      op.out_stride = 2 * width;
      at::parallel_for(0, op.graph.num_dst, kRowGrain, [&](int64_t begin, int64_t end) {
        for (int64_t v = begin; v < end; ++v) {
          std::memcpy(gx + v * width, g + v * 2 * width, width * sizeof(float));
        }
      });
      g += width;
    }
    const int64_t row = op.row_elems();
    const int64_t chunks = (row + kColumnChunk - 1) / kColumnChunk;
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      kernels::SpmmBackwardX(op, g, gx, begin * kColumnChunk, std::min(end * kColumnChunk, row));
    });
  }
  if (need_w && edge_weight.defined()) {
    grad_w = at::empty_like(edge_weight);
    const float* xp = x.data_ptr<float>();
    float* gw = grad_w.data_ptr<float>();
    at::parallel_for(0, op.graph.num_dst, kRowGrain, [&](int64_t begin, int64_t end) {
      kernels::SpmmBackwardWeight(op, xp, g, gw, begin, end);
    });
  }
  return {grad_x, grad_w};
}

class AggregateFunction : public torch::autograd::Function<AggregateFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& indptr,
                            const at::Tensor& indices, bool mean) {
    return AggregateForward(ctx, x, at::Tensor(), indptr, indices, mean, /*with_self=*/false);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor grad_x = AggregateBackward(ctx, grads, ctx->needs_input_grad(0), false).first;
    return {grad_x, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class SelfAggregateFunction : public torch::autograd::Function<SelfAggregateFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& indptr,
                            const at::Tensor& indices, bool mean) {
    return AggregateForward(ctx, x, at::Tensor(), indptr, indices, mean, /*with_self=*/true);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor grad_x = AggregateBackward(ctx, grads, ctx->needs_input_grad(0), false).first;
    return {grad_x, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// {the aggregate, x's first `head` rows copied}: the backward adds the second output's gradient
// into the first rows of the aggregate's gradient for x, in place.
class AggregateHeadFunction : public torch::autograd::Function<AggregateHeadFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& indptr,
                               const at::Tensor& indices, bool mean, int64_t head) {
    at::Tensor out = AggregateForward(ctx, x, at::Tensor(), indptr, indices, mean, /*with_self=*/false);
    ctx->saved_data["head"] = head;
    return {out, x.narrow(0, 0, head).clone()};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor grad_x = AggregateBackward(ctx, {grads[0]}, ctx->needs_input_grad(0), false).first;
    if (grad_x.defined() && grads[1].defined()) {
      grad_x.narrow(0, 0, ctx->saved_data["head"].toInt()).add_(grads[1]);
    }
    return {grad_x, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class WeightedAggregateFunction : public torch::autograd::Function<WeightedAggregateFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& edge_weight, const at::Tensor& indptr,
                            const at::Tensor& indices, bool mean) {
    return AggregateForward(ctx, x, edge_weight, indptr, indices, mean, /*with_self=*/false);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto [grad_x, grad_w] =
        AggregateBackward(ctx, grads, ctx->needs_input_grad(0), ctx->needs_input_grad(1));
    return {grad_x, grad_w, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class EdgeSoftmaxFunction : public torch::autograd::Function<EdgeSoftmaxFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& el, const at::Tensor& er,
                            const at::Tensor& indptr, const at::Tensor& indices,
                            double negative_slope) {
    RECORD_USER_SCOPE("fanout::edge_softmax");
    const kernels::EdgeSoftmax op = OpOf(indptr, indices, el, negative_slope);
    at::Tensor attention = at::empty({op.graph.num_edges(), op.heads}, el.options());
    const float *elp = el.data_ptr<float>(), *erp = er.data_ptr<float>();
    float* ap = attention.data_ptr<float>();
    at::parallel_for(0, op.graph.num_dst, kRowGrain, [&](int64_t begin, int64_t end) {
      kernels::EdgeSoftmaxForward(op, elp, erp, ap, begin, end);
    });
    ctx->save_for_backward({el, er, attention, indptr, indices});
    ctx->saved_data["negative_slope"] = negative_slope;
    return attention;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_USER_SCOPE("fanout::edge_softmax_backward");
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &el = saved[0], &er = saved[1], &attention = saved[2], &indptr = saved[3],
                     &indices = saved[4];
    const kernels::EdgeSoftmax op =
        OpOf(indptr, indices, el, ctx->saved_data["negative_slope"].toDouble());
    const at::Tensor grad_attention = grads[0].contiguous();
    at::Tensor grad_edge = at::empty_like(attention);
    at::Tensor grad_er = at::empty_like(er);
    float *ge = grad_edge.data_ptr<float>(), *ger = grad_er.data_ptr<float>();
    at::parallel_for(0, op.graph.num_dst, kRowGrain, [&](int64_t begin, int64_t end) {
      kernels::EdgeSoftmaxBackward(op, el.data_ptr<float>(), er.data_ptr<float>(),
                                   attention.data_ptr<float>(), grad_attention.data_ptr<float>(),
                                   ge, ger, begin, end);
    });
    at::Tensor grad_el;
    if (ctx->needs_input_grad(0)) {
      grad_el = at::zeros_like(el);
      kernels::ScatterAddRows(op.graph.indices, op.graph.num_edges(), op.heads, ge,
                              grad_el.data_ptr<float>());
    }
    if (!ctx->needs_input_grad(1)) grad_er = at::Tensor();
    return {grad_el, grad_er, at::Tensor(), at::Tensor(), at::Tensor()};
  }

 private:
  static kernels::EdgeSoftmax OpOf(const at::Tensor& indptr, const at::Tensor& indices,
                                   const at::Tensor& el, double negative_slope) {
    kernels::EdgeSoftmax op;
    op.graph = CscOf(indptr, indices, el.size(0));
    op.heads = el.size(1);
    op.negative_slope = static_cast<float>(negative_slope);
    return op;
  }
};

// out[e, h] = <x[src e, h], y[dst e, h]>: the sampled dot kernel (SpmmBackwardWeight with y as
// the "output gradient"); its gradients are aggregations weighted by the incoming gradient.
class EdgeDotFunction : public torch::autograd::Function<EdgeDotFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, const at::Tensor& indptr,
                            const at::Tensor& indices) {
    RECORD_USER_SCOPE("fanout::edge_dot");
    const kernels::Spmm op = SpmmOf(indptr, indices, x, at::Tensor(), /*mean=*/false);
    at::Tensor out = at::empty({op.graph.num_edges(), op.heads}, x.options());
    const float *xp = x.data_ptr<float>(), *yp = y.data_ptr<float>();
    float* outp = out.data_ptr<float>();
    at::parallel_for(0, op.graph.num_dst, kRowGrain, [&](int64_t begin, int64_t end) {
      kernels::SpmmBackwardWeight(op, xp, yp, outp, begin, end);
    });
    ctx->save_for_backward({x, y, indptr, indices});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_USER_SCOPE("fanout::edge_dot_backward");
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &y = saved[1], &indptr = saved[2], &indices = saved[3];
    const at::Tensor g = grads[0].contiguous();  // [num_edges, heads]
    const kernels::Spmm op = SpmmOf(indptr, indices, x, g, /*mean=*/false);
    at::Tensor grad_x, grad_y;
    if (ctx->needs_input_grad(1)) {  // grad_y[v] = sum over v's edges of g[e] x[u]
      grad_y = at::empty_like(y);
      const float* xp = x.data_ptr<float>();
      float* gy = grad_y.data_ptr<float>();
      at::parallel_for(0, op.graph.num_dst, kRowGrain, [&](int64_t begin, int64_t end) {
        kernels::SpmmForward(op, xp, gy, begin, end);
      });
    }
    if (ctx->needs_input_grad(0)) {  // grad_x[u] = sum over u's edges of g[e] y[v]
      grad_x = at::zeros_like(x);
      const float* yp = y.data_ptr<float>();
      float* gx = grad_x.data_ptr<float>();
      const int64_t row = op.row_elems();
      const int64_t chunks = (row + kColumnChunk - 1) / kColumnChunk;
      at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
        kernels::SpmmBackwardX(op, yp, gx, begin * kColumnChunk, std::min(end * kColumnChunk, row));
      });
    }
    return {grad_x, grad_y, at::Tensor(), at::Tensor()};
  }
};

// The kernels take float32 CPU tensors (undefined ones are absent edge weights) and a CPU block.
bool Fusable(const BlockTensors& b, std::initializer_list<const at::Tensor*> tensors) {
  if (!b.indptr.device().is_cpu()) return false;
  for (const at::Tensor* t : tensors) {
    if (t->defined() && (!t->device().is_cpu() || t->scalar_type() != at::kFloat)) return false;
  }
  return true;
}

void CheckAggregateArgs(const BlockTensors& b, const at::Tensor& x, const at::Tensor& w) {
  CheckBlock(b, "aggregate");
  TORCH_CHECK_VALUE((x.dim() == 2 || x.dim() == 3) && x.size(0) == b.num_src, "aggregate: x is ",
                    x.sizes(), ", expected [", b.num_src, " source nodes, ...] with 2 or 3 dims");
  if (w.defined()) {
    const int64_t heads = x.dim() == 3 ? x.size(1) : 1;
    const bool ok = x.dim() == 2 ? (w.dim() == 1 && w.size(0) == b.num_edges())
                                 : (w.dim() == 2 && w.size(0) == b.num_edges() && w.size(1) == heads);
    TORCH_CHECK_VALUE(ok, "aggregate: edge weights are ", w.sizes(), ", expected [", b.num_edges(),
                      x.dim() == 3 ? ", heads]" : "]", " for x of shape ", x.sizes());
  }
}

void CheckSoftmaxArgs(const BlockTensors& b, const at::Tensor& el, const at::Tensor& er) {
  CheckBlock(b, "edge softmax");
  TORCH_CHECK_VALUE(el.dim() == 2 && el.size(0) == b.num_src && er.dim() == 2 &&
                        er.size(0) == b.num_dst && er.size(1) == el.size(1),
                    "edge softmax: el is ", el.sizes(), " and er ", er.sizes(), ", expected [",
                    b.num_src, ", heads] and [", b.num_dst, ", heads]");
}

// Destination sums of per-edge rows: [num_edges, ...] -> [num_dst, ...].
at::Tensor SumByDst(const BlockTensors& b, const at::Tensor& messages) {
  std::vector<int64_t> sizes = messages.sizes().vec();
  sizes[0] = b.num_dst;
  return at::zeros(sizes, messages.options()).index_add(0, b.dst, messages);
}

}  // namespace

at::Tensor Aggregate(const BlockTensors& b, const at::Tensor& x, Reduce reduce,
                     const at::Tensor& edge_weight) {
  CheckAggregateArgs(b, x, edge_weight);
  if (!Fusable(b, {&x, &edge_weight})) {
    return AggregateReference(b, x, reduce, edge_weight);
  }
  const bool mean = reduce == Reduce::kMean;
  if (!edge_weight.defined()) return AggregateFunction::apply(x.contiguous(), b.indptr, b.src, mean);
  return WeightedAggregateFunction::apply(x.contiguous(), edge_weight.contiguous(), b.indptr,
                                          b.src, mean);
}

at::Tensor AggregateWithSelf(const BlockTensors& b, const at::Tensor& x, Reduce reduce) {
  CheckAggregateArgs(b, x, at::Tensor());
  TORCH_CHECK_VALUE(x.dim() == 2, "aggregate with self: x is ", x.sizes(), ", expected 2 dims");
  if (!Fusable(b, {&x})) {
    return at::cat({x.narrow(0, 0, b.num_dst), AggregateReference(b, x, reduce)}, 1);
  }
  return SelfAggregateFunction::apply(x.contiguous(), b.indptr, b.src, reduce == Reduce::kMean);
}

std::pair<at::Tensor, at::Tensor> AggregateAndHead(const BlockTensors& b, const at::Tensor& x, Reduce reduce,
                                                   int64_t head_rows) {
  CheckAggregateArgs(b, x, at::Tensor());
  TORCH_CHECK_VALUE(head_rows >= 0 && head_rows <= x.size(0), "aggregate and head: ", head_rows,
                    " head rows of x with ", x.size(0));
  if (!Fusable(b, {&x})) return {AggregateReference(b, x, reduce), x.narrow(0, 0, head_rows)};
  variable_list out = AggregateHeadFunction::apply(x.contiguous(), b.indptr, b.src, reduce == Reduce::kMean, head_rows);
  return {out[0], out[1]};
}

at::Tensor EdgeSoftmax(const BlockTensors& b, const at::Tensor& el, const at::Tensor& er,
                       double negative_slope) {
  CheckSoftmaxArgs(b, el, er);
  if (!Fusable(b, {&el, &er})) return EdgeSoftmaxReference(b, el, er, negative_slope);
  return EdgeSoftmaxFunction::apply(el.contiguous(), er.contiguous(), b.indptr, b.src,
                                    negative_slope);
}

at::Tensor EdgeDot(const BlockTensors& b, const at::Tensor& x, const at::Tensor& y) {
  CheckBlock(b, "edge dot");
  TORCH_CHECK_VALUE(x.dim() == 3 && y.dim() == 3 && x.size(0) == b.num_src && y.size(0) == b.num_dst &&
                        x.size(1) == y.size(1) && x.size(2) == y.size(2),
                    "edge dot: x is ", x.sizes(), " and y ", y.sizes(), ", expected [", b.num_src,
                    ", heads, width] and [", b.num_dst, ", heads, width]");
  if (!Fusable(b, {&x, &y})) return EdgeDotReference(b, x, y);
  return EdgeDotFunction::apply(x.contiguous(), y.contiguous(), b.indptr, b.src);
}

at::Tensor EdgeDotReference(const BlockTensors& b, const at::Tensor& x, const at::Tensor& y) {
  return (x.index_select(0, b.src) * y.index_select(0, b.dst)).sum(-1);
}

at::Tensor AggregateReference(const BlockTensors& b, const at::Tensor& x, Reduce reduce,
                              const at::Tensor& edge_weight) {
  CheckAggregateArgs(b, x, edge_weight);
  at::Tensor messages = x.index_select(0, b.src);
  if (edge_weight.defined()) messages = messages * edge_weight.unsqueeze(-1);
  at::Tensor out = SumByDst(b, messages);
  if (reduce == Reduce::kMean) {
    std::vector<int64_t> shape(x.dim(), 1);
    shape[0] = b.num_dst;
    out = out / b.in_degree.clamp_min(1).to(x.scalar_type()).view(shape);
  }
  return out;
}

at::Tensor EdgeSoftmaxReference(const BlockTensors& b, const at::Tensor& el, const at::Tensor& er,
                                double negative_slope) {
  CheckSoftmaxArgs(b, el, er);
  const at::Tensor e =
      at::leaky_relu(el.index_select(0, b.src) + er.index_select(0, b.dst), negative_slope);
  if (b.num_edges() == 0) return e;
  // Shifted by each destination's max logit (its edges are consecutive: a segment max); the
  // shift cancels in the softmax, so no gradient flows through it.
  const at::Tensor max = at::segment_reduce(e.detach(), "max", b.in_degree);
  const at::Tensor exp = (e - max.index_select(0, b.dst)).exp();
  return exp / SumByDst(b, exp).index_select(0, b.dst);
}

}  // namespace fanout::trainer

// Message passing on a block as differentiable LibTorch operations: the models' aggregation and
// GAT's attention. On CPU they run the fused kernels of kernels/kernels.h on LibTorch's intra-op
// threads (no per-edge message tensor); elsewhere (CUDA) they run the reference composition of
// index_select / index_add, which the tests also hold the kernels to.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

#include "trainer/batch_tensors.h"

namespace fanout::trainer {

enum class Reduce { kSum, kMean };

// out[v] = reduce over in-edges e = (u, v) of the block of w[e] * x[u]; mean divides by the
// in-degree, and a destination without in-edges gets 0 (DGL's copy_u / u_mul_e with sum / mean).
//   x: float32 [num_src, width] or [num_src, heads, width]
//   edge_weight: undefined (all 1), float32 [num_edges] (with 2-d x) or [num_edges, heads]
// Returns [num_dst, ...] shaped like x. Differentiable in x and edge_weight; gradients are only
// computed for those that require them. Throws c10::Error on a shape mismatch.
at::Tensor Aggregate(const BlockTensors& b, const at::Tensor& x, Reduce reduce,
                     const at::Tensor& edge_weight = at::Tensor());

// [x[:num_dst] | Aggregate(b, x, reduce)] as one [num_dst, 2 * width] tensor, for 2-d x: the
// input of a layer that multiplies both halves by one weight matrix (GraphSAGE's fc_self and
// fc_neigh as a single product), written without a separate concatenation.
at::Tensor AggregateWithSelf(const BlockTensors& b, const at::Tensor& x, Reduce reduce);

// {Aggregate(b, x, reduce), x[:head_rows]} for a layer that also multiplies rows of its input
// itself (R-GCN's self-loop on the destinations): on CPU one autograd node whose backward adds
// the second output's gradient into the first rows of x's in place, where a narrow of x would
// fill a zero gradient the size of x and the engine add the two (a copy of the head rows in
// forward instead). Unweighted; the second output is a view of x where the kernels do not apply.
std::pair<at::Tensor, at::Tensor> AggregateAndHead(const BlockTensors& b, const at::Tensor& x, Reduce reduce,
                                                   int64_t head_rows);

// GAT's attention: for edge e = (u, v) and head h, softmax over v's in-edges of
// LeakyReLU_slope(el[u, h] + er[v, h]). el: float32 [num_src, heads], er: [num_dst, heads].
// Returns [num_edges, heads]. Differentiable in el and er.
at::Tensor EdgeSoftmax(const BlockTensors& b, const at::Tensor& el, const at::Tensor& er,
                       double negative_slope);

// Per-edge dot products (DGL's gSDDMM u_dot_v): out[e, h] = <x[u, h, :], y[v, h, :]> for each
// edge e = (u, v) of the block. x: float32 [num_src, heads, width], y: [num_dst, heads, width].
// Returns [num_edges, heads]. Differentiable in x and y; on CPU no [num_edges, ...] tensor is
// built, forward or backward (the gradients are the weighted aggregations of the other side).
at::Tensor EdgeDot(const BlockTensors& b, const at::Tensor& x, const at::Tensor& y);

// The same operations composed from ATen ops (index_select, index_add, segment_reduce):
// correct on any device, but they build [num_edges, ...] message tensors. The CUDA path and the
// tests' reference.
at::Tensor AggregateReference(const BlockTensors& b, const at::Tensor& x, Reduce reduce,
                              const at::Tensor& edge_weight = at::Tensor());
at::Tensor EdgeSoftmaxReference(const BlockTensors& b, const at::Tensor& el, const at::Tensor& er,
                                double negative_slope);
at::Tensor EdgeDotReference(const BlockTensors& b, const at::Tensor& x, const at::Tensor& y);

}  // namespace fanout::trainer

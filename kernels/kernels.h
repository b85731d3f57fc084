// Fused message-passing kernels over a block's in-edge CSC, on plain float32 arrays (no
// LibTorch in this file, so they build fast and read as the algorithms they are).
//
// DGL's gSpMM / gSDDMM in the shapes fanout's models use: aggregation reads source rows and
// accumulates straight into destination rows, so no [num_edges, width] message tensor is ever
// built. trainer/message_passing.h wraps them as autograd functions and runs them on LibTorch's
// intra-op threads; every function here works on a caller-given range, so callers split the work
// into disjoint ranges and may run the ranges concurrently. Each function writes only to the rows
// (or columns) of its range: ranges never race.
//
// Each function exists once per instruction set (AVX-512, AVX2 + FMA and the baseline on x86-64),
// picked at run time: the best this CPU has, or FANOUT_KERNEL_ISA=baseline|avx2|avx512.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fanout::kernels {

enum class Isa { kBaseline, kAvx2, kAvx512 };

// "baseline", "avx2", "avx512".
const char* IsaName(Isa isa);
// Whether this CPU runs `isa`'s copy (AVX-512: x86-64-v4's F, BW, CD, DQ, VL; AVX2: x86-64-v3's
// AVX2, FMA, BMI2 and the rest).
bool IsaSupported(Isa isa);
std::vector<Isa> SupportedIsas();
std::vector<std::string> SupportedIsaNames();
// FANOUT_KERNEL_ISA's choice, or the best supported when it is unset; INVALID_ARGUMENT naming
// the value and what this CPU has when it names no set or one this CPU lacks (fanout-train checks
// it at start).
absl::StatusOr<Isa> IsaFromEnvironment();
// The set the functions below run: fixed at the first call (FANOUT_KERNEL_ISA, else the best).
Isa ActiveIsa();
// Switches every later call to `isa` (tests and benchmarks); false if this CPU lacks it.
bool SetIsa(Isa isa);

// A block's edges grouped by destination: destination v's in-edges are positions
// indptr[v] .. indptr[v + 1] - 1, and indices[e] is the source row of edge e. Multi-edges count
// once each. Borrowed pointers; the caller keeps them alive.
struct Csc {
  const int64_t* indptr = nullptr;   // [num_dst + 1], indptr[0] == 0, non-decreasing
  const int64_t* indices = nullptr;  // [num_edges], each in [0, num_src)
  int64_t num_dst = 0;
  int64_t num_src = 0;
  int64_t num_edges() const { return indptr[num_dst]; }
};

// out[v, h, :] = scale(v) * sum over in-edges e = (u, v) of w(e, h) * x[u, h, :]
// where w(e, h) = edge_weight[e * heads + h] (1 when edge_weight is null) and scale(v) is
// 1 / max(in-degree(v), 1) with `mean`, else 1. x is row-major [num_src, heads, width], out
// [num_dst, heads, width]; a destination without in-edges gets zeros.
struct Spmm {
  Csc graph;
  int64_t heads = 1;
  int64_t width = 0;
  const float* edge_weight = nullptr;  // [num_edges, heads] or null
  bool mean = false;
  // Floats from one row of out (and of grad_out) to the next; 0 means row_elems(). A larger
  // stride writes into the columns of a wider matrix, e.g. beside the destinations' own rows.
  int64_t out_stride = 0;
  int64_t row_elems() const { return heads * width; }
  int64_t out_row_stride() const { return out_stride > 0 ? out_stride : row_elems(); }
};

// Writes out rows [dst_begin, dst_end).
void SpmmForward(const Spmm& op, const float* x, float* out, int64_t dst_begin, int64_t dst_end);

// grad_x[u, c] += sum over edges e = (u, v) of scale(v) * w(e, c / width) * grad_out[v, c], for
// the flat columns c in [col_begin, col_end) of the [heads * width] rows. Visits every edge, so
// split by columns (not rows) to run in parallel: each range then owns its columns of grad_x.
void SpmmBackwardX(const Spmm& op, const float* grad_out, float* grad_x, int64_t col_begin,
                   int64_t col_end);

// grad_w[e, h] = scale(v) * <x[u, h, :], grad_out[v, h, :]> for the edges of destinations
// [dst_begin, dst_end) (the sampled dense-dense product, DGL's gSDDMM dot).
void SpmmBackwardWeight(const Spmm& op, const float* x, const float* grad_out, float* grad_w,
                        int64_t dst_begin, int64_t dst_end);

// GAT attention, fused: for every edge e = (u, v) and head h,
//   logit(e, h) = LeakyReLU_slope(el[u, h] + er[v, h])
//   attention[e, h] = softmax of logit over v's in-edges (per head)
// shifted by each destination's maximum logit, so large logits cannot overflow. el is
// [num_src, heads], er [num_dst, heads], attention [num_edges, heads].
struct EdgeSoftmax {
  Csc graph;
  int64_t heads = 1;
  float negative_slope = 0.2f;
};

// Writes the attention of destinations [dst_begin, dst_end)'s edges.
void EdgeSoftmaxForward(const EdgeSoftmax& op, const float* el, const float* er, float* attention,
                        int64_t dst_begin, int64_t dst_end);

// From grad_attention, the gradient of the logits' inputs for destinations [dst_begin, dst_end):
// grad_edge[e, h] (the gradient of el[u, h] + er[v, h] at edge e) and grad_er[v, h] (its sum
// over v's in-edges). grad_el is then grad_edge summed by source: ScatterAddRows.
void EdgeSoftmaxBackward(const EdgeSoftmax& op, const float* el, const float* er,
                         const float* attention, const float* grad_attention, float* grad_edge,
                         float* grad_er, int64_t dst_begin, int64_t dst_end);

// out[indices[i], :] += rows[i, :] for i in [0, n); rows are `width` floats. Serial (rows of
// `out` may repeat).
void ScatterAddRows(const int64_t* indices, int64_t n, int64_t width, const float* rows,
                    float* out);

// Inverted dropout, optionally after a ReLU, with a counter-based mask: element i is kept iff a
// 32-bit hash of (seed, i) is >= p * 2^32, so the mask depends on nothing but (seed, i) — not on
// how the work is split into ranges or threads, and the backward pass can recompute it instead
// of storing it. Kept elements are scaled by 1 / (1 - p).
struct Dropout {
  uint64_t seed = 0;
  float p = 0.5f;     // in [0, 1)
  bool relu = false;  // out = dropout(max(x, 0))
};

// out[i] for i in [begin, end); out may be x (in place).
void DropoutForward(const Dropout& op, const float* x, float* out, int64_t begin, int64_t end);

// grad_x[i] for i in [begin, end), given the forward's output (with relu, an element has a
// gradient iff its output is > 0, which implies it was kept) and the output's gradient.
void DropoutBackward(const Dropout& op, const float* out, const float* grad_out, float* grad_x,
                     int64_t begin, int64_t end);

}  // namespace fanout::kernels

#include "trainer/kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

// Each entry point is compiled twice on x86-64: for AVX2 + FMA (x86-64-v3) and for the baseline,
// picked once at load time. The inner loops are plain C++ that GCC vectorises (this file is built
// with -O3, trainer/CMakeLists.txt).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FANOUT_KERNEL __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define FANOUT_KERNEL
#endif

namespace fanout::trainer::kernels {
namespace {

// How many edges ahead to prefetch the next source rows. Rows are gathered in random order from
// arrays far larger than the caches, so the loads would otherwise stall on memory one by one.
constexpr int64_t kPrefetchEdges = 6;
constexpr int64_t kCacheLine = 64;

inline void PrefetchRow(const float* row, int64_t elems) {
  const char* p = reinterpret_cast<const char*>(row);
  const int64_t bytes = elems * static_cast<int64_t>(sizeof(float));
  for (int64_t off = 0; off < bytes; off += kCacheLine) __builtin_prefetch(p + off, 0, 1);
}
inline void PrefetchRowForWrite(float* row, int64_t elems) {
  char* p = reinterpret_cast<char*>(row);
  const int64_t bytes = elems * static_cast<int64_t>(sizeof(float));
  for (int64_t off = 0; off < bytes; off += kCacheLine) __builtin_prefetch(p + off, 1, 1);
}

inline void Add(const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}
inline void Axpy(float a, const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}
inline void Scale(float a, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= a;
}
inline float Dot(const float* __restrict x, const float* __restrict y, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i] * y[i];
  return s;
}

inline float DstScale(const Spmm& op, int64_t v) {
  if (!op.mean) return 1.0f;
  const int64_t degree = op.graph.indptr[v + 1] - op.graph.indptr[v];
  return degree > 1 ? 1.0f / static_cast<float>(degree) : 1.0f;
}

inline float LeakyRelu(float s, float slope) { return s > 0 ? s : s * slope; }

template <bool kWeighted>
inline void SpmmForwardImpl(const Spmm& op, const float* __restrict x, float* __restrict out,
                            int64_t dst_begin, int64_t dst_end) {
  const int64_t heads = op.heads, width = op.width, row = op.row_elems();
  const int64_t* indptr = op.graph.indptr;
  const int64_t* indices = op.graph.indices;
  const int64_t last_edge = indptr[dst_end];
  for (int64_t v = dst_begin; v < dst_end; ++v) {
    float* o = out + v * row;
    std::fill(o, o + row, 0.0f);
    for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
      if (e + kPrefetchEdges < last_edge) PrefetchRow(x + indices[e + kPrefetchEdges] * row, row);
      const float* xu = x + indices[e] * row;
      if constexpr (kWeighted) {
        for (int64_t h = 0; h < heads; ++h) {
          Axpy(op.edge_weight[e * heads + h], xu + h * width, o + h * width, width);
        }
      } else {
        Add(xu, o, row);
      }
    }
    const float scale = DstScale(op, v);
    if (scale != 1.0f) Scale(scale, o, row);
  }
}

}  // namespace

FANOUT_KERNEL
void SpmmForward(const Spmm& op, const float* x, float* out, int64_t dst_begin, int64_t dst_end) {
  if (op.edge_weight != nullptr) {
    SpmmForwardImpl<true>(op, x, out, dst_begin, dst_end);
  } else {
    SpmmForwardImpl<false>(op, x, out, dst_begin, dst_end);
  }
}

FANOUT_KERNEL
void SpmmBackwardX(const Spmm& op, const float* grad_out, float* grad_x, int64_t col_begin,
                   int64_t col_end) {
  const int64_t heads = op.heads, width = op.width, row = op.row_elems();
  const int64_t* indptr = op.graph.indptr;
  const int64_t* indices = op.graph.indices;
  const int64_t num_edges = op.graph.num_edges();
  const int64_t cols = col_end - col_begin;
  for (int64_t v = 0; v < op.graph.num_dst; ++v) {
    const float scale = DstScale(op, v);
    const float* g = grad_out + v * row;
    for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
      if (e + kPrefetchEdges < num_edges) {
        PrefetchRowForWrite(grad_x + indices[e + kPrefetchEdges] * row + col_begin, cols);
      }
      float* gx = grad_x + indices[e] * row;
      if (op.edge_weight == nullptr) {
        Axpy(scale, g + col_begin, gx + col_begin, cols);
        continue;
      }
      // The heads that overlap [col_begin, col_end), each with its own weight.
      for (int64_t h = col_begin / width; h < heads && h * width < col_end; ++h) {
        const int64_t lo = std::max(col_begin, h * width);
        const int64_t hi = std::min(col_end, (h + 1) * width);
        Axpy(scale * op.edge_weight[e * heads + h], g + lo, gx + lo, hi - lo);
      }
    }
  }
}

FANOUT_KERNEL
void SpmmBackwardWeight(const Spmm& op, const float* x, const float* grad_out, float* grad_w,
                        int64_t dst_begin, int64_t dst_end) {
  const int64_t heads = op.heads, width = op.width, row = op.row_elems();
  const int64_t* indptr = op.graph.indptr;
  const int64_t* indices = op.graph.indices;
  const int64_t last_edge = indptr[dst_end];
  for (int64_t v = dst_begin; v < dst_end; ++v) {
    const float scale = DstScale(op, v);
    const float* g = grad_out + v * row;
    for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
      if (e + kPrefetchEdges < last_edge) PrefetchRow(x + indices[e + kPrefetchEdges] * row, row);
      const float* xu = x + indices[e] * row;
      for (int64_t h = 0; h < heads; ++h) {
        grad_w[e * heads + h] = scale * Dot(xu + h * width, g + h * width, width);
      }
    }
  }
}

FANOUT_KERNEL
void EdgeSoftmaxForward(const EdgeSoftmax& op, const float* el, const float* er, float* attention,
                        int64_t dst_begin, int64_t dst_end) {
  const int64_t heads = op.heads;
  const int64_t* indptr = op.graph.indptr;
  const int64_t* indices = op.graph.indices;
  for (int64_t v = dst_begin; v < dst_end; ++v) {
    const int64_t e0 = indptr[v], e1 = indptr[v + 1];
    for (int64_t h = 0; h < heads; ++h) {
      const float r = er[v * heads + h];
      float max = -std::numeric_limits<float>::infinity();
      for (int64_t e = e0; e < e1; ++e) {
        const float s = LeakyRelu(el[indices[e] * heads + h] + r, op.negative_slope);
        attention[e * heads + h] = s;
        max = std::max(max, s);
      }
      float sum = 0;
      for (int64_t e = e0; e < e1; ++e) {
        const float a = std::exp(attention[e * heads + h] - max);
        attention[e * heads + h] = a;
        sum += a;
      }
      const float inv = 1.0f / sum;
      for (int64_t e = e0; e < e1; ++e) attention[e * heads + h] *= inv;
    }
  }
}

FANOUT_KERNEL
void EdgeSoftmaxBackward(const EdgeSoftmax& op, const float* el, const float* er,
                         const float* attention, const float* grad_attention, float* grad_edge,
                         float* grad_er, int64_t dst_begin, int64_t dst_end) {
  const int64_t heads = op.heads;
  const int64_t* indptr = op.graph.indptr;
  const int64_t* indices = op.graph.indices;
  for (int64_t v = dst_begin; v < dst_end; ++v) {
    const int64_t e0 = indptr[v], e1 = indptr[v + 1];
    for (int64_t h = 0; h < heads; ++h) {
      // Softmax backward: d logit = a * (g - sum(g * a)); then LeakyReLU's slope.
      float dot = 0;
      for (int64_t e = e0; e < e1; ++e) dot += grad_attention[e * heads + h] * attention[e * heads + h];
      const float r = er[v * heads + h];
      float sum = 0;
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t k = e * heads + h;
        const float pre = el[indices[e] * heads + h] + r;
        const float d = attention[k] * (grad_attention[k] - dot) * (pre > 0 ? 1.0f : op.negative_slope);
        grad_edge[k] = d;
        sum += d;
      }
      grad_er[v * heads + h] = sum;
    }
  }
}

void ScatterAddRows(const int64_t* indices, int64_t n, int64_t width, const float* rows,
                    float* out) {
  for (int64_t i = 0; i < n; ++i) Add(rows + i * width, out + indices[i] * width, width);
}

}  // namespace fanout::trainer::kernels

#include "trainer/kernels.h"

#include <algorithm>
#include <bit>
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

// Murmur3's 32-bit finaliser over (seed, i): every output bit depends on every input bit, which
// is all a dropout mask needs; 32-bit arithmetic keeps the loops vectorised (vpmulld). `salt`
// carries the seed's high word and i's high word, constant over runs of 2^32 elements.
inline uint32_t MaskHash(uint32_t seed, uint32_t salt, uint32_t i) {
  uint32_t h = (i * 0x9E3779B1u ^ seed) + salt;
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

// Calls body(first, count, seed, salt) over [begin, end) cut where i's high word changes, with
// count < 2^32 and i = first + k for k in [0, count).
template <typename Body>
inline void ForMaskRuns(uint64_t seed, int64_t begin, int64_t end, Body body) {
  for (int64_t first = begin; first < end;) {
    const int64_t run_end = std::min<int64_t>(end, (first | int64_t{0xFFFFFFFF}) + 1);
    const uint32_t salt = static_cast<uint32_t>(seed >> 32) +
                          static_cast<uint32_t>(static_cast<uint64_t>(first) >> 32);
    body(first, static_cast<uint32_t>(run_end - first), static_cast<uint32_t>(seed), salt);
    first = run_end;
  }
}

// v where keep, else +0.0f, without a branch (so that the loops vectorise).
inline float KeepOrZero(bool keep, float v) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(v) & (0u - static_cast<uint32_t>(keep)));
}

// Elements whose hash is below this are dropped: p * 2^32, rounded.
inline uint32_t DropThreshold(float p) {
  return static_cast<uint32_t>(std::min(4294967295.0, std::round(static_cast<double>(p) * 4294967296.0)));
}

template <bool kWeighted>
inline void SpmmForwardImpl(const Spmm& op, const float* __restrict x, float* __restrict out,
                            int64_t dst_begin, int64_t dst_end) {
  const int64_t heads = op.heads, width = op.width, row = op.row_elems();
  const int64_t* indptr = op.graph.indptr;
  const int64_t* indices = op.graph.indices;
  const int64_t last_edge = indptr[dst_end];
  for (int64_t v = dst_begin; v < dst_end; ++v) {
    float* o = out + v * op.out_row_stride();
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
    const float* g = grad_out + v * op.out_row_stride();
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
    const float* g = grad_out + v * op.out_row_stride();
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

FANOUT_KERNEL
void DropoutForward(const Dropout& op, const float* x, float* out, int64_t begin, int64_t end) {
  const uint32_t threshold = DropThreshold(op.p);
  const float scale = 1.0f / (1.0f - op.p);
  const float floor = op.relu ? 0.0f : -std::numeric_limits<float>::infinity();
  ForMaskRuns(op.seed, begin, end, [&](int64_t first, uint32_t count, uint32_t seed, uint32_t salt) {
    const float* xs = x + first;
    float* os = out + first;
    const uint32_t base = static_cast<uint32_t>(first);
    for (uint32_t k = 0; k < count; ++k) {
      const float v = std::max(xs[k], floor) * scale;
      os[k] = KeepOrZero(MaskHash(seed, salt, base + k) >= threshold, v);
    }
  });
}

FANOUT_KERNEL
void DropoutBackward(const Dropout& op, const float* out, const float* grad_out, float* grad_x,
                     int64_t begin, int64_t end) {
  const float scale = 1.0f / (1.0f - op.p);
  if (op.relu) {
    for (int64_t i = begin; i < end; ++i) grad_x[i] = KeepOrZero(out[i] > 0, grad_out[i] * scale);
    return;
  }
  const uint32_t threshold = DropThreshold(op.p);
  ForMaskRuns(op.seed, begin, end, [&](int64_t first, uint32_t count, uint32_t seed, uint32_t salt) {
    const float* g = grad_out + first;
    float* gx = grad_x + first;
    const uint32_t base = static_cast<uint32_t>(first);
    for (uint32_t k = 0; k < count; ++k) {
      gx[k] = KeepOrZero(MaskHash(seed, salt, base + k) >= threshold, g[k] * scale);
    }
  });
}

void ScatterAddRows(const int64_t* indices, int64_t n, int64_t width, const float* rows,
                    float* out) {
  for (int64_t i = 0; i < n; ++i) Add(rows + i * width, out + indices[i] * width, width);
}

}  // namespace fanout::trainer::kernels

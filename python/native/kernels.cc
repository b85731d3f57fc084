// fanout._native's compute kernels, on the fused loops fanout-train's own layers use
// (kernels/kernels.h: the instruction set picked at run time): a block's in-edge CSC times a
// dense float32 matrix (rows gathered and accumulated straight into the destination's row, no
// [num_edges, width] message tensor), and ReLU + dropout in one pass with a counter-based mask
// (nothing stored for backward but a seed). python/fanout/kernels.py wraps them as autograd
// functions (the sparse adjacency fanout.pyg hands PyG's layers, and relu_dropout); arrays cross
// as NumPy views of the tensors, so no LibTorch is linked here.
//
// Every argument is checked before a kernel runs (dtype, layout, shapes, the CSC's offsets and
// every source index), so a bad matrix is a ValueError or TypeError, never a read out of bounds.
#include "python/native/kernels.h"

#include <pybind11/numpy.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "base/strings.h"
#include "kernels/kernels.h"

namespace py = pybind11;

namespace fanout::python {
namespace {

using base::StrCat;
using Int64s = py::array_t<int64_t, py::array::c_style>;
using Floats = py::array_t<float, py::array::c_style>;

// Columns a thread of the backward product takes at a time (as fanout-train's operator).
constexpr int64_t kColumnChunk = 16;

// `a` as a C-contiguous array of T with `ndim` dimensions (any number with kAnyDims); TypeError
// naming `what` otherwise (no silent conversion: a converted copy of an output would drop the
// result).
constexpr int kAnyDims = -1;
template <typename A>
A Exact(const py::array& a, int ndim, const char* what, const char* want) {
  if (!A::check_(a) || !(a.flags() & py::array::c_style)) {
    throw py::type_error(StrCat(what, ": expected a C-contiguous ", want, " array, got dtype ",
                                std::string(py::str(a.dtype()))));
  }
  if (ndim != kAnyDims && a.ndim() != ndim) {
    throw py::value_error(StrCat(what, ": expected ", ndim, " dimensions, got ", a.ndim()));
  }
  return py::reinterpret_borrow<A>(a);
}

// The CSC and the product's shapes, checked: indptr [num_dst + 1] from 0, non-decreasing, up to
// len(indices); every index in [0, num_src).
kernels::Spmm Checked(const Int64s& indptr, const Int64s& indices, int64_t num_src, int64_t width,
                               bool mean) {
  const int64_t num_dst = indptr.shape(0) - 1;
  if (num_dst < 0) throw py::value_error("indptr: expected at least one offset");
  const int64_t* p = indptr.data();
  const int64_t* idx = indices.data();
  const int64_t num_edges = indices.shape(0);
  if (p[0] != 0) throw py::value_error(StrCat("indptr[0] is ", p[0], ", expected 0"));
  for (int64_t v = 0; v < num_dst; ++v) {
    if (p[v + 1] < p[v]) throw py::value_error(StrCat("indptr decreases at ", v + 1, ": ", p[v], " then ", p[v + 1]));
  }
  if (p[num_dst] != num_edges) {
    throw py::value_error(StrCat("indptr ends at ", p[num_dst], " but indices has ", num_edges, " entries"));
  }
  for (int64_t e = 0; e < num_edges; ++e) {
    if (idx[e] < 0 || idx[e] >= num_src) {
      throw py::value_error(StrCat("indices[", e, "] is ", idx[e], ", outside the ", num_src, " source rows"));
    }
  }
  kernels::Spmm op;
  op.graph.indptr = p;
  op.graph.indices = idx;
  op.graph.num_dst = num_dst;
  op.graph.num_src = num_src;
  op.width = width;
  op.mean = mean;
  return op;
}

void CheckRows(const py::array& a, int64_t rows, int64_t width, const char* what) {
  if (a.shape(0) != rows || a.shape(1) != width) {
    throw py::value_error(StrCat(what, ": expected [", rows, ", ", width, "], got [", a.shape(0), ", ", a.shape(1), "]"));
  }
}

void CheckDisjoint(const py::array& in, const py::array& out, const char* what) {
  const char* a = static_cast<const char*>(in.data());
  const char* b = static_cast<const char*>(out.data());
  if (a < b + out.nbytes() && b < a + in.nbytes()) throw py::value_error(StrCat(what, " overlaps the input"));
}

// Runs fn(begin, end) over [0, n) cut into `parts` ranges at `cut(i)`, on that many threads (the
// caller's among them). parts <= 1 runs inline.
template <typename Cut, typename Fn>
void RunParts(int parts, Cut cut, Fn fn) {
  if (parts <= 1) {
    fn(cut(0), cut(1));
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(parts - 1);
  for (int i = 1; i < parts; ++i) threads.emplace_back([&, i] { fn(cut(i), cut(i + 1)); });
  fn(cut(0), cut(1));
  for (std::thread& t : threads) t.join();
}

int Parts(int threads, int64_t work, int64_t min_work) {
  return static_cast<int>(std::clamp<int64_t>(work / std::max<int64_t>(min_work, 1), 1, std::max(threads, 1)));
}

// A product's arrays, checked: forward, in = x [num_src, width] and out [num_dst, width];
// backward, in = grad_out [num_dst, width] and out = grad_x [num_src, width] (accumulated).
struct Product {
  Int64s indptr, indices;
  Floats in, out;
  kernels::Spmm op;
};

Product CheckedProduct(const py::array& indptr, const py::array& indices, const py::array& in, const char* in_name,
                       const py::array& out, const char* out_name, bool mean, bool backward) {
  Product p{Exact<Int64s>(indptr, 1, "indptr", "int64"), Exact<Int64s>(indices, 1, "indices", "int64"),
            Exact<Floats>(in, 2, in_name, "float32"), Exact<Floats>(out, 2, out_name, "float32"), {}};
  if (!p.out.writeable()) throw py::value_error(StrCat(out_name, ": read-only"));
  const Floats& sources = backward ? p.out : p.in;
  p.op = Checked(p.indptr, p.indices, sources.shape(0), sources.shape(1), mean);
  CheckRows(backward ? p.in : p.out, p.op.graph.num_dst, p.op.width, backward ? in_name : out_name);
  CheckDisjoint(p.in, p.out, out_name);
  return p;
}

void Forward(const py::array& indptr, const py::array& indices, const py::array& x, const py::array& out, bool mean,
             int threads) {
  Product p = CheckedProduct(indptr, indices, x, "x", out, "out", mean, /*backward=*/false);
  const kernels::Spmm& op = p.op;
  const float* xp = p.in.data();
  float* outp = p.out.mutable_data();
  const int64_t num_dst = op.graph.num_dst;
  const int64_t num_edges = op.graph.num_edges();
  // Ranges of destinations with about equal numbers of edges.
  const int parts = Parts(threads, num_edges * op.width, int64_t{1} << 16);
  const int64_t* ptr = op.graph.indptr;
  auto cut = [&](int i) -> int64_t {
    if (i >= parts) return num_dst;
    return std::lower_bound(ptr, ptr + num_dst, num_edges * i / parts) - ptr;
  };
  py::gil_scoped_release nogil;
  RunParts(parts, cut, [&](int64_t begin, int64_t end) {
    if (begin < end) kernels::SpmmForward(op, xp, outp, begin, end);
  });
}

void BackwardX(const py::array& indptr, const py::array& indices, const py::array& grad_out, const py::array& grad_x,
               bool mean, int threads) {
  Product p = CheckedProduct(indptr, indices, grad_out, "grad_out", grad_x, "grad_x", mean, /*backward=*/true);
  const kernels::Spmm& op = p.op;
  const float* g = p.in.data();
  float* gx = p.out.mutable_data();
  const int64_t width = op.width;
  const int64_t chunks = (width + kColumnChunk - 1) / kColumnChunk;
  // Every part visits every edge, for its own columns.
  const int parts = static_cast<int>(
      std::clamp<int64_t>(Parts(threads, op.graph.num_edges() * width, int64_t{1} << 16), 1, std::max<int64_t>(chunks, 1)));
  auto cut = [&](int i) -> int64_t { return std::min(width, chunks * i / parts * kColumnChunk); };
  py::gil_scoped_release nogil;
  RunParts(parts, cut, [&](int64_t begin, int64_t end) {
    if (begin < end) kernels::SpmmBackwardX(op, g, gx, begin, end);
  });
}

// Elements a dropout thread takes at least (as fanout-train's operator).
constexpr int64_t kDropoutGrain = 1 << 15;

// Runs fn(begin, end) over [0, n) in equal parts on up to `threads` threads.
template <typename Fn>
void RunElements(int64_t n, int threads, Fn fn) {
  const int parts = Parts(threads, n, kDropoutGrain);
  RunParts(parts, [&](int i) { return n * i / parts; }, [&](int64_t begin, int64_t end) {
    if (begin < end) fn(begin, end);
  });
}

kernels::Dropout DropoutOf(uint64_t seed, double p, bool relu) {
  if (!(p >= 0.0 && p < 1.0)) throw py::value_error(StrCat("p must be in [0, 1), got ", p));
  return {seed, static_cast<float>(p), relu};
}

// Any float32 C-contiguous array, as one flat run of elements.
Floats Flat(const py::array& a, const char* what) { return Exact<Floats>(a, kAnyDims, what, "float32"); }

void DropoutForward(const py::array& x_in, const py::array& out_in, uint64_t seed, double p, bool relu,
                    int threads) {
  const Floats x = Flat(x_in, "x");
  Floats out = Flat(out_in, "out");
  if (!out.writeable()) throw py::value_error("out: read-only");
  if (out.size() != x.size()) throw py::value_error(StrCat("out has ", out.size(), " elements, x ", x.size()));
  if (x.data() != out.data()) CheckDisjoint(x, out, "out");  // in place, or apart
  const kernels::Dropout op = DropoutOf(seed, p, relu);
  const float* xp = x.data();
  float* outp = out.mutable_data();
  py::gil_scoped_release nogil;
  RunElements(x.size(), threads, [&](int64_t begin, int64_t end) { kernels::DropoutForward(op, xp, outp, begin, end); });
}

void DropoutBackward(const py::object& out_in, const py::array& grad_out_in, const py::array& grad_x_in,
                     uint64_t seed, double p, bool relu, int threads) {
  const Floats grad_out = Flat(grad_out_in, "grad_out");
  Floats grad_x = Flat(grad_x_in, "grad_x");
  if (!grad_x.writeable()) throw py::value_error("grad_x: read-only");
  if (grad_x.size() != grad_out.size()) {
    throw py::value_error(StrCat("grad_x has ", grad_x.size(), " elements, grad_out ", grad_out.size()));
  }
  if (grad_x.data() != grad_out.data()) CheckDisjoint(grad_out, grad_x, "grad_x");
  const kernels::Dropout op = DropoutOf(seed, p, relu);
  // With relu the forward's output says which elements pass a gradient; without, the seed does.
  Floats out;
  if (relu) {
    if (out_in.is_none()) throw py::value_error("relu=True needs the forward's output");
    out = Flat(py::reinterpret_borrow<py::array>(out_in), "out");
    if (out.size() != grad_out.size()) throw py::value_error(StrCat("out has ", out.size(), " elements, grad_out ", grad_out.size()));
  }
  const float* outp = relu ? out.data() : nullptr;
  const float* g = grad_out.data();
  float* gx = grad_x.mutable_data();
  py::gil_scoped_release nogil;
  RunElements(grad_out.size(), threads,
              [&](int64_t begin, int64_t end) { kernels::DropoutBackward(op, outp, g, gx, begin, end); });
}

}  // namespace

void BindKernels(py::module_& m) {
  m.def("spmm", &Forward, py::arg("indptr"), py::arg("indices"), py::arg("x"), py::arg("out"), py::arg("mean"),
        py::arg("threads") = 1,
        "out[v] = the sum (mean: the mean) of x[indices[e]] over v's in-edges e in indptr[v]:indptr[v+1] "
        "(zeros without any): fanout's fused kernel. indptr, indices: int64; x [num_src, width], out "
        "[num_dst, width]: C-contiguous float32, out written in place. Runs on `threads` threads.");
  m.def("spmm_backward_x", &BackwardX, py::arg("indptr"), py::arg("indices"), py::arg("grad_out"), py::arg("grad_x"),
        py::arg("mean"), py::arg("threads") = 1,
        "grad_x[u] += the gradient of spmm's out with respect to x[u] (grad_out [num_dst, width], grad_x "
        "[num_src, width], accumulated in place).");
  m.def("dropout", &DropoutForward, py::arg("x"), py::arg("out"), py::arg("seed"), py::arg("p"), py::arg("relu"),
        py::arg("threads") = 1,
        "out = dropout(relu(x)) (relu=False: dropout(x)) with keep probability 1 - p and kept elements scaled by "
        "1 / (1 - p), the mask a hash of (seed, element index): fanout-train's fused kernel. x and out: "
        "C-contiguous float32 of as many elements; out may be x.");
  m.def("dropout_backward", &DropoutBackward, py::arg("out"), py::arg("grad_out"), py::arg("grad_x"), py::arg("seed"),
        py::arg("p"), py::arg("relu"), py::arg("threads") = 1,
        "grad_x = the gradient of dropout's x given its output's (`out`: the forward's output, needed with relu, "
        "else None; the same seed and p).");
  m.def("kernel_isa", [] { return std::string(kernels::IsaName(kernels::ActiveIsa())); },
        "The instruction set the fused kernels run (FANOUT_KERNEL_ISA, else the best this CPU has).");
}

}  // namespace fanout::python

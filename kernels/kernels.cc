#include "kernels/kernels.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

// The kernels' code (kernels/kernels_impl.inc) is compiled once per instruction set, each copy in
// a namespace of its own with that set's target attribute, and the entry points below call the
// copy of the set chosen at run time (ActiveIsa). On x86-64: AVX-512 (x86-64-v4: AVX-512 F, BW,
// CD, DQ, VL), AVX2 + FMA (x86-64-v3) and the baseline; elsewhere the baseline only.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FANOUT_KERNEL_X86 1
#else
#define FANOUT_KERNEL_X86 0
#endif

namespace fanout::kernels {

namespace baseline {
#define FANOUT_KERNEL
#include "kernels/kernels_impl.inc"
#undef FANOUT_KERNEL
}  // namespace baseline

#if FANOUT_KERNEL_X86
// The sets are named by their instructions, not as target("arch=x86-64-v3"): a function built for
// another arch cannot inline the default-built helpers it calls (std::fill, std::max, lambdas),
// which left dropout's inner loop a call per element, slower than the baseline's.
#define FANOUT_X86_64_V3 "avx2,fma,bmi,bmi2,f16c,lzcnt,movbe,popcnt,sse4.2,xsave"
namespace avx2 {
#define FANOUT_KERNEL __attribute__((target(FANOUT_X86_64_V3)))
#include "kernels/kernels_impl.inc"
#undef FANOUT_KERNEL
}  // namespace avx2

namespace avx512 {
#define FANOUT_KERNEL \
  __attribute__((target(FANOUT_X86_64_V3 ",avx512f,avx512bw,avx512cd,avx512dq,avx512vl")))
#include "kernels/kernels_impl.inc"
#undef FANOUT_KERNEL
}  // namespace avx512
#endif

namespace {

struct Table {
  decltype(&baseline::SpmmForward) spmm_forward;
  decltype(&baseline::SpmmBackwardX) spmm_backward_x;
  decltype(&baseline::SpmmBackwardWeight) spmm_backward_weight;
  decltype(&baseline::EdgeSoftmaxForward) edge_softmax_forward;
  decltype(&baseline::EdgeSoftmaxBackward) edge_softmax_backward;
  decltype(&baseline::ScatterAddRows) scatter_add_rows;
  decltype(&baseline::DropoutForward) dropout_forward;
  decltype(&baseline::DropoutBackward) dropout_backward;
};

#define FANOUT_KERNEL_TABLE(ns)                                                                    \
  Table {                                                                                          \
    &ns::SpmmForward, &ns::SpmmBackwardX, &ns::SpmmBackwardWeight, &ns::EdgeSoftmaxForward,        \
        &ns::EdgeSoftmaxBackward, &ns::ScatterAddRows, &ns::DropoutForward, &ns::DropoutBackward \
  }

const Table& TableOf(Isa isa) {
  static const Table kBaseline = FANOUT_KERNEL_TABLE(baseline);
#if FANOUT_KERNEL_X86
  static const Table kAvx2 = FANOUT_KERNEL_TABLE(avx2);
  static const Table kAvx512 = FANOUT_KERNEL_TABLE(avx512);
  if (isa == Isa::kAvx512) return kAvx512;
  if (isa == Isa::kAvx2) return kAvx2;
#endif
  return kBaseline;
}

Isa BestIsa() {
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2}) {
    if (IsaSupported(isa)) return isa;
  }
  return Isa::kBaseline;
}

// kUnset until the first kernel call or SetIsa.
constexpr int kUnset = -1;
std::atomic<int> g_isa{kUnset};

Isa Choose() {
  const char* env = std::getenv("FANOUT_KERNEL_ISA");
  if (env != nullptr && *env != '\0') {
    absl::StatusOr<Isa> asked = IsaFromEnvironment();
    if (asked.ok()) return *asked;
    // fanout-train refuses such a setting at start (IsaFromEnvironment); a library user gets the
    // best set and this line.
    std::fprintf(stderr, "fanout: %s; using %s\n", std::string(asked.status().message()).c_str(),
                 IsaName(BestIsa()));
  }
  return BestIsa();
}

inline const Table& Active() { return TableOf(ActiveIsa()); }

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kBaseline:
      break;
  }
  return "baseline";
}

bool IsaSupported(Isa isa) {
  switch (isa) {
    case Isa::kBaseline:
      return true;
#if FANOUT_KERNEL_X86
    case Isa::kAvx2:
      return __builtin_cpu_supports("x86-64-v3");
    case Isa::kAvx512:
      return __builtin_cpu_supports("x86-64-v4");
#endif
    default:
      return false;
  }
}

std::vector<Isa> SupportedIsas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (IsaSupported(isa)) out.push_back(isa);
  }
  return out;
}

absl::StatusOr<Isa> IsaFromEnvironment() {
  const char* env = std::getenv("FANOUT_KERNEL_ISA");
  if (env == nullptr || *env == '\0') return BestIsa();
  const std::string name = env;
  std::string has;  // (no fanout_base here: this file also goes into libfanout_torch_ops.so)
  for (const std::string& n : SupportedIsaNames()) has += (has.empty() ? "" : ", ") + n;
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (name != IsaName(isa)) continue;
    if (!IsaSupported(isa)) {
      return absl::InvalidArgumentError("FANOUT_KERNEL_ISA=" + name + ": this CPU lacks " + name + " (it has: " + has +
                                        ")");
    }
    return isa;
  }
  return absl::InvalidArgumentError("FANOUT_KERNEL_ISA=" + name + ": expected baseline, avx2 or avx512 (this CPU has: " +
                                    has + ")");
}

std::vector<std::string> SupportedIsaNames() {
  std::vector<std::string> out;
  for (Isa isa : SupportedIsas()) out.push_back(IsaName(isa));
  return out;
}

Isa ActiveIsa() {
  int isa = g_isa.load(std::memory_order_acquire);
  if (isa == kUnset) {
    int expected = kUnset;
    g_isa.compare_exchange_strong(expected, static_cast<int>(Choose()), std::memory_order_acq_rel);
    isa = g_isa.load(std::memory_order_acquire);
  }
  return static_cast<Isa>(isa);
}

bool SetIsa(Isa isa) {
  if (!IsaSupported(isa)) return false;
  g_isa.store(static_cast<int>(isa), std::memory_order_release);
  return true;
}

void SpmmForward(const Spmm& op, const float* x, float* out, int64_t dst_begin, int64_t dst_end) {
  Active().spmm_forward(op, x, out, dst_begin, dst_end);
}
void SpmmBackwardX(const Spmm& op, const float* grad_out, float* grad_x, int64_t col_begin, int64_t col_end) {
  Active().spmm_backward_x(op, grad_out, grad_x, col_begin, col_end);
}
void SpmmBackwardWeight(const Spmm& op, const float* x, const float* grad_out, float* grad_w, int64_t dst_begin,
                        int64_t dst_end) {
  Active().spmm_backward_weight(op, x, grad_out, grad_w, dst_begin, dst_end);
}
void EdgeSoftmaxForward(const EdgeSoftmax& op, const float* el, const float* er, float* attention, int64_t dst_begin,
                        int64_t dst_end) {
  Active().edge_softmax_forward(op, el, er, attention, dst_begin, dst_end);
}
void EdgeSoftmaxBackward(const EdgeSoftmax& op, const float* el, const float* er, const float* attention,
                         const float* grad_attention, float* grad_edge, float* grad_er, int64_t dst_begin,
                         int64_t dst_end) {
  Active().edge_softmax_backward(op, el, er, attention, grad_attention, grad_edge, grad_er, dst_begin, dst_end);
}
void ScatterAddRows(const int64_t* indices, int64_t n, int64_t width, const float* rows, float* out) {
  Active().scatter_add_rows(indices, n, width, rows, out);
}
void DropoutForward(const Dropout& op, const float* x, float* out, int64_t begin, int64_t end) {
  Active().dropout_forward(op, x, out, begin, end);
}
void DropoutBackward(const Dropout& op, const float* out, const float* grad_out, float* grad_x, int64_t begin,
                     int64_t end) {
  Active().dropout_backward(op, out, grad_out, grad_x, begin, end);
}

}  // namespace fanout::kernels

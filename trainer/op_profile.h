// An operator-level profile of a few training steps (fanout-train --profile-steps N): which
// LibTorch operators and which of fanout's own kernels and phases the steps' time went to, with
// the matrix products grouped by shape and their achieved GFLOP/s, each row also by its caller
// (the enclosing event: the autograd node for the backward pass's operators).
//
// Built on LibTorch's legacy CPU profiler (RecordFunction events: every ATen operator, every
// autograd node, and the RECORD_USER_SCOPE regions fanout marks: its fused kernels, the
// embedding lookups and updates, the gradient all-reduce). Events are aggregated per thread by
// nesting: an operator's self time is its time minus that of the operators it called, so the
// self times add up to the profiled time without counting a nested call twice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fanout::trainer {

struct OpTime {
  std::string name;    // the operator or region ("aten::addmm", "fanout::aggregate", ...)
  std::string caller;  // the event it ran in (an autograd node in the backward pass), or empty
  std::string shape;  // matrix products: "K x N" of the weight side; else empty
  int64_t calls = 0;
  double self_ms = 0;   // time in this operator itself, not in operators it called
  double total_ms = 0;  // time including the operators it called
  double flops = 0;     // matrix products: 2 * m * k * n summed over the calls; else 0
};

// The aggregated events of one profiled span, most self time first.
struct OpProfile {
  std::vector<OpTime> ops;
  double wall_ms = 0;  // wall time of the span on the profiling thread
  int64_t steps = 0;

  // A table: operator, shape, calls, self ms per step, share of the span, GFLOP/s for products;
  // the `top` rows with the most self time, then one line for the rest.
  std::string Format(size_t top = 25) const;
  // {"event": "profile", ...}: the `top` rows, and every matrix product's row.
  nlohmann::json ToJson(size_t top = 40) const;
};

// Records every RecordFunction event of the calling thread (and of the threads LibTorch hands its
// work to) between Start and Stop. One at a time per process.
class OpProfiler {
 public:
  OpProfiler() = default;
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  void Start();
  bool running() const { return running_; }
  // Stops recording and aggregates; `steps` is what the span covered (for per-step figures).
  OpProfile Stop(int64_t steps);

 private:
  bool running_ = false;
  double start_s_ = 0;
};

// The FLOPs of a matrix product from its recorded input shapes (aten::mm, addmm, bmm, baddbmm,
// linear, matmul with 2-d operands), and the "K x N" shape it is grouped by; 0 and "" for any
// other operator or shapes it does not understand.
double ProductFlops(const std::string& name, const std::vector<std::vector<int64_t>>& shapes, std::string* key);

}  // namespace fanout::trainer

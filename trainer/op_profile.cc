#include "trainer/op_profile.h"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

namespace fanout::trainer {
namespace {

namespace prof = torch::autograd::profiler;

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Dimensions above this vary with the batch (rows of a layer's nodes); smaller ones are the
// model's widths. A product's group shows the former as "N", so that one product of every step
// lands in one row whatever the batch's size.
constexpr int64_t kBatchDim = 1024;

std::string Dim(int64_t d) { return d > kBatchDim ? std::string("N") : std::to_string(d); }

// Shortens autograd's node names: "torch::autograd::CppNode<fanout::...::AggregateFunction>"
// and "AddmmBackward0" are kept recognisable, namespaces dropped.
std::string ShortName(std::string name) {
  for (const char* prefix :
       {"autograd::engine::evaluate_function: ", "torch::autograd::CppNode<", "torch::autograd::"}) {
    const std::string p = prefix;
    if (name.rfind(p, 0) == 0) {
      name = name.substr(p.size());
      if (!name.empty() && name.back() == '>') name.pop_back();
      const size_t colon = name.rfind("::");
      if (colon != std::string::npos) name = name.substr(colon + 2);
      break;
    }
  }
  return name;
}

}  // namespace

double ProductFlops(const std::string& name, const std::vector<std::vector<int64_t>>& shapes, std::string* key) {
  key->clear();
  // The two matrix operands' positions among the inputs.
  size_t a = 0, b = 1;
  bool batched = false;
  if (name == "aten::mm") {
  } else if (name == "aten::addmm") {
    a = 1, b = 2;
  } else if (name == "aten::bmm") {
    batched = true;
  } else if (name == "aten::baddbmm") {
    a = 1, b = 2, batched = true;
  } else {
    return 0;
  }
  if (shapes.size() <= b) return 0;
  const std::vector<int64_t>&x = shapes[a], &y = shapes[b];
  const size_t rank = batched ? 3 : 2;
  if (x.size() != rank || y.size() != rank) return 0;
  const int64_t batch = batched ? x[0] : 1;
  const int64_t m = x[rank - 2], k = x[rank - 1], n = y[rank - 1];
  *key = (batched ? std::to_string(batch) + " x " : std::string()) + "[" + Dim(m) + " x " + Dim(k) + "] . [" +
         Dim(k) + " x " + Dim(n) + "]";
  return 2.0 * static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(k) *
         static_cast<double>(n);
}

OpProfiler::~OpProfiler() {
  if (running_) prof::disableProfilerLegacy();
}

void OpProfiler::Start() {
  if (running_) return;
  prof::enableProfilerLegacy(
      torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU, /*report_input_shapes=*/true));
  running_ = true;
  start_s_ = NowSeconds();
}

OpProfile OpProfiler::Stop(int64_t steps) {
  OpProfile p;
  p.steps = steps;
  if (!running_) return p;
  p.wall_ms = (NowSeconds() - start_s_) * 1e3;
  prof::thread_event_lists lists = prof::disableProfilerLegacy();
  running_ = false;
  std::map<std::pair<std::string, std::string>, OpTime> by_key;
  for (const std::vector<prof::LegacyEvent>& events : lists) {
    struct Open {
      const prof::LegacyEvent* push;
      double children_us = 0;
    };
    std::vector<Open> stack;
    for (const prof::LegacyEvent& e : events) {
      if (e.kind() == prof::EventKind::PushRange) {
        stack.push_back({&e});
        continue;
      }
      if (e.kind() != prof::EventKind::PopRange) continue;
      // The matching push is the innermost open one with this handle (a mismatch would mean a
      // range left open: close the ranges above it too).
      auto it = std::find_if(stack.rbegin(), stack.rend(), [&](const Open& o) { return o.push->handle() == e.handle(); });
      if (it == stack.rend()) continue;
      const size_t at = static_cast<size_t>(stack.rend() - it) - 1;
      const Open open = stack[at];
      stack.resize(at);
      const double us = open.push->cpuElapsedUs(e);
      if (!stack.empty()) stack.back().children_us += us;
      std::string key;
      const std::string name = open.push->name();
      const double flops = ProductFlops(name, open.push->shapes(), &key);
      // Who called it: the enclosing event (an autograd node for the backward pass's operators).
      const std::string caller = stack.empty() ? std::string() : ShortName(stack.back().push->name());
      OpTime& t = by_key[{name + '\n' + caller, key}];
      if (t.calls == 0) {
        t.name = ShortName(name);
        t.caller = caller;
        t.shape = key;
      }
      ++t.calls;
      t.total_ms += us / 1e3;
      t.self_ms += std::max(0.0, us - open.children_us) / 1e3;
      t.flops += flops;
    }
  }
  for (auto& [k, t] : by_key) p.ops.push_back(std::move(t));
  std::sort(p.ops.begin(), p.ops.end(), [](const OpTime& a, const OpTime& b) {
    return std::tie(b.self_ms, a.name, a.shape) < std::tie(a.self_ms, b.name, b.shape);
  });
  return p;
}

std::string OpProfile::Format(size_t top) const {
  const double per = 1.0 / static_cast<double>(std::max<int64_t>(1, steps));
  double recorded = 0;
  for (const OpTime& t : ops) recorded += t.self_ms;
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line),
                "operator profile of %lld steps: %.1f ms per step of wall time, %.1f ms of it in recorded "
                "operators (self times; the rest is Python-free glue: batch handover, metrics)\n",
                static_cast<long long>(steps), wall_ms * per, recorded * per);
  out += line;
  std::snprintf(line, sizeof(line), "  %-60s %-28s %7s %9s %6s %9s %8s\n", "operator (< its caller)", "product shape",
                "calls", "ms/step", "share", "total ms", "GFLOP/s");
  out += line;
  double rest = 0;
  int64_t rest_calls = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpTime& t = ops[i];
    if (i >= top) {
      rest += t.self_ms;
      rest_calls += t.calls;
      continue;
    }
    char rate[16] = "";
    if (t.flops > 0 && t.self_ms > 0) std::snprintf(rate, sizeof(rate), "%.1f", t.flops / (t.self_ms * 1e-3) / 1e9);
    const std::string label = t.caller.empty() ? t.name : t.name + " < " + t.caller;
    std::snprintf(line, sizeof(line), "  %-60.60s %-28.28s %7lld %9.2f %5.1f%% %9.1f %8s\n", label.c_str(),
                  t.shape.c_str(), static_cast<long long>(t.calls), t.self_ms * per,
                  100 * t.self_ms / std::max(1e-9, wall_ms), t.total_ms, rate);
    out += line;
  }
  if (rest_calls > 0) {
    std::snprintf(line, sizeof(line), "  %-60s %-28s %7lld %9.2f %5.1f%%\n", "(the other operators)", "",
                  static_cast<long long>(rest_calls), rest * per, 100 * rest / std::max(1e-9, wall_ms));
    out += line;
  }
  return out;
}

nlohmann::json OpProfile::ToJson(size_t top) const {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpTime& t = ops[i];
    if (i >= top && t.flops == 0) continue;  // every matrix product is kept
    nlohmann::json r = {{"op", t.name}, {"calls", t.calls}, {"self_ms", t.self_ms}, {"total_ms", t.total_ms}};
    if (!t.caller.empty()) r["caller"] = t.caller;
    if (!t.shape.empty()) r["shape"] = t.shape;
    if (t.flops > 0) r["gflop"] = t.flops / 1e9;
    rows.push_back(std::move(r));
  }
  return {{"event", "profile"}, {"steps", steps}, {"wall_ms", wall_ms}, {"ops", std::move(rows)}};
}

}  // namespace fanout::trainer

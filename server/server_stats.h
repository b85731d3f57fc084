// Per-method request statistics of a graph server: counts, bytes, latency percentiles.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace fanout::server {

// Thread-safe.
class ServerStats {
 public:
  struct Snapshot {
    std::string method;
    int64_t requests = 0, errors = 0, bytes_in = 0, bytes_out = 0;
    double p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
  };
  ServerStats() : start_(std::chrono::steady_clock::now()) {}
  void Record(const std::string& method, bool ok, int64_t bytes_in, int64_t bytes_out, double micros);
  std::vector<Snapshot> Read() const;
  double uptime_seconds() const;

 private:
  // Log-scale latency histogram: bucket b holds latencies in [2^(b/4), 2^((b+1)/4)) us.
  static constexpr int kBuckets = 160;
  struct Method {
    int64_t requests = 0, errors = 0, bytes_in = 0, bytes_out = 0;
    double max_us = 0;
    int64_t buckets[kBuckets] = {};
  };
  static double Percentile(const Method& m, double q);
  mutable absl::Mutex mu_;
  std::map<std::string, Method> methods_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point start_;
};

}  // namespace fanout::server

#include "server/server_stats.h"

#include <algorithm>
#include <cmath>

namespace fanout::server {

void ServerStats::Record(const std::string& method, bool ok, int64_t bytes_in, int64_t bytes_out,
                         double micros) {
  int b = micros <= 1 ? 0 : std::min(kBuckets - 1, static_cast<int>(std::log2(micros) * 4));
  absl::MutexLock lock(&mu_);
  Method& m = methods_[method];
  ++m.requests;
  m.errors += ok ? 0 : 1;
  m.bytes_in += bytes_in;
  m.bytes_out += bytes_out;
  m.max_us = std::max(m.max_us, micros);
  ++m.buckets[b];
}

double ServerStats::Percentile(const Method& m, double q) {
  int64_t target = static_cast<int64_t>(std::ceil(q * m.requests));
  int64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += m.buckets[b];
    if (seen >= target && seen > 0) return std::min(m.max_us, std::exp2((b + 1) / 4.0));  // bucket top
  }
  return m.max_us;
}

std::vector<ServerStats::Snapshot> ServerStats::Read() const {
  absl::MutexLock lock(&mu_);
  std::vector<Snapshot> out;
  for (const auto& [name, m] : methods_) {
    out.push_back({name, m.requests, m.errors, m.bytes_in, m.bytes_out, Percentile(m, 0.5),
                   Percentile(m, 0.9), Percentile(m, 0.99), m.max_us});
  }
  return out;
}

double ServerStats::uptime_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

}  // namespace fanout::server

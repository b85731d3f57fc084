// Rate-limited progress lines on stderr ("partition: relabel 12.0M/61.9M edges"), printed only
// once a phase has run for `quiet_seconds`, so quick runs stay silent. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace fanout::core {

class Progress {
 public:
  Progress(std::string tool, std::string what, int64_t total, double quiet_seconds = 3.0)
      : tool_(std::move(tool)), what_(std::move(what)), total_(total), quiet_(quiet_seconds),
        start_(Clock::now()), last_(start_) {}

  // Cheap enough to call per item: checks the clock every 64K calls.
  void Update(int64_t done) {
    if ((++calls_ & 0xffff) != 0) return;
    Report(done);
  }
  void Report(int64_t done) {
    auto now = Clock::now();
    double since_start = std::chrono::duration<double>(now - start_).count();
    if (since_start < quiet_ || std::chrono::duration<double>(now - last_).count() < 2.0) return;
    last_ = now;
    if (total_ > 0) {
      std::fprintf(stderr, "%s: %s %.1fM/%.1fM (%.0f%%, %.0fs)\n", tool_.c_str(), what_.c_str(),
                   done / 1e6, total_ / 1e6, 100.0 * done / total_, since_start);
    } else {
      std::fprintf(stderr, "%s: %s %.1fM (%.0fs)\n", tool_.c_str(), what_.c_str(), done / 1e6,
                   since_start);
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string tool_, what_;
  int64_t total_;
  double quiet_;
  Clock::time_point start_, last_;
  uint64_t calls_ = 0;
};

}  // namespace fanout::core

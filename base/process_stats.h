// Wall-clock phases and peak memory of the current process, for tool summaries.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fanout::base {

// Peak resident set size of this process so far, in bytes (getrusage ru_maxrss).
int64_t PeakRssBytes();
// Current resident set size, in bytes (/proc/self/statm).
int64_t CurrentRssBytes();

// Memory this process could use at most: the machine's physical memory, or the cgroup's
// memory.max when that is lower (a container); -1 when unknown.
int64_t UsableMemoryBytes();

// This process's memory cgroup, from /proc/self/cgroup, as folders under /sys/fs/cgroup: v1's
// (the "memory" controller's line; "" when there is none) and v2's (the "0::" line; "" when
// there is none). A hybrid machine has both.
struct MemoryCgroupDirs {
  std::string v1, v2;
};
MemoryCgroupDirs OwnMemoryCgroup();
// The "oom_kill N" entry of a kernel counter file (a memory cgroup's memory.oom_control or
// memory.events[.local], /proc/vmstat): how many processes the OOM killer ended there; nullopt
// when the file cannot be read or has none (kernels before 4.13).
std::optional<int64_t> OomKillCountIn(const std::string& path);

// A tool's main: runs `body(argc, argv)`; std::bad_alloc unwinds (a staging folder is removed)
// and becomes "<tool>: error: out of memory ..." on stderr and exit status 1, instead of an abort.
int MainUnwindingOutOfMemory(const char* tool, int (*body)(int, char**), int argc, char** argv);

// Raises this process's open-file soft limit to its hard limit (a listener at the usual 1024
// runs out under a burst of connections); returns the new soft limit, or -1 when unknown.
int64_t RaiseOpenFileLimit();

// Records named phases: Start("read") ... Start("metis") ... Finish(). Not thread-safe.
class PhaseTimer {
 public:
  struct Phase {
    std::string name;
    double seconds;
  };
  void Start(std::string name);
  void Finish();
  const std::vector<Phase>& phases() const { return phases_; }
  double total_seconds() const;

 private:
  using Clock = std::chrono::steady_clock;
  std::vector<Phase> phases_;
  std::string current_;
  Clock::time_point started_;
  bool running_ = false;
};

}  // namespace fanout::base

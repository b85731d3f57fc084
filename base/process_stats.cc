#include "base/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <new>

namespace fanout::base {

MemoryCgroupDirs OwnMemoryCgroup() {
  MemoryCgroupDirs dirs;
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {  // "ID:CONTROLLERS:PATH"
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",", path = line.substr(b + 1);
    if (controllers.find(",memory,") != std::string::npos) dirs.v1 = "/sys/fs/cgroup/memory" + path;
    if (controllers == ",," && line.compare(0, a, "0") == 0) dirs.v2 = "/sys/fs/cgroup" + path;
  }
  return dirs;
}

std::optional<int64_t> OomKillCountIn(const std::string& path) {
  std::ifstream in(path);
  std::string name;
  int64_t value = 0;
  while (in >> name >> value) {
    if (name == "oom_kill") return value;
  }
  return std::nullopt;
}

int64_t UsableMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  int64_t bytes = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : -1;
  if (std::FILE* f = std::fopen("/sys/fs/cgroup/memory.max", "r")) {  // "max" when unlimited
    long long limit = 0;
    if (std::fscanf(f, "%lld", &limit) == 1 && limit > 0 && (bytes < 0 || limit < bytes)) bytes = limit;
    std::fclose(f);
  }
  return bytes;
}

int MainUnwindingOutOfMemory(const char* tool, int (*body)(int, char**), int argc, char** argv) {
  try {
    return body(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory at %.1f GiB resident; nothing was written\n", tool,
                 static_cast<double>(PeakRssBytes()) / (1ll << 30));
    return 1;
  }
}

int64_t RaiseOpenFileLimit() {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return -1;
  if (r.rlim_cur < r.rlim_max) {
    struct rlimit want = r;
    want.rlim_cur = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) r = want;
  }
  return r.rlim_cur == RLIM_INFINITY ? INT64_MAX : static_cast<int64_t>(r.rlim_cur);
}

int64_t PeakRssBytes() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

int64_t CurrentRssBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long size = 0, resident = 0;
  int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE) : 0;
}

void PhaseTimer::Start(std::string name) {
  Finish();
  current_ = std::move(name);
  started_ = Clock::now();
  running_ = true;
}

void PhaseTimer::Finish() {
  if (!running_) return;
  phases_.push_back({current_, std::chrono::duration<double>(Clock::now() - started_).count()});
  running_ = false;
}

double PhaseTimer::total_seconds() const {
  double t = 0;
  for (const auto& p : phases_) t += p.seconds;
  return t;
}

}  // namespace fanout::base

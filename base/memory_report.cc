#include "base/memory_report.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fanout::base {
namespace {

bool Contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// Which MemoryUse member a mapping of `path` counts in.
int64_t MemoryUse::*Holder(std::string_view path, std::string_view exe) {
  if (path.empty() || path.front() == '[') {
    return path == "[vdso]" || path == "[vvar]" || path == "[vsyscall]" ? &MemoryUse::code : &MemoryUse::heap;
  }
  if (Contains(path, "/memfd:") || path.rfind("/dev/shm/", 0) == 0) return &MemoryUse::shm;
  if (Contains(path, ".npy")) {
    if (Contains(path, "/graph/")) return &MemoryUse::topology;
    if (Contains(path, "/node_data/") || Contains(path, "/edge_data/")) return &MemoryUse::features;
  }
  if (path == exe || Contains(path, ".so")) return &MemoryUse::code;
  return &MemoryUse::other;
}

double Gb(int64_t bytes) { return static_cast<double>(bytes) / 1e9; }

// Every MemoryUse member, by its key in MemoryLine (in the line's order, after the role).
constexpr std::pair<const char*, int64_t MemoryUse::*> kFields[] = {
    {"peak_pss", &MemoryUse::pss}, {"peak_rss", &MemoryUse::rss}, {"topology", &MemoryUse::topology},
    {"features", &MemoryUse::features}, {"shm", &MemoryUse::shm}, {"heap", &MemoryUse::heap},
    {"code", &MemoryUse::code}, {"other", &MemoryUse::other}};
constexpr std::string_view kTag = "fanout-memory: role=";

}  // namespace

MemoryUse& MemoryUse::operator+=(const MemoryUse& o) {
  for (const auto& [key, member] : kFields) this->*member += o.*member;
  return *this;
}

std::string MemoryUse::ToString() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "PSS %.2f GB (topology %.2f, features %.2f, shared memory %.2f, heap %.2f, code %.2f, other %.2f), "
                "RSS %.2f GB",
                Gb(pss), Gb(topology), Gb(features), Gb(shm), Gb(heap), Gb(code), Gb(other), Gb(rss));
  return buf;
}

std::optional<MemoryUse> ReadMemoryUse(int pid) {
  const std::string dir = pid == 0 ? "/proc/self" : "/proc/" + std::to_string(pid);
  std::ifstream in(dir + "/smaps");
  if (!in) return std::nullopt;
  char exe_buf[4096];
  const ssize_t n = ::readlink((dir + "/exe").c_str(), exe_buf, sizeof(exe_buf) - 1);
  const std::string exe = n > 0 ? std::string(exe_buf, n) : std::string();
  MemoryUse u;
  int64_t MemoryUse::*holder = &MemoryUse::other;
  std::string line;
  bool any = false;
  while (std::getline(in, line)) {
    // A mapping's header: "start-end perms offset dev inode [path]"; its fields: "Name:  N kB".
    const size_t colon = line.find(':');
    const size_t space = line.find(' ');
    if (colon == std::string::npos || (space != std::string::npos && space < colon)) {
      std::istringstream h(line);
      std::string range, perms, offset, dev, inode, path;
      h >> range >> perms >> offset >> dev >> inode;
      std::getline(h, path);
      const size_t first = path.find_first_not_of(' ');
      path = first == std::string::npos ? std::string() : path.substr(first);
      holder = Holder(path, exe);
      any = true;
      continue;
    }
    const std::string_view name(line.data(), colon);
    if (name != "Rss" && name != "Pss") continue;
    const int64_t bytes = std::strtoll(line.c_str() + colon + 1, nullptr, 10) * 1024;
    if (name == "Rss") {
      u.rss += bytes;
    } else {
      u.pss += bytes;
      u.*holder += bytes;
    }
  }
  if (!any) return std::nullopt;
  return u;
}

std::vector<std::vector<int>> WithDescendants(const std::vector<std::vector<int>>& groups) {
  // (pid, parent) of every process now.
  std::vector<std::pair<int, int>> parent;
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end != '\0') continue;
      std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
      std::string text;
      if (!std::getline(stat, text)) continue;
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
      const size_t close = text.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(text.substr(close + 1));
      std::string state;
      int ppid = 0;
      if (rest >> state >> ppid) parent.push_back({static_cast<int>(pid), ppid});
    }
    ::closedir(d);
  }
  std::vector<std::vector<int>> out(groups);
  for (std::vector<int>& g : out) {
    for (size_t i = 0; i < g.size(); ++i) {  // breadth first; `g` grows as children are found
      for (const auto& [pid, ppid] : parent) {
        if (ppid == g[i] && std::find(g.begin(), g.end(), pid) == g.end()) g.push_back(pid);
      }
    }
  }
  return out;
}

MemoryUse ReadMemoryUse(const std::vector<int>& pids) {
  MemoryUse sum;
  for (int pid : pids) {
    std::optional<MemoryUse> u = ReadMemoryUse(pid);
    if (!u) continue;
    sum += *u;
  }
  return sum;
}

std::optional<int64_t> ReadResidentBytes(int pid) {
  std::ifstream in(pid == 0 ? std::string("/proc/self/statm") : "/proc/" + std::to_string(pid) + "/statm");
  int64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return std::nullopt;
  static const int64_t page = ::sysconf(_SC_PAGESIZE);
  return resident * page;
}

bool FullReadingPolicy::Due(int64_t rss, Clock::time_point now) const {
  if (!taken_) return true;
  if (now < earliest_) return false;
  const int64_t margin = std::max(options_.min_margin_bytes,
                                  static_cast<int64_t>(static_cast<double>(highest_rss_) * options_.margin));
  return rss > highest_rss_ + margin || now - last_ >= options_.refresh;
}

void FullReadingPolicy::Took(int64_t rss, Clock::duration cost, Clock::time_point now) {
  taken_ = true;
  highest_rss_ = std::max(highest_rss_, rss);
  last_ = now;
  // `cost` out of every cost / max_share: the rest of that span without a full reading.
  const double share = std::clamp(options_.max_share, 1e-6, 1.0);
  earliest_ = now + std::chrono::duration_cast<Clock::duration>(cost * (1.0 / share));
}

MemoryWatch::MemoryWatch(std::chrono::milliseconds period, FullReadingPolicy::Options policy) : policy_(policy) {
  Sample(/*force=*/true);
  thread_ = std::thread([this, period] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, period, [this] { return stop_; })) {
      lock.unlock();
      Sample(/*force=*/false);
      lock.lock();
    }
  });
}

MemoryWatch::~MemoryWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MemoryWatch::Sample(bool force) {
  std::lock_guard<std::mutex> sampling(sample_mu_);
  const FullReadingPolicy::Clock::time_point at = FullReadingPolicy::Clock::now();
  const std::optional<int64_t> rss = ReadResidentBytes();
  if (rss) {
    std::lock_guard<std::mutex> lock(mu_);
    peak_.rss = std::max(peak_.rss, *rss);
  }
  if (!force && (!rss || !policy_.Due(*rss, at))) return;
  std::optional<MemoryUse> now = ReadMemoryUse();
  if (!now) return;
  policy_.Took(rss.value_or(now->rss), FullReadingPolicy::Clock::now() - at, at);
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t peak_rss = std::max(peak_.rss, now->rss);
  if (now->pss > peak_.pss) peak_ = *now;
  peak_.rss = peak_rss;
}

MemoryUse MemoryWatch::Peak() {
  Sample(/*force=*/true);
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

void MemoryReportAtExit::Report() {
  if (reported_) return;
  reported_ = true;
  const std::string line = MemoryLine(role_, watch_.Peak()) + "\n";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

std::string MemoryLine(std::string_view role, const MemoryUse& peak) {
  std::string s(kTag);
  s += role;
  for (const auto& [key, member] : kFields) s += " " + std::string(key) + "=" + std::to_string(peak.*member);
  return s;
}

std::optional<MemoryRecord> ParseMemoryLine(std::string_view line) {
  const size_t at = line.find(kTag);
  if (at == std::string_view::npos) return std::nullopt;
  std::istringstream in(std::string(line.substr(at + kTag.size())));
  MemoryRecord r;
  if (!(in >> r.role)) return std::nullopt;
  for (const auto& [key, member] : kFields) {
    std::string word;
    if (!(in >> word)) return std::nullopt;
    const std::string want = std::string(key) + "=";
    if (word.rfind(want, 0) != 0) return std::nullopt;
    char* end = nullptr;
    const long long v = std::strtoll(word.c_str() + want.size(), &end, 10);
    if (end == word.c_str() + want.size() || *end != '\0' || v < 0) return std::nullopt;
    r.peak.*member = v;
  }
  return r;
}

}  // namespace fanout::base

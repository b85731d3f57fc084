#include "launcher/memory_summary.h"

#include <cstdio>

#include "base/strings.h"

namespace fanout::launcher {
namespace {
std::string Gb(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", static_cast<double>(bytes) / 1e9);
  return buf;
}
}  // namespace

void MemorySummary::Add(int machine, const std::string& ip, const base::MemoryRecord& r) {
  Machine& m = machines_[machine];
  m.ip = ip;
  m.sum += r.peak;
  auto& [count, pss] = m.roles[r.role];
  ++count;
  pss += r.peak.pss;
}

void MemorySummary::AddSample(int machine, const std::string& ip, const base::MemoryUse& together, int processes) {
  Machine& m = machines_[machine];
  m.ip = ip;
  if (together.pss > m.sampled.pss) {
    m.sampled = together;
    m.sampled_processes = processes;
  }
}

int64_t MemorySummary::PeakPss(int machine) const {
  auto it = machines_.find(machine);
  if (it == machines_.end()) return 0;
  return it->second.sampled.pss > 0 ? it->second.sampled.pss : it->second.sum.pss;
}

std::vector<std::string> MemorySummary::Lines() const {
  std::vector<std::string> out;
  for (const auto& [k, m] : machines_) {
    int processes = 0;
    std::string roles;
    for (const auto& [role, v] : m.roles) {
      processes += v.first;
      roles += base::StrCat(roles.empty() ? "" : ", ", v.first, " ", role, v.first == 1 ? "" : "s", ": ", Gb(v.second));
    }
    auto holders = [](const base::MemoryUse& s) {
      return base::StrCat("topology ", Gb(s.topology), ", features ", Gb(s.features), ", shared memory ", Gb(s.shm),
                          ", heap ", Gb(s.heap), ", code ", Gb(s.code), ", other ", Gb(s.other));
    };
    if (m.sampled.pss > 0) {
      out.push_back(base::StrCat("machine ", k, " (", m.ip, "): peak PSS ", Gb(m.sampled.pss), " GB of ",
                                 m.sampled_processes, m.sampled_processes == 1 ? " process" : " processes",
                                 " sampled together (", holders(m.sampled), ")",
                                 roles.empty() ? "" : base::StrCat("; their own peaks: ", roles, " (sum ", Gb(m.sum.pss), ")")));
    } else {
      out.push_back(base::StrCat("machine ", k, " (", m.ip, "): peak PSS ", Gb(m.sum.pss), " GB summed over ", processes,
                                 processes == 1 ? " process's" : " processes'", " own peaks (", roles, "); ",
                                 holders(m.sum)));
    }
  }
  return out;
}

}  // namespace fanout::launcher

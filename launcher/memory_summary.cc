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
  const base::MemoryUse& p = r.peak;
  for (auto member : {&base::MemoryUse::rss, &base::MemoryUse::pss, &base::MemoryUse::topology,
                      &base::MemoryUse::features, &base::MemoryUse::shm, &base::MemoryUse::heap,
                      &base::MemoryUse::code, &base::MemoryUse::other}) {
    m.sum.*member += p.*member;
  }
  auto& [count, pss] = m.roles[r.role];
  ++count;
  pss += p.pss;
}

int64_t MemorySummary::PeakPss(int machine) const {
  auto it = machines_.find(machine);
  return it == machines_.end() ? 0 : it->second.sum.pss;
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
    const base::MemoryUse& s = m.sum;
    out.push_back(base::StrCat("machine ", k, " (", m.ip, "): peak PSS ", Gb(s.pss), " GB summed over ", processes,
                               processes == 1 ? " process (" : " processes (", roles, "); topology ", Gb(s.topology),
                               ", features ", Gb(s.features), ", shared batches ", Gb(s.shm), ", heap ", Gb(s.heap),
                               ", code ", Gb(s.code), ", other ", Gb(s.other)));
  }
  return out;
}

}  // namespace fanout::launcher

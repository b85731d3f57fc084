// Each machine's memory at the job's end, from the MemoryLine (base/memory_report.h) every
// server, trainer and sampler process prints when it exits: the sum of their peak PSS, by role
// and by what holds it. A sum of each process's own peak is at or above the machine's true peak
// (the processes need not peak at once), so it errs on the safe side for sizing a machine.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/memory_report.h"

namespace fanout::launcher {

class MemorySummary {
 public:
  // A process of machine `machine` (at `ip`) reported `record`.
  void Add(int machine, const std::string& ip, const base::MemoryRecord& record);
  bool empty() const { return machines_.empty(); }
  // One line per machine, in machine order: "machine 0 (127.0.0.1): peak PSS 2.41 GB summed over
  // 4 processes (2 samplers: 0.32, 1 server: 0.61, 1 trainer: 1.48); topology 0.39, ...".
  std::vector<std::string> Lines() const;
  // The machine's summed peak PSS in bytes (0 when none reported).
  int64_t PeakPss(int machine) const;

 private:
  struct Machine {
    std::string ip;
    base::MemoryUse sum;
    std::map<std::string, std::pair<int, int64_t>> roles;  // role -> (processes, summed peak PSS)
  };
  std::map<int, Machine> machines_;
};

}  // namespace fanout::launcher

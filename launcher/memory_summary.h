// Each machine's memory at the job's end, two ways:
//   - sampled: the launcher reads the PSS of every process it started on this host, with their
//     descendants (samplers), at the same moment, every 2 s; the largest sum is the machine's
//     peak, by what holds it. Only for machines whose processes run here (not over ssh).
//   - reported: the MemoryLine (base/memory_report.h) every server, trainer and sampler prints
//     at exit, by role, from any machine. A sum of each process's own peak is at or above the
//     machine's true peak (the processes need not peak at once, and a page shared between two
//     counts half in each only while both map it), so it errs on the safe side.
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
  // The processes of machine `machine` together, now (`processes` of them).
  void AddSample(int machine, const std::string& ip, const base::MemoryUse& together, int processes);
  bool empty() const { return machines_.empty(); }
  // One line per machine, in machine order: "machine 0 (127.0.0.1): peak PSS 2.41 GB of 4
  // processes sampled together (topology 0.39, ...); their own peaks: 2 samplers: 0.32, 1 server:
  // 0.61, 1 trainer: 1.48 (sum 2.41)", or without a sample "machine 1 (10.0.0.2): peak PSS 2.41
  // GB summed over 4 processes' own peaks (2 samplers: 0.32, ...); topology 0.39, ...".
  std::vector<std::string> Lines() const;
  // The machine's peak PSS in bytes: sampled together when it was, else the sum of the reported
  // peaks; 0 when neither.
  int64_t PeakPss(int machine) const;

 private:
  struct Machine {
    std::string ip;
    base::MemoryUse sum;      // of the reported peaks
    base::MemoryUse sampled;  // the largest sample (by PSS)
    int sampled_processes = 0;
    std::map<std::string, std::pair<int, int64_t>> roles;  // role -> (processes, summed peak PSS)
  };
  std::map<int, Machine> machines_;
};

}  // namespace fanout::launcher

// What a process's memory is and what holds it, read from /proc/<pid>/smaps: resident (RSS) and
// proportional (PSS: a page shared by k processes counts 1/k in each, so the PSS of a machine's
// processes adds up to what they hold together) set sizes, the PSS split by what is mapped.
// Each long-running fanout process (server, sampler, trainer) samples its own while it runs
// (MemoryWatch) and prints its peak as one line at exit (MemoryLine), which fanout-launch reads
// to print each machine's total.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace fanout::base {

struct MemoryUse {
  int64_t rss = 0, pss = 0;
  // PSS by holder:
  int64_t topology = 0;  // mapped partition graph files (part*/graph/)
  int64_t features = 0;  // mapped node and edge fields (part*/node_data, part*/edge_data)
  int64_t shm = 0;       // shared memory (memfd, /dev/shm): batches in flight, the shared halo cache
  int64_t heap = 0;      // anonymous memory: allocations (model, buffers, caches) and stacks
  int64_t code = 0;      // the executable and its libraries
  int64_t other = 0;     // any other mapped file

  MemoryUse& operator+=(const MemoryUse& other);
  // "PSS 1.21 GB (topology 0.39, features 0.10, shared memory 0.02, heap 0.61, code 0.09,
  // other 0.00), RSS 1.52 GB"
  std::string ToString() const;
};

// The memory of process `pid` (0: this one) now; nullopt when /proc cannot be read (another
// system, or the process has gone).
std::optional<MemoryUse> ReadMemoryUse(int pid = 0);

// Each group of root processes with every process descending from them (found through one scan
// of /proc/*/stat), each once per group.
std::vector<std::vector<int>> WithDescendants(const std::vector<std::vector<int>>& groups);

// The memory of processes `pids` together: the sum of each one's (those that have gone count
// nothing). PSS adds up across processes; RSS counts shared pages once per process.
MemoryUse ReadMemoryUse(const std::vector<int>& pids);

// The resident bytes of process `pid` (0: this one) from /proc/<pid>/statm: counters the kernel
// keeps, read in microseconds, where ReadMemoryUse's smaps walks every page table entry (30-90 ms
// for a process with 1-2 GB resident on this project's 2-core machine). nullopt when it cannot
// be read.
std::optional<int64_t> ReadResidentBytes(int pid = 0);

// When a full reading (ReadMemoryUse: PSS and what holds it) is worth its cost, judged from the
// cheap one (RSS) taken every period. PSS never exceeds RSS, and the PSS of a group of processes
// only grows when one of them gets pages it did not have (its RSS grows) or when a process
// outside the group lets go of pages it shared with them. So a full reading is due when the RSS
// passes the highest RSS any full reading saw by a margin, and otherwise every `refresh` (for
// what RSS does not show); the first reading is always due. Whatever is due waits until full
// readings have used at most `max_share` of one core, so that watching memory costs next to
// nothing: reading every 2 s took about 6 % of a 2-core machine running a 2-machine job
// (perf: fanout-launch 3 %, at 0.27 s a reading of 6 processes; the samplers' own readings
// about 3 %; docs/benchmarks.md, setups S and Y).
class FullReadingPolicy {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    double margin = 0.01;                  // of the highest RSS read in full
    int64_t min_margin_bytes = 8 << 20;
    std::chrono::milliseconds refresh{30'000};
    double max_share = 0.05;
  };
  FullReadingPolicy() : FullReadingPolicy(Options()) {}
  explicit FullReadingPolicy(Options options) : options_(options) {}

  bool Due(int64_t rss, Clock::time_point now) const;
  // A full reading was taken at `now` with the RSS `rss` (the cheap reading's), and took `cost`.
  void Took(int64_t rss, Clock::duration cost, Clock::time_point now);

 private:
  Options options_;
  bool taken_ = false;
  int64_t highest_rss_ = 0;
  Clock::time_point last_{};
  Clock::time_point earliest_{};  // the cost rule's next full reading
};

// Reads this process's RSS every `period` on a thread of its own, takes a full reading when
// FullReadingPolicy says one is due, and keeps the full reading of the largest PSS (and the
// largest RSS). Stops on destruction.
class MemoryWatch {
 public:
  explicit MemoryWatch(std::chrono::milliseconds period = std::chrono::seconds(1),
                       FullReadingPolicy::Options policy = {});
  ~MemoryWatch();
  MemoryWatch(const MemoryWatch&) = delete;
  MemoryWatch& operator=(const MemoryWatch&) = delete;

  // The peak so far, with a sample taken now.
  MemoryUse Peak();

 private:
  void Sample(bool force);

  FullReadingPolicy policy_;  // used by Sample alone, under sample_mu_
  std::mutex sample_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  MemoryUse peak_;
  std::thread thread_;
};

// Watches this process's memory from construction and, on destruction, prints its MemoryLine
// with `role` to stderr: a main holds one for its whole run, so that every way out reports.
class MemoryReportAtExit {
 public:
  explicit MemoryReportAtExit(std::string role) : role_(std::move(role)) {}
  ~MemoryReportAtExit() { Report(); }
  MemoryUse Peak() { return watch_.Peak(); }
  // Prints the line now (once): before a teardown that may be cut short (a launcher's SIGKILL
  // after its grace period), so that the line is not lost with it.
  void Report();

 private:
  std::string role_;
  bool reported_ = false;
  MemoryWatch watch_;
};

// The line a process prints (to stderr) at exit with its peak, for people and for fanout-launch:
// "fanout-memory: role=ROLE peak_pss=B peak_rss=B topology=B features=B shm=B heap=B code=B
// other=B" (bytes).
std::string MemoryLine(std::string_view role, const MemoryUse& peak);
// Parses a MemoryLine found anywhere in `line` (after a prefix); nullopt when it is not one.
struct MemoryRecord {
  std::string role;
  MemoryUse peak;
};
std::optional<MemoryRecord> ParseMemoryLine(std::string_view line);

}  // namespace fanout::base

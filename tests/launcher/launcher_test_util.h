// Helpers shared by the launcher's tests: processes that may not be our children, read with
// deadlines rather than sleeps.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace fanout::launcher::testing {

// True while `pid` is a process that has not exited (a zombie counts as gone: it runs nothing,
// and an orphan's zombie may wait for a reaper that never comes).
bool IsRunning(pid_t pid);

// Waits up to `timeout` for `pid` to be gone (on a pidfd: notified, not polled). True if gone.
bool WaitGone(pid_t pid, std::chrono::milliseconds timeout);

// Reads `fd` until `needle` has appeared in *text (everything read is appended), end of file or
// `timeout`. True when found.
bool ReadUntil(int fd, const std::string& needle, std::chrono::milliseconds timeout,
               std::string* text);

// One read of what `fd` has, waiting until `deadline`: the bytes appended to *text, 0 at end of
// file, -1 on timeout.
ssize_t ReadMore(int fd, std::chrono::steady_clock::time_point deadline, std::string* text);

// Reads `fd` to end of file or `timeout`; true at end of file.
bool ReadToEnd(int fd, std::chrono::milliseconds timeout, std::string* text);

// The integers N in every "<word> N" of `text` (e.g. word "pid" in "started m0 server 0 pid 42").
std::vector<pid_t> NumbersAfter(const std::string& text, const std::string& word);

std::string ReadFile(const std::string& path);

// Each pattern's first match in `uninterrupted` and in `resumed`, equal figure for figure (both
// must match): what a resumed or restarted run is checked against.
void ExpectSameMatches(const std::string& uninterrupted, const std::string& resumed,
                       const std::vector<std::regex>& patterns);
// A per-process log file of the launcher without its "<timestamp> <level> " stamps; a line that
// lacks one fails the test.
std::string ReadLog(const std::string& path);

// A program under test (args[0] is its path) with stdin from /dev/null, stdout and stderr in one
// pipe we read with deadlines, `extra_env` added to this process's environment, started in `cwd`
// ("" = here). SIGKILLed and reaped if a test gives up on it. Used by the launcher's and the
// trainer's integration tests.
class ChildRun {
 public:
  ChildRun(const std::vector<std::string>& args, const std::string& cwd = "",
           const std::vector<std::string>& extra_env = {});
  ~ChildRun();
  ChildRun(const ChildRun&) = delete;
  ChildRun& operator=(const ChildRun&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& output() const { return out_; }
  // Reads output until `needle` appears `count` times; false on timeout or end of output.
  bool WaitFor(const std::string& needle, int count = 1,
               std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // Reads to end of output and waits for the exit: the exit code (128 + N after signal N), or
  // nullopt on timeout.
  std::optional<int> Finish(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // How many times `needle` occurs in the output read so far.
  int Count(const std::string& needle) const;

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string out_;
  std::optional<int> exit_code_;
};

}  // namespace fanout::launcher::testing
